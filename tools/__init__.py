"""kernelwright.tools: the GPU-facing tools (task loading, compile, the sandboxed worker,
correctness, timing, Nsight Compute, NVML). Imports nothing else of kernelwright."""
