"""Helpers the references share (the leading underscore keeps it out of the collection)."""
import numpy as np


def attr(attrs, name, default):
    """An attribute, or the definition's default when the caller left it out."""
    return attrs[name] if name in attrs else default


def attr_f32(attrs, name, default):
    """A "float" attribute as the kernel sees it: attributes of that type are 32-bit."""
    return float(np.float32(attr(attrs, name, default)))


def f64(a):
    return np.asarray(a, dtype=np.float64)


def same_pads(size, stride, k):
    """(before, after) so that out = ceil(size / stride); the odd unit goes after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + k - size, 0)
    return total // 2, total - total // 2


def four_pads(paddings):
    """[top, bottom, left, right] from 2 (both sides) or 4 values."""
    p = list(paddings)
    return [p[0], p[0], p[1], p[1]] if len(p) == 2 else p
