# expect: crashed (exit code 5) — floods its log with 200 MB, then dies: the reason must stay short
# task: kernelbench/relu_mlp.py
import os
import sys

line = "x" * 4096 + "\n"
for _ in range(50_000):
    sys.stderr.write(line)
sys.stderr.flush()
os._exit(5)


class ModelNew:  # never reached: the import fails first
    pass
