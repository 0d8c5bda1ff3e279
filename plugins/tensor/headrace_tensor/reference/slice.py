"""References and samples: slice, strided_slice and their grad ops.

The reference picks each axis's indices with ``range`` after Paddle's normalization, written
out per case, and gathers them with ``np.take`` (the kernel uses one basic-slicing view).
"""
import numpy as np

from ._util import data, int_tensor


def _indices(n, start, end, step):
    """The indices Paddle's slice of one axis of size n takes (None: the range is refused)."""
    if n == 0:
        return []
    if start < 0:
        start += n
    start = max(start, 0)
    if step > 0:
        start = min(start, n)
        end = end + n if end < 0 else end
        end = min(max(end, 0), n)
        return list(range(start, end, step)) if end >= start else None
    start = min(start, n - 1)
    end = min(end, n)
    end = end + n if end < -1 else end
    end = max(end, -1)  # -1: through index 0
    return list(range(start, end, step)) if start >= end else None


def _values(inputs, attrs, part):
    name = part[0].upper() + part[1:]
    if inputs.get(f"{name}Tensor") is not None:
        return [int(v) for v in data(inputs[f"{name}Tensor"]).reshape(-1)]
    if inputs.get(f"{name}TensorList"):
        return [int(data(t).reshape(-1)[0]) for t in inputs[f"{name}TensorList"]]
    return list(attrs[part])


def _slice(inputs, attrs, strided):
    x = data(inputs["Input"])
    starts, ends = _values(inputs, attrs, "starts"), _values(inputs, attrs, "ends")
    strides = _values(inputs, attrs, "strides") if strided else [1] * len(starts)
    out = x
    for a, s, e, st in zip(attrs["axes"], starts, ends, strides):
        idx = _indices(x.shape[a], s, e, st)
        assert idx is not None, (x.shape, a, s, e, st)
        out = np.take(out, np.array(idx, dtype=np.int64), axis=a)
    sliced = out.shape
    dec = {d % x.ndim for d in attrs.get("decrease_axis", [])}
    assert all(sliced[d] == 1 for d in dec)
    return out.reshape([d for k, d in enumerate(sliced) if k not in dec]), sliced


def slice_ref(inputs, attrs):
    return {"Out": _slice(inputs, attrs, False)[0]}


def strided_slice(inputs, attrs):
    return {"Out": _slice(inputs, attrs, True)[0]}


def _grad(inputs, attrs, strided):
    """Input@GRAD: each element of Input gets the gradient of the Out element it became."""
    x = data(inputs["Input"])
    pos = np.arange(x.size).reshape(x.shape)
    taken, sliced = _slice(dict(inputs, Input=pos), attrs, strided)
    dx = np.zeros(x.size, x.dtype)
    dx[taken.reshape(-1)] = data(inputs["Out@GRAD"]).reshape(-1)
    return {"Input@GRAD": dx.reshape(x.shape)}


def slice_grad(inputs, attrs):
    return _grad(inputs, attrs, False)


def strided_slice_grad(inputs, attrs):
    return _grad(inputs, attrs, True)


# -- samples ----------------------------------------------------------------------------------

def _spelled(rng, v, n):
    """An index ``v`` in [0, n] written as given, from the end, or (the end) past it."""
    k = rng.integers(3)
    if k == 1 and v < n:
        return v - n
    if k == 2 and v == n:
        return n + int(rng.integers(1, 5))
    return v


def _sample(rng, dtype, strided):
    shape = [int(d) for d in rng.integers(1, 5, size=3)]
    axes = sorted(rng.choice(3, size=int(rng.integers(1, 4)), replace=False).tolist())
    starts, ends, strides, dec = [], [], [], []
    for a in axes:
        n = shape[a]
        step = int(rng.choice([-2, -1, 1, 2, 3])) if strided else 1
        if step > 0:
            s = int(rng.integers(0, n + 1))
            e = int(rng.integers(s, n + 1))
            starts.append(_spelled(rng, s, n))
            ends.append(_spelled(rng, e, n))
        else:
            s = int(rng.integers(0, n))
            e = int(rng.integers(-1, s + 1))
            starts.append(_spelled(rng, s, n) if rng.random() < 0.7 else n + 3)
            # (e - n only below -1: an end of -1 means "through index 0" here)
            ends.append(e - n if 0 < e < n - 1 and rng.random() < 0.5 else e)
            if starts[-1] == n + 3:
                s = n - 1
        strides.append(step)
        count = len(range(s, e, step))
        if count == 1 and rng.random() < 0.5:
            dec.append(a - 3 if rng.random() < 0.5 else a)
    inputs = {"Input": rng.standard_normal(shape).astype(dtype)}
    attrs = {"axes": [a - 3 if rng.random() < 0.3 else a for a in axes],
             "decrease_axis": dec}
    parts = {"starts": starts, "ends": ends}
    if strided:
        parts["strides"] = strides
    for part, vals in parts.items():
        name = part[0].upper() + part[1:]
        kind = rng.integers(4)
        if kind == 0:
            inputs[f"{name}Tensor"] = int_tensor(rng, vals)
        elif kind == 1:
            inputs[f"{name}TensorList"] = [int_tensor(rng, [v]) for v in vals]
        attrs[part] = vals if kind >= 2 or rng.random() < 0.5 else []
    return inputs, attrs


def sample_slice(rng, dtype):
    return _sample(rng, dtype, False)


def sample_strided_slice(rng, dtype):
    return _sample(rng, dtype, True)


def _grad_sample(rng, dtype, strided):
    inputs, attrs = _sample(rng, dtype, strided)
    full = dict(attrs)
    for part in ("starts", "ends", "strides"):
        full.setdefault(part, [])
    out = _slice(inputs, full, strided)[0]
    inputs["Out@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
    return inputs, attrs


def sample_slice_grad(rng, dtype):
    return _grad_sample(rng, dtype, False)


def sample_strided_slice_grad(rng, dtype):
    return _grad_sample(rng, dtype, True)


REFERENCES = {"slice": slice_ref, "strided_slice": strided_slice, "slice_grad": slice_grad,
              "strided_slice_grad": strided_slice_grad}
SAMPLES = {"slice": sample_slice, "strided_slice": sample_strided_slice,
           "slice_grad": sample_slice_grad, "strided_slice_grad": sample_strided_slice_grad}
