# expect: compile_error (No space left on device) — writes 3 GiB into its scratch directory at import
# task: kernelbench/relu_mlp.py
import os

with open(os.path.join(os.getcwd(), "ballast"), "wb") as f:
    chunk = b"x" * (64 << 20)
    for _ in range(48):
        f.write(chunk)


class ModelNew:  # never reached: the import fails first
    pass
