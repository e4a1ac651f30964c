"""float64 reference for gelu.cu: y = gelu(x), tanh approximation."""
import math


def reference(xp, x, **_):
    c = math.sqrt(2.0 / math.pi)
    y = 0.5 * x * (1.0 + xp.tanh(c * (x + 0.044715 * x * x * x)))
    return {"y": y}
