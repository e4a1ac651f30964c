"""kernelwright.evals: benchmarks, the adversarial suite and the eval runner."""
