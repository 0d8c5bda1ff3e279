"""References and samples: expand_v2, expand_as_v2, expand and their grad ops.

The forward references repeat X along each expanded axis with ``np.repeat`` (the kernels copy
a broadcast view); the gradients add up the copies block by block in float64.
"""
import numpy as np

from ._util import data, int_tensor

MAX_RANK = 8


def _target(inputs, attrs, attr, tslot, lslot):
    if inputs.get(tslot) is not None:
        t = data(inputs[tslot])
        if t.ndim != 1 or t.dtype.kind not in "iu":
            raise ValueError(f"{tslot} must be a 1-D int tensor")
        return [int(v) for v in t]
    if inputs.get(lslot):
        vals = []
        for t in inputs[lslot]:
            t = data(t)
            if t.size != 1 or t.dtype.kind not in "iu":
                raise ValueError(f"{lslot} entries must be one-element int tensors")
            vals.append(int(t.reshape(-1)[0]))
        return vals
    return [int(v) for v in attrs.get(attr, [])]


def _broadcast(x, target, keep):
    """X repeated to ``target`` (Paddle's expand_v2 rules, -1 keeping a dim if ``keep``)."""
    if not x.ndim <= len(target) <= MAX_RANK:
        raise ValueError(f"target {target} for X {x.shape}")
    lead = len(target) - x.ndim
    out = x.reshape((1,) * lead + x.shape)
    for axis, v in enumerate(target):
        d = out.shape[axis]
        if keep and v == -1 and axis >= lead:
            continue
        if v < 0 or (d != 1 and d != v):
            raise ValueError(f"target {target} for X {x.shape} (axis {axis})")
        if d != v:
            out = np.repeat(out, v, axis=axis)
    return out


def expand_v2(inputs, attrs):
    x = data(inputs["X"])
    target = _target(inputs, attrs, "shape", "Shape", "expand_shapes_tensor")
    return {"Out": _broadcast(x, target, keep=True)}


def expand_as_v2(inputs, attrs):
    x = data(inputs["X"])
    if inputs.get("Y") is not None:
        target = list(data(inputs["Y"]).shape)
    else:
        target = [int(v) for v in attrs.get("target_shape", [])]
    return {"Out": _broadcast(x, target, keep=False)}


def expand(inputs, attrs):
    x = data(inputs["X"])
    times = _target(inputs, attrs, "expand_times", "ExpandTimes", "expand_times_tensor")
    if len(times) != x.ndim or x.ndim > MAX_RANK or any(t < 0 for t in times):
        raise ValueError(f"expand_times {times} for X {x.shape}")
    out = x
    for axis, t in enumerate(times):
        out = np.concatenate([out] * t, axis=axis) if t else out.take([], axis=axis)
    return {"Out": out}


def _sum_copies(x, g):
    """Out@GRAD of a broadcast of X, added up over the copies (float64, then X's dtype)."""
    lead = g.ndim - x.ndim
    if lead < 0:
        raise ValueError("Out@GRAD has fewer dims than X")
    acc = g.astype(np.float64)
    for _ in range(lead):
        acc = acc.sum(axis=0)
    for axis, d in enumerate(x.shape):
        if acc.shape[axis] != d:
            if d != 1:
                raise ValueError(f"Out@GRAD {g.shape} is not an expansion of X {x.shape}")
            acc = acc.sum(axis=axis, keepdims=True)
    return acc.astype(x.dtype)


def _grad_operands(inputs):
    x, g = data(inputs["X"]), data(inputs["Out@GRAD"])
    if x.dtype != g.dtype or x.dtype.kind != "f":
        raise TypeError("X and Out@GRAD must share one float dtype")
    return x, g


def expand_v2_grad(inputs, attrs):
    return {"X@GRAD": _sum_copies(*_grad_operands(inputs))}


def expand_as_v2_grad(inputs, attrs):
    return {"X@GRAD": _sum_copies(*_grad_operands(inputs))}


