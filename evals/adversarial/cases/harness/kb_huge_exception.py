# expect: compile_error (does not compile) — fails at import with a 24 MiB message, to fill the report, the log and the next prompt
# task: kernelbench/relu_mlp.py
raise RuntimeError("A" * (24 << 20))


class ModelNew:  # never reached: the import fails first
    pass
