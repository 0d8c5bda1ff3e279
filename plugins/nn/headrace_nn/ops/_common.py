"""Helpers the nn shape rules share: dtype groups, attribute checkers, window arithmetic.

The leading underscore keeps ``register_ops_package`` from treating this module as an op family.
"""
from headrace.ops.shape import dim_eq, merge_dim

__all__ = ["FLOATS", "INDEX_DTYPES", "LAYOUTS", "PADDING_ALGORITHMS", "int_list", "in_range",
           "at_least", "describe", "merge_shapes", "expect_same_dims", "layout_axes",
           "resolve_paddings", "conv_out_size", "pool_out_size", "expect_same_shape"]

# NumPy-backed float types: what the CPU and CUDA kernels can compute in.
FLOATS = ("float16", "float32", "float64")
INDEX_DTYPES = ("int32", "int64")
# "AnyLayout" is what Paddle 1.x wrote by default on conv2d/pool2d; it means NCHW there.
LAYOUTS = ("NCHW", "NHWC", "AnyLayout")
PADDING_ALGORITHMS = ("EXPLICIT", "SAME", "VALID")


def int_list(lengths, what, minimum=None):
    """An attribute check: a list whose length is in ``lengths``, items >= ``minimum``."""
    lengths = (lengths,) if isinstance(lengths, int) else tuple(lengths)

    def check(value):
        if len(value) not in lengths:
            return f"must hold {' or '.join(map(str, lengths))} values ({what})"
        if minimum is not None and any(v < minimum for v in value):
            return f"values must be >= {minimum}"
        return None
    return check


def in_range(lo, hi):
    """An attribute check: ``lo <= value <= hi``."""
    def check(value):
        return None if lo <= value <= hi else f"must be in [{lo}, {hi}]"
    return check


def at_least(lo):
    """An attribute check: ``value >= lo``."""
    def check(value):
        return None if value >= lo else f"must be >= {lo}"
    return check


def describe(slot, meta):
    """How errors name an input: its slot and its variable."""
    return f"{slot} ({meta.name})"


def merge_shapes(a, b):
    """Dim-wise merge of two compatible shapes: the known one of each pair of dims."""
    return [merge_dim(x, y) for x, y in zip(a, b)]


def expect_same_dims(ctx, a, b, aslot, bslot, axes, what="dims"):
    """Fail unless the known dims of ``a`` and ``b`` agree on ``axes``."""
    for i in axes:
        if not dim_eq(a.shape[i], b.shape[i]):
            ctx.fail(f"{describe(aslot, a)} and {describe(bslot, b)} disagree on {what} "
                     f"(dim {i}: {a.shape[i]} vs {b.shape[i]})",
                     expected=f"{bslot} dim {i} == {a.shape[i]}",
                     found=f"{aslot}{list(a.shape)}, {bslot}{list(b.shape)}")


def layout_axes(meta, data_format):
    """(channel axis, spatial axes) of an N-C-spatial tensor in ``data_format``."""
    rank = meta.rank
    if data_format in ("NHWC", "NDHWC"):
        return rank - 1, list(range(1, rank - 1))
    return 1, list(range(2, rank))


def resolve_paddings(paddings, algorithm, data_dims, strides, ksize):
    """Paddle's UpdatePadding: per-side paddings [before0, after0, before1, after1, ...].

    ``paddings`` holds one value per spatial dim (both sides) or two. "SAME" pads so that
    out = ceil(in / stride), the odd unit going after; "VALID" pads nothing. A SAME padding of
    an unknown dim is unknown (-1).
    """
    n = len(data_dims)
    if len(paddings) == n:
        pads = [p for p in paddings for _ in (0, 1)]
    else:
        pads = list(paddings)
    if algorithm == "VALID":
        return [0] * (2 * n)
    if algorithm == "SAME":
        pads = []
        for size, s, k in zip(data_dims, strides, ksize):
            if size < 0:
                pads += [-1, -1]
                continue
            out = (size + s - 1) // s
            total = max((out - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
    return pads


def conv_out_size(size, k, dilation, pad0, pad1, stride):
    """Output extent of a convolution window (-1 when any operand is unknown)."""
    if min(size, k, pad0, pad1) < 0:
        return -1
    return (size + pad0 + pad1 - (dilation * (k - 1) + 1)) // stride + 1


def pool_out_size(size, k, pad0, pad1, stride, ceil_mode):
    """Output extent of a pooling window; ``ceil_mode`` keeps a last, partial window."""
    if min(size, k, pad0, pad1) < 0:
        return -1
    extra = stride - 1 if ceil_mode else 0
    return (size - k + pad0 + pad1 + extra) // stride + 1


def expect_same_shape(ctx, a, b, aslot, bslot, what=None):
    """Fail unless ``a`` and ``b`` have the same rank and agree on every known dim."""
    if a.rank != b.rank or not all(dim_eq(x, y) for x, y in zip(a.shape, b.shape)):
        ctx.fail(f"{describe(bslot, b)} must have the shape of {what or describe(aslot, a)}",
                 expected=f"shape {list(a.shape)}", found=f"{bslot}{list(b.shape)}")
