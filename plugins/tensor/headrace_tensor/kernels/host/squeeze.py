"""squeeze2 / unsqueeze2 host plan: Out's dims from X's and the axes, shared by the CPU and
CUDA kernels and cached per (axes, X's dims): a repeated call costs a dict lookup."""
from functools import lru_cache


def declared_rank(info):
    """Out's rank as the program declared it (None without an info)."""
    if info is None or not info.out_shapes.get("Out") or info.out_shapes["Out"][0] is None:
        return None
    return len(info.out_shapes["Out"][0])


@lru_cache(maxsize=256)
def squeezed(axes, dims, declared):
    """squeeze2's Out dims: X's ``dims`` without the size-1 dims listed in ``axes`` (a tuple;
    empty: every size-1 dim); ``declared``: Out's rank in the program, or None."""
    rank = len(dims)
    if not axes:
        gone = {k for k, d in enumerate(dims) if d == 1}
    else:
        gone = set()
        for ax in axes:
            if not (-rank <= ax < rank if rank else ax in (-1, 0)):
                raise IndexError(f"squeeze2: axis {ax} of 'axes' is out of range for X of "
                                 f"shape {list(dims)}")
            if rank and dims[ax % rank] == 1:
                gone.add(ax % rank)
    out = tuple(d for k, d in enumerate(dims) if k not in gone)
    if declared is not None and len(out) != declared:
        raise ValueError(f"squeeze2: axes {list(axes)} of X of shape {list(dims)} leave "
                         f"{len(out)} dims, but the program declared Out with {declared} "
                         f"(a listed dim unknown when it was built is not 1 now)")
    return out


@lru_cache(maxsize=256)
def unsqueezed(axes, dims):
    """unsqueeze2's Out dims: a 1 inserted into X's ``dims`` at each of ``axes`` (a tuple),
    in turn."""
    out = list(dims)
    for ax in axes:
        rank = len(out)
        if not -rank - 1 <= ax <= rank:
            raise IndexError(f"unsqueeze2: axis {ax} (axes {list(axes)}, applied in turn) is "
                             f"out of range for a rank-{rank} shape {out}")
        out.insert(ax + rank + 1 if ax < 0 else ax, 1)
    return tuple(out)
