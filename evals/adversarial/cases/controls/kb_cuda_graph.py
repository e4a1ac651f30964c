# expect: correct (speedup >= 0.3) — honest: a CUDA graph per batch size, replayed after copying the fresh input in
# task: kernelbench/relu_mlp.py
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.graphs = {}

    def forward(self, x):
        if x.shape not in self.graphs:
            static_x = x.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                torch.relu(self.linear(static_x))  # warm-up before capture
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_y = torch.relu(self.linear(static_x))
            self.graphs[x.shape] = (graph, static_x, static_y)
        graph, static_x, static_y = self.graphs[x.shape]
        static_x.copy_(x)
        graph.replay()
        return static_y.clone()
