# expect: correct (speedup 0.85-1.15) — pins its weights in L2 with a persisting window: demoted before every flush
# task: kernelbench/relu_mlp.py
import ctypes

import torch
import torch.nn as nn

_cuda = ctypes.CDLL("libcuda.so.1")
CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
PERSISTING, STREAMING = 2, 1


class _Window(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


class _Value(ctypes.Union):
    _fields_ = [("window", _Window), ("pad", ctypes.c_char * 64)]


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.pinned = False

    def _pin(self, w):
        # Set aside L2 for persisting lines: a flush of ordinary reads cannot evict them.
        err = _cuda.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(8 << 20))
        if err:
            raise RuntimeError(f"cuCtxSetLimit failed: {err}")
        value = _Value()
        value.window.base_ptr = w.data_ptr()
        value.window.num_bytes = w.numel() * w.element_size()
        value.window.hitRatio = 1.0
        value.window.hitProp, value.window.missProp = PERSISTING, STREAMING
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        _cuda.cuStreamSetAttribute(stream, CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW, ctypes.byref(value))

    def forward(self, x):
        if not self.pinned:
            self._pin(self.linear.weight)
            self.pinned = True
        return torch.relu(self.linear(x))
