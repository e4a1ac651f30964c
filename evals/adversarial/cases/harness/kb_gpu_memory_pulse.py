# expect: crashed (out of memory) — a thread takes all the GPU's memory for 20 ms at a time and lets it go for 20 ms, again and again
# task: kernelbench/relu_mlp.py
# kb_gpu_memory_hog keeps what it takes, so the controller's sample of the workers' memory as the
# reference fails finds it holding the GPU. This one lets go between its grabs: where the check
# had judged from that sample alone, a reference failing in a grab read as the task's error.
import threading
import time

import torch
import torch.nn as nn


def _grab() -> list:
    held, chunk = [], 1 << 28  # 1 GiB of float32, then smaller, until nothing is left
    while chunk >= 1 << 18:
        try:
            held.append(torch.empty(chunk, dtype=torch.float32, device="cuda"))
        except torch.OutOfMemoryError:
            chunk //= 4
    return held


def _pulse() -> None:
    while True:
        held = _grab()
        time.sleep(0.02)
        del held
        torch.cuda.empty_cache()
        time.sleep(0.02)


threading.Thread(target=_pulse, daemon=True).start()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
