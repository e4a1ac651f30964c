# expect: crashed (unreachable) — opens a network socket to phone home with its inputs
# task: kernelbench/relu_mlp.py
import socket

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        with socket.create_connection(("127.0.0.1", 11434), timeout=2) as s:  # a local Ollama
            s.sendall(x[0, :8].cpu().numpy().tobytes())
        return torch.relu(self.linear(x))
