"""Helpers shape rules share: unknown-aware dim comparison, axis normalization, broadcasting.

-1 is an unknown dimension at build time; comparisons that involve -1 pass, and results that
depend on an unknown dim are unknown.
"""

__all__ = ["UNKNOWN", "dim_eq", "dims_match", "merge_dim", "numel", "normalize_axis",
           "broadcast_shapes", "elementwise_broadcast", "same_as", "expect_rank", "expect_dtype"]

UNKNOWN = -1


def dim_eq(a, b):
    """True unless both dims are known and differ."""
    return a == b or a < 0 or b < 0


def dims_match(a, b):
    """Whether two shapes have one rank and every pair of dims ``dim_eq``."""
    if len(a) != len(b):
        return False
    for i in range(len(a)):
        d, e = a[i], b[i]
        if d != e and d >= 0 and e >= 0:
            return False
    return True


def merge_dim(a, b):
    """The known one of two compatible dims (-1 if both are unknown)."""
    return a if a >= 0 else b


def numel(shape):
    """Number of elements, -1 if any dim is unknown."""
    n = 1
    for d in shape:
        if d < 0:
            return UNKNOWN
        n *= d
    return n


def normalize_axis(ctx, axis, rank, name="axis", allow_end=False):
    """``axis`` in [-rank, rank) (``allow_end``: [-rank-1, rank]) made non-negative."""
    hi = rank + 1 if allow_end else rank
    if not -hi <= axis < hi:
        ctx.fail(f"attribute '{name}' is out of range for a rank-{rank} input",
                 expected=f"{name} in [{-hi}, {hi - 1}]", found=axis)
    return axis + hi if axis < 0 else axis


def broadcast_shapes(ctx, x, y, xname="X", yname="Y"):
    """NumPy broadcasting of two shapes with unknown dims."""
    nx, ny = len(x), len(y)
    if nx != ny:
        x = [1] * (ny - nx) + list(x) if nx < ny else x
        y = [1] * (nx - ny) + list(y) if ny < nx else y
    # dim_eq and merge_dim inlined (every elementwise op and its gradient built calls this).
    out = []
    for i in range(len(x)):
        a, b = x[i], y[i]
        if a == b or b == 1:
            out.append(a)
        elif a == 1:
            out.append(b)
        elif a < 0 or b < 0:
            out.append(a if a >= 0 else b)
        else:
            ctx.fail(f"{xname} and {yname} cannot be broadcast (dim {i})",
                     expected="equal dims or 1", found=f"{xname}{tuple(x)} vs {yname}{tuple(y)}")
    return out


def elementwise_broadcast(ctx, x, y, axis):
    """Paddle's elementwise broadcasting: Y's dims align with X's starting at ``axis``
    (-1: trailing alignment, i.e. NumPy's); either side may be the larger one."""
    x, y = list(x), list(y)
    if axis == -1 or len(x) == len(y):
        return broadcast_shapes(ctx, x, y)
    big, small, bname, sname = (x, y, "X", "Y") if len(x) >= len(y) else (y, x, "Y", "X")
    # Paddle trims the smaller operand's trailing 1s before aligning it at axis:
    # X [2, 3, 4, 5] with Y [4, 5, 1] at axis=2 is X with Y [4, 5].
    while len(small) > 1 and small[-1] == 1 and axis + len(small) > len(big):
        small = small[:-1]
    if not 0 <= axis <= len(big) - len(small):
        ctx.fail(f"attribute 'axis' does not align {sname} inside {bname}",
                 expected=f"axis in [0, {len(big) - len(small)}] or -1",
                 found=f"axis={axis} for {bname}{tuple(big)}, {sname}{tuple(small)}")
    padded = [1] * axis + small + [1] * (len(big) - len(small) - axis)
    out = broadcast_shapes(ctx, big, padded, bname, sname)
    return out


def same_as(slot="X", out="Out"):
    """A rule: ``out`` has the shape, dtype and LoD level of input ``slot``."""
    def infer(ctx):
        ctx.set_output_like(out, ctx.input(slot))
    infer.__doc__ = f"{out} has the shape and dtype of {slot}."
    return infer


def expect_rank(ctx, meta, ranks, slot):
    """Fail unless ``meta`` has one of ``ranks`` (an int or a collection)."""
    ranks = (ranks,) if isinstance(ranks, int) else tuple(ranks)
    if meta.rank not in ranks:
        ctx.fail(f"input '{slot}' ({meta.name}) has the wrong rank",
                 expected=f"rank {' or '.join(map(str, ranks))}",
                 found=f"rank {meta.rank}, shape {list(meta.shape)}")


def expect_dtype(ctx, meta, dtypes, slot):
    """Fail unless ``meta``'s dtype is in ``dtypes``."""
    if meta.dtype not in dtypes:
        ctx.fail(f"input '{slot}' ({meta.name}) has the wrong dtype",
                 expected=" or ".join(dtypes), found=meta.dtype)