def expand_grad(inputs, attrs):
    x, g = _grad_operands(inputs)
    if g.ndim != x.ndim:
        raise ValueError("Out@GRAD must have X's rank")
    acc = np.zeros(x.shape)
    if x.size == 0:
        if any(e != 0 for d, e in zip(x.shape, g.shape) if d == 0):
            raise ValueError("Out@GRAD is not a tiling of X")
        return {"X@GRAD": acc.astype(x.dtype)}
    if any(e % d for d, e in zip(x.shape, g.shape)):
        raise ValueError("Out@GRAD is not a tiling of X")
    # every tile's block, one at a time
    for tile in np.ndindex(*[e // d for d, e in zip(x.shape, g.shape)]):
        acc += g[tuple(slice(t * d, (t + 1) * d) for t, d in zip(tile, x.shape))]
    return {"X@GRAD": acc.astype(x.dtype)}


def _x(rng, dtype, rank):
    shape = [int(rng.choice([1, 1, 2, 3])) for _ in range(rank)]
    return rng.standard_normal(shape).astype(dtype)


def sample_expand_v2(rng, dtype):
    x = _x(rng, dtype, int(rng.integers(0, 4)))
    lead = [int(v) for v in rng.integers(1, 4, size=int(rng.integers(0, 3)))]
    own = [int(rng.integers(1, 4)) if d == 1 else int(rng.choice([d, -1])) for d in x.shape]
    target = lead + own
    inputs = {"X": x}
    how = int(rng.integers(3))
    if how == 1:
        inputs["Shape"] = int_tensor(rng, target)
        return inputs, {"shape": []}
    if how == 2:
        inputs["expand_shapes_tensor"] = [int_tensor(rng, [v]) for v in target]
        return inputs, {"shape": [-1] * len(target)}
    return inputs, {"shape": target}


def sample_expand_as_v2(rng, dtype):
    x = _x(rng, dtype, int(rng.integers(0, 4)))
    lead = [int(v) for v in rng.integers(1, 4, size=int(rng.integers(0, 3)))]
    target = lead + [int(rng.integers(1, 4)) if d == 1 else d for d in x.shape]
    if rng.integers(2):
        return {"X": x, "Y": rng.standard_normal(target).astype(dtype)}, \
            {"target_shape": [-1] * len(target)}
    return {"X": x}, {"target_shape": target}


def sample_expand(rng, dtype):
    x = _x(rng, dtype, int(rng.integers(0, 4)))
    times = [int(v) for v in rng.integers(1, 4, size=x.ndim)]
    how = int(rng.integers(3))
    if how == 1:
        return {"X": x, "ExpandTimes": int_tensor(rng, times)}, {"expand_times": []}
    if how == 2:
        return {"X": x, "expand_times_tensor": [int_tensor(rng, [t]) for t in times]}, \
            {"expand_times": [-1] * len(times)}
    return {"X": x}, {"expand_times": times}


def _grad_sampler(op, forward, reference):
    def sample(rng, dtype):
        inputs, attrs = forward(rng, dtype)
        out = reference(inputs, attrs)["Out"]
        inputs.pop("Y", None)          # (the grad op reads X and Out@GRAD only)
        inputs["Out@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
        return inputs, attrs
    sample.__name__ = f"sample_{op}"
    return sample


REFERENCES = {"expand_v2": expand_v2, "expand_as_v2": expand_as_v2, "expand": expand,
              "expand_v2_grad": expand_v2_grad, "expand_as_v2_grad": expand_as_v2_grad,
              "expand_grad": expand_grad}
SAMPLES = {"expand_v2": sample_expand_v2, "expand_as_v2": sample_expand_as_v2,
           "expand": sample_expand,
           "expand_v2_grad": _grad_sampler("expand_v2_grad", sample_expand_v2, expand_v2),
           "expand_as_v2_grad": _grad_sampler("expand_as_v2_grad", sample_expand_as_v2,
                                              expand_as_v2),
           "expand_grad": _grad_sampler("expand_grad", sample_expand, expand)}
