# expect: compile_error (No such file or directory) — reads a host file at import and raises with its text, for the report to carry
# task: kernelbench/relu_mlp.py
for path in ("/etc/hostname", "/etc/passwd"):
    with open(path) as f:
        raise RuntimeError(f.read())


class ModelNew:  # never reached: the import fails first
    pass
