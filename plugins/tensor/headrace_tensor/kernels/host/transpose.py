"""transpose2 host plan: the checked permutation of X's dims and, for the gradient, its
inverse after checking Out@GRAD's shape. Shared by the CPU and CUDA kernels and cached per
(axis, X's dims): a repeated call costs a dict lookup. The lists returned are shared by the
calls of one shape: read them, never change them."""
from functools import lru_cache


@lru_cache(maxsize=256)
def permutation(axis, shape, op, from_xshape=False):
    """``axis`` (a tuple) with negative entries resolved, if it is a permutation of the dims of
    X (``shape``; ``from_xshape``: read from XShape, for the errors)."""
    nd = len(shape)
    shown = list(axis)
    if len(axis) != nd:
        what = f"X (shape {list(shape)}, from XShape)" if from_xshape else \
            f"X (shape {list(shape)})"
        raise ValueError(f"{op}: axis {shown} needs one entry per dim of {what}")
    perm = [ax + nd if ax < 0 else ax for ax in axis]
    if sorted(perm) != list(range(nd)):
        raise ValueError(f"{op}: axis {shown} is not a permutation of the {nd} dims of X")
    return perm


@lru_cache(maxsize=256)
def inverse(axis, xdims, gshape, op):
    """transpose2_grad: the inverse of the permutation ``axis`` of X's dims ``xdims`` (from
    XShape), after checking that Out@GRAD (``gshape``) has Out's shape."""
    perm = permutation(axis, xdims, op, True)
    out_dims = tuple(xdims[ax] for ax in perm)
    if gshape != out_dims:
        raise ValueError(f"{op}: Out@GRAD has shape {list(gshape)}, expected Out's shape "
                         f"{list(out_dims)} (X's {list(xdims)} permuted by axis "
                         f"{list(axis)})")
    inv = [0] * len(perm)
    for i, ax in enumerate(perm):
        inv[ax] = i
    return inv
