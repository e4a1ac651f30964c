"""Which numeric approximations `kernelwright tune` may try for a kernel: those whose documented
per-operation error each output's tolerance can hold (the verifier still checks every build)."""

from __future__ import annotations

import re

from .correctness import tolerance
from .signature import strip_comments
from .spec import FLOAT_DTYPES, CompileOptions, CudaTask

NUMERICS = {  # the approximations, each as the options it sets
    "exact": {},
    "fast math": {"fast_math": True},
    "flush to zero": {"ftz": True},
    "approximate division and sqrt": {"prec_div": False, "prec_sqrt": False},
}
# What one operation may err by under each approximation, (relative, absolute), as the CUDA C++
# Programming Guide's math appendix documents it for float32. The flags are single precision's:
# double arithmetic builds the same code (dropped unchecked; a double exp or tanh does change
# under flush-to-zero), and float64's default rtol, 1e-10, is under every relative bound here.
# An approximation is tried only where every output's rtol and atol are at least its bound: what
# a kernel makes of one operation's error is the verifier's to judge.
ULP32 = 2.0**-23  # a float32 ulp, relative to the value, at most
ERRORS = {
    "flush to zero": (0.0, 2.0**-126),  # a result under FLT_MIN becomes 0
    "approximate division and sqrt": (2 * ULP32, 0.0),  # x/y 2 ulp, sqrtf 1 ulp
}
# Fast math also sets both of those and turns each function below into its intrinsic, whose bound
# is the guide's; None: it states none over the whole range (__sinf's holds on [-pi, pi] only,
# __tanf and __powf are derived from others). A kernel that calls none of them errs as the two do.
FAST_MATH = {
    "tanh": (2.0**-11, 0.0),
    "exp": (123 * ULP32, 0.0),  # 2 + floor(1.173 |x|) ulp; |x| < 104 (e^x a float, or 0)
    "exp10": (135 * ULP32, 0.0),  # 2 + floor(2.97 |x|) ulp, |x| < 45
    "log": (3 * ULP32, 2.0**-21.41),  # absolute on [0.5, 2], 3 ulp elsewhere
    "log2": (2 * ULP32, 2.0**-22),
    "log10": (3 * ULP32, 2.0**-24),
    "sin": None,
    "cos": None,
    "sincos": None,
    "tan": None,
    "pow": None,
}


def allowed(task: CudaTask, source: str) -> tuple[list[str], str]:
    """The approximations the task's tolerance allows for this kernel (see ERRORS), and one line
    saying which are tried and why not the others."""
    outputs = [a for a in task.args if a.role in ("out", "inout")]
    exact = [a for a in outputs if a.dtype not in FLOAT_DTYPES]
    if getattr(task, "compare", "close") == "exact" or exact:  # a C++ task's, or integers
        why = f"output '{exact[0].name}' is {exact[0].dtype}" if exact else "the task says so"
        return [], f"numerics not tried: outputs compared exactly ({why})"
    called = [f for f in FAST_MATH if re.search(rf"\b{f}f?\s*\(", strip_comments(source))]
    unbounded = [f"{f}f" for f in called if FAST_MATH[f] is None]
    errs = [*ERRORS.values(), *(e for f in called if (e := FAST_MATH[f]) is not None)]
    bounds = {**ERRORS, "fast math": (max(e[0] for e in errs), max(e[1] for e in errs))}
    tols = [(a.name, *tolerance(a.dtype, task.atol, task.rtol)) for a in outputs]
    tried, refused = [], []
    for name, (rel, absolute) in bounds.items():
        tight = [t for t in tols if rel > t[2] or absolute > t[1]]
        if name == "fast math" and unbounded:
            refused.append(f"{name} (no documented bound for {', '.join(unbounded)})")
        elif tight:
            fast = name == "fast math" and called
            via = f" with {', '.join(f + 'f' for f in called)}" if fast else ""
            out, atol, rtol = tight[0]
            refused.append(
                f"{name} (up to {rel:.1e} relative, {absolute:.1e} absolute{via}; "
                f"'{out}' allows rtol {rtol:g}, atol {atol:g})"
            )
        else:
            tried.append(name)
    note = "numerics tried: " + ", ".join(tried) if tried else "numerics not tried"
    return tried, note + ("; not " + "; not ".join(refused) if refused else "")


def now(o: CompileOptions) -> str:
    """The approximation a build asks for, by its NUMERICS name ("exact": none)."""
    return next(
        (k for k, v in NUMERICS.items() if v and all(getattr(o, f) == x for f, x in v.items())),
        "exact",
    )
