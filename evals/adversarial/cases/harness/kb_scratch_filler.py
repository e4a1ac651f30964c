# expect: compile_error (No space left on device) — writes 3 GiB into its scratch directory at import, in files each under the per-file limit
# task: kernelbench/relu_mlp.py
import os

chunk = b"x" * (64 << 20)
for part in range(6):  # 512 MiB each
    with open(os.path.join(os.getcwd(), f"ballast{part}"), "wb") as f:
        for _ in range(8):
            f.write(chunk)


class ModelNew:  # never reached: the import fails first
    pass
