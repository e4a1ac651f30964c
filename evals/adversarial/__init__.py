"""The adversarial suite: candidates that cheat or break, which the verifier must reject with a
readable reason, and controls it must pass. `kernelwright eval adversarial` runs it."""

from .suite import FAMILIES, Case, CaseResult, load_cases, run_case, run_suite, suite_options

__all__ = ["FAMILIES", "Case", "CaseResult", "load_cases", "run_case", "run_suite", "suite_options"]
