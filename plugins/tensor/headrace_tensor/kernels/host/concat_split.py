"""split host plan: the sizes of the pieces from num or sections, shared by the CPU and CUDA
kernels and cached per (num, split dim, sections): a repeated call costs a dict lookup."""
from functools import lru_cache


@lru_cache(maxsize=256)
def split_sizes(num, dim, sections):
    """The piece sizes of a split dim of ``dim`` entries: ``num`` equal pieces (num > 0), else
    ``sections`` (a tuple; at most one -1, which takes the rest)."""
    shown = list(sections)
    if num > 0:
        if dim % num:
            raise ValueError(f"split: a dim of size {dim} cannot be split into {num} equal "
                             f"pieces")
        return (dim // num,) * num
    if any(s < -1 for s in sections) or sections.count(-1) > 1:
        raise ValueError(f"split: sections hold sizes >= 0 and at most one -1, got {shown}")
    known = sum(s for s in sections if s >= 0)
    if -1 in sections:
        if known > dim:
            raise ValueError(f"split: sections {shown} ask for more than the {dim} entries of "
                             f"the split dim")
        return tuple(dim - known if s == -1 else s for s in sections)
    if known != dim:
        raise ValueError(f"split: sections {shown} sum to {known}, but the split dim has "
                         f"{dim} entries")
    return tuple(sections)
