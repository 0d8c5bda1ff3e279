"""Pieces the math op families share: dtype groups, attribute checks, dtype agreement.

The leading underscore keeps ``register_ops_package`` from treating this as an op family.
"""
from headrace import dtypes

__all__ = ["FLOATS", "INTS", "NUMERIC", "ORDERED", "BOOL", "DTYPE_CODES", "at_least",
           "at_least_minus_one", "dtype_code", "label", "same_dtype"]

# bfloat16 is left out: it has no NumPy dtype, so no CPU kernel could take it yet.
FLOATS = ("float16", "float32", "float64")
INTS = ("int32", "int64")
NUMERIC = FLOATS + INTS
# Comparisons order any real type, bool included (Paddle registers them all).
ORDERED = ("bool", "int8", "uint8", "int16") + INTS + FLOATS
BOOL = ("bool",)

# Wire codes a dtype-valued int attribute (reduce's in_dtype/out_dtype) may hold.
DTYPE_CODES = frozenset(dtypes.to_proto(name) for name in dtypes.DTYPES)


def at_least(n):
    """An attribute check: the value must be >= n."""
    def check(value):
        return None if value >= n else f"must be >= {n}"
    return check


def at_least_minus_one(value):
    """An attribute check for Paddle's broadcast ``axis``: -1 (trailing alignment) or >= 0."""
    return None if value >= -1 else "must be -1 (trailing alignment) or a dim index >= 0"


def dtype_code(value):
    """An attribute check for a VarType dtype code, -1 meaning 'not set'."""
    if value == -1 or value in DTYPE_CODES:
        return None
    return "must be -1 or a VarType dtype code (e.g. 5 = float32)"


def label(meta, slot):
    """How an error names an input: its slot and variable, ``X (fc_0.tmp_0)``."""
    return f"{slot} ({meta.name})"


def same_dtype(ctx, x, y, xslot="X", yslot="Y"):
    """The common dtype of two inputs; Paddle's kernels take one T for both, so a mismatch
    is an error here rather than a silent cast."""
    if x.dtype is not None and y.dtype is not None and x.dtype != y.dtype:
        ctx.fail(f"{label(x, xslot)} is {x.dtype} but {label(y, yslot)} is {y.dtype}",
                 expected=f"{yslot} of dtype {x.dtype} (the dtype of {xslot})", found=y.dtype)
    return x.dtype if x.dtype is not None else y.dtype
