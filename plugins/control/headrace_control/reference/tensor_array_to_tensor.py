"""tensor_array_to_tensor and its gradient in NumPy, for the tests (a frame op: the hygiene
harness does not run it from REFERENCES; plugins/control/tests/test_tensor_array_to_tensor.py
compares the kernels with these)."""
import numpy as np


def _axis(axis, rank, use_stack):
    limit = rank + 1 if use_stack else rank
    return axis + limit if axis < 0 else axis


def tensor_array_to_tensor(parts, axis=0, use_stack=False):
    """``(Out, OutIndex)``: the parts concatenated (or stacked) along ``axis``; OutIndex holds
    each part's size along that axis as Paddle reports it (1 when stacking on a new last
    axis), int32."""
    parts = [np.asarray(p) for p in parts]
    ax = _axis(axis, parts[0].ndim, use_stack)
    out = np.stack(parts, ax) if use_stack else np.concatenate(parts, ax)
    index = np.array([p.shape[ax] if ax < p.ndim else 1 for p in parts], np.int32)
    return out, index


def tensor_array_to_tensor_grad(parts, out_grad, axis=0, use_stack=False):
    """The gradient of each part: ``out_grad`` cut back along the joined axis."""
    parts = [np.asarray(p) for p in parts]
    g = np.asarray(out_grad)
    ax = _axis(axis, parts[0].ndim, use_stack)
    if use_stack:
        return [g[(slice(None),) * ax + (k,)] for k in range(len(parts))]
    bounds = np.cumsum([p.shape[ax] for p in parts])
    return [g[(slice(None),) * ax + (slice(b - p.shape[ax], b),)]
            for p, b in zip(parts, bounds)]
