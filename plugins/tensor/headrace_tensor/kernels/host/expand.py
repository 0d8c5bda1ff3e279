"""expand_v2 / expand_as_v2 / expand host plan: the target values (tensor, list of tensors or
attribute), Out's shape from X's (the shape rule's, with every value known), expand's tile
factors, and the gradients' shape checks.

Shared by the CPU and CUDA kernels. Out's shape is cached per (X's shape, target): a program
runs the same shapes again and again, so a repeated call costs a dict lookup.
"""
from functools import lru_cache

MAX_RANK = 8  # Paddle's limit for the expand ops


def given_values(attr, tensor, tensor_list, op, tslot, lslot, ints, ints_of_list):
    """The target values: the 1-D tensor, else the list of one-element tensors, else the
    attribute (Paddle's order); ``ints`` / ``ints_of_list`` read a tensor on the host."""
    if tensor is not None:
        if len(tensor.shape) != 1:
            raise ValueError(f"{op}: input '{tslot}' must be 1-D, got shape "
                             f"{list(tensor.shape)}")
        return ints(tensor, op, tslot)
    if tensor_list:
        return ints_of_list(tensor_list, op, lslot)
    return attr


@lru_cache(maxsize=256)
def expanded(xs, target, op, what, keep):
    """Out's shape for X of shape ``xs`` expanded to ``target`` (a tuple); ``keep``: -1 keeps
    X's dim."""
    rank, n = len(xs), len(target)
    diff = n - rank
    shown = list(target)
    if n < rank:
        raise ValueError(f"{op}: {what} {shown} has fewer dims than X {list(xs)}")
    if n > MAX_RANK:
        raise ValueError(f"{op}: {what} {shown} has more than {MAX_RANK} dims")
    out = []
    for i in range(n):
        v = target[i]
        if i < diff:
            if v < 0:
                raise ValueError(f"{op}: {what} {shown} holds {v} for a new leading dim "
                                 f"(must be >= 0)")
            out.append(v)
            continue
        d = xs[i - diff]
        if v == -1 and keep:
            out.append(d)
        elif v < 0:
            raise ValueError(f"{op}: {what} {shown} holds {v} for dim {i - diff} of X "
                             f"(must be >= 0" + (", or -1 to keep it)" if keep else ")"))
        elif d == 1 or d == v:
            out.append(v)
        else:
            raise ValueError(f"{op}: dim {i - diff} of X {list(xs)} is {d}, not 1, but "
                             f"{what} {shown} asks for {v}")
    return tuple(out)


def check_times(times, nd):
    """expand's factors: one per dim of X (rank ``nd``), none negative."""
    if len(times) != nd:
        raise ValueError(f"expand: {len(times)} factors {times} for an X of rank {nd} "
                         f"(one per dim)")
    if nd > MAX_RANK:
        raise ValueError(f"expand: X has rank {nd}, more than {MAX_RANK}")
    if any(t < 0 for t in times):
        raise ValueError(f"expand: the factors {times} must be >= 0")


def broadcast_lead(xshape, gshape, op):
    """How many leading dims Out@GRAD (``gshape``) adds to X (``xshape``), after checking that
    it is an expansion of X (each dim equal, or 1 in X)."""
    lead = len(gshape) - len(xshape)
    if lead < 0:
        raise ValueError(f"{op}: Out@GRAD {list(gshape)} has fewer dims than X "
                         f"{list(xshape)}")
    for k, d in enumerate(xshape):
        if d != gshape[lead + k] and d != 1:
            raise ValueError(f"{op}: Out@GRAD {list(gshape)} is not an expansion of "
                             f"X {list(xshape)} (dim {k})")
    return lead


def check_tiling(xshape, gshape):
    """expand_grad: Out@GRAD's shape must tile X's (each dim a whole multiple)."""
    if len(gshape) != len(xshape) or any((d == 0 and e != 0) or (d != 0 and e % d)
                                         for d, e in zip(xshape, gshape)):
        raise ValueError(f"expand_grad: Out@GRAD {list(gshape)} is not a tiling of X "
                         f"{list(xshape)}")
