"""References of mean, reduce_sum/_mean/_max/_min/_prod and reduce_all/_any."""
import warnings

import numpy as np

from ._util import VARTYPE_DTYPES, f64


def mean(inputs, attrs):
    x = np.asarray(inputs["X"])
    with np.errstate(all="ignore"):
        return {"Out": np.asarray(f64(x).mean() if x.size else np.nan, dtype=x.dtype)}


def _axes(x, attrs):
    dims = attrs.get("dim", [0])
    if attrs.get("reduce_all", False) or not dims or x.ndim == 0:
        return tuple(range(x.ndim))
    axes = sorted({d % x.ndim for d in dims})
    if len(axes) != len(dims) or any(not -x.ndim <= d < x.ndim for d in dims):
        raise ValueError(f"bad dim={dims} for rank {x.ndim}")
    return tuple(axes)


def _shape(x, axes, keep_dim):
    if keep_dim:
        return tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _numeric(fn):
    """A reduction that computes in float64 for floats and int64 for integers (bool sums
    count), in Paddle's in_dtype/out_dtype when set, and stores Out in out_dtype or X's."""
    def reference(inputs, attrs):
        x = np.asarray(inputs["X"])
        out_dtype = VARTYPE_DTYPES.get(attrs.get("out_dtype", -1))
        in_dtype = VARTYPE_DTYPES.get(attrs.get("in_dtype", -1))
        work = np.dtype(out_dtype or in_dtype or x.dtype)
        xw = x.astype(work)
        wide = f64(xw) if work.kind == "f" else xw.astype(np.int64)
        axes = _axes(x, attrs)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # the mean of nothing: NaN
            r = fn(wide, axis=axes, keepdims=True)
        return {"Out": np.asarray(r).reshape(_shape(x, axes, attrs.get("keep_dim", False)))
                .astype(work).astype(out_dtype or x.dtype)}
    return reference


def _logical(fn):
    def reference(inputs, attrs):
        x = np.asarray(inputs["X"])
        axes = _axes(x, attrs)
        r = fn(x, axis=axes, keepdims=True)
        return {"Out": np.asarray(r).reshape(_shape(x, axes, attrs.get("keep_dim", False)))}
    return reference


REFERENCES = {
    "mean": mean,
    "reduce_sum": _numeric(np.sum),
    "reduce_mean": _numeric(np.mean),
    "reduce_max": _numeric(np.max),
    "reduce_min": _numeric(np.min),
    "reduce_prod": _numeric(np.prod),
    "reduce_all": _logical(np.all),
    "reduce_any": _logical(np.any),
}


def sample_mean(rng, dtype):
    return {"X": rng.standard_normal((4, 5)).astype(dtype)}, {}


def _sampler(op):
    def sample(rng, dtype):
        shape = (2, 3, 4, 5)
        if op in ("reduce_all", "reduce_any"):
            # Mostly true (or mostly false), so both outcomes show up.
            x = rng.random(shape) < (0.9 if op == "reduce_all" else 0.1)
        elif op == "reduce_prod":
            x = (rng.random(shape) + 0.5).astype(dtype)
        else:
            x = rng.standard_normal(shape).astype(dtype)
        # Non-adjacent dims, one of them negative: the transposing path.
        return {"X": x}, {"dim": [0, -2], "keep_dim": False}
    return sample


SAMPLES = {"mean": sample_mean}
SAMPLES.update({op: _sampler(op) for op in REFERENCES if op != "mean"})


# -- gradients --------------------------------------------------------------------------------

def mean_grad(inputs, attrs):
    x, d = np.asarray(inputs["X"]), np.asarray(inputs["Out@GRAD"])
    if d.size != 1:
        raise ValueError(f"mean_grad: Out@GRAD must hold one element, got {d.shape}")
    return {"X@GRAD": np.full(x.shape, f64(d).reshape(-1)[0] / max(x.size, 1)).astype(x.dtype)}


def _others_product(x, axes):
    """Each element's product of the other elements of its reduced slice, by brute force."""
    if x.size == 0:
        return np.zeros_like(x)
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, kept + list(axes))
    flat = moved.reshape(moved.shape[:len(kept)] + (-1,))
    r = flat.shape[-1]
    res = np.stack([np.prod(np.delete(flat, k, axis=-1), axis=-1) for k in range(r)], axis=-1)
    return np.transpose(res.reshape(moved.shape), np.argsort(kept + list(axes)))


def _reduce_grad(op):
    def reference(inputs, attrs):
        x, d = f64(inputs["X"]), np.asarray(inputs["Out@GRAD"])
        axes = _axes(x, attrs)
        shape = _shape(x, axes, attrs.get("keep_dim", False))
        # A 0-D Out's gradient may come as one element of another rank ([1] in Fluid).
        if d.shape != shape and not (shape == () and d.size == 1):
            raise ValueError(f"{op}_grad: Out@GRAD {d.shape} is not Out's {shape}")
        keep = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        g = f64(d).reshape(keep)
        with np.errstate(all="ignore"):
            if op == "reduce_sum":
                r = np.broadcast_to(g, x.shape)
            elif op == "reduce_mean":
                r = np.broadcast_to(g / max(int(np.prod([x.shape[i] for i in axes])), 1),
                                    x.shape)
            elif op in ("reduce_max", "reduce_min"):
                out = f64(inputs["Out"])
                if out.shape != shape and not (shape == () and out.size == 1):
                    raise ValueError(f"{op}_grad: Out {out.shape} is not {shape}")
                out = out.reshape(keep)
                hit = (x == out) | (np.isnan(x) & np.isnan(out))
                r = np.where(hit, g, 0.0)
            else:
                r = g * _others_product(x, axes)
        return {"X@GRAD": np.asarray(r).astype(np.asarray(inputs["X"]).dtype)}
    return reference


def sample_mean_grad(rng, dtype):
    inputs, attrs = sample_mean(rng, dtype)
    inputs["Out@GRAD"] = np.asarray(rng.standard_normal(), dtype=dtype)
    return inputs, attrs


def _grad_sampler(op):
    forward = SAMPLES[op]

    def sample(rng, dtype):
        inputs, attrs = forward(rng, dtype)
        x = inputs["X"]
        if op == "reduce_prod":      # a zero or two: the product of the others stays exact
            x.reshape(-1)[rng.integers(x.size, size=2)] = 0
        out = REFERENCES[op](inputs, attrs)["Out"]
        inputs["Out@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
        if op in ("reduce_max", "reduce_min"):
            inputs["Out"] = out
        return inputs, attrs
    return sample


GRADS = ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod")
REFERENCES.update({"mean_grad": mean_grad})
REFERENCES.update({op + "_grad": _reduce_grad(op) for op in GRADS})
SAMPLES.update({"mean_grad": sample_mean_grad})
SAMPLES.update({op + "_grad": _grad_sampler(op) for op in GRADS})
