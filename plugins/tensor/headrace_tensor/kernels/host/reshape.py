"""reshape2 host plan: Paddle's ValidateShape, the dims of Out from the target shape and X's
dims, shared by the CPU and CUDA kernels and cached per (target, X's dims): a program runs the
same shapes again and again, so a repeated call costs a dict lookup."""
from functools import lru_cache


def _prod(dims):
    n = 1
    for d in dims:
        n *= d
    return n


@lru_cache(maxsize=256)
def resolve(shape, xdims, source):
    """Paddle's ValidateShape for the target ``shape`` (a tuple) and X's ``xdims``: 0 copies
    X's dim at that index, one -1 is inferred from the element count, other dims are taken as
    given (all > 0). ``source`` names where the shape came from, for the errors."""
    shown = list(shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape2: the shape from {source} holds more than one -1: {shown}")
    out, kept, infer_at = [], set(), -1
    for i, d in enumerate(shape):
        if d == 0:
            if i >= len(xdims):
                raise ValueError(f"reshape2: the shape from {source} copies dim {i} (0) of X, "
                                 f"which has only {len(xdims)} dims: {shown}")
            out.append(xdims[i])
            kept.add(i)
        elif d == -1:
            out.append(-1)
            infer_at = i
        elif d < 0:
            raise ValueError(f"reshape2: the shape from {source} has a negative dim other "
                             f"than -1: {shown}")
        else:
            out.append(d)
    # Dims copied with 0 are on both sides: leave them out of the count (a 0-size X too).
    x_rest = _prod([d for i, d in enumerate(xdims) if i not in kept])
    out_rest = _prod([d for d in shape if d > 0])
    if infer_at >= 0:
        if x_rest % out_rest:
            raise ValueError(f"reshape2: X of shape {list(xdims)} cannot be reshaped to "
                             f"{shown}: the -1 dim is not a whole number")
        out[infer_at] = x_rest // out_rest
    elif x_rest != out_rest:
        raise ValueError(f"reshape2: X of shape {list(xdims)} ({_prod(xdims)} elements) cannot "
                         f"be reshaped to {shown} from {source}")
    return tuple(out)
