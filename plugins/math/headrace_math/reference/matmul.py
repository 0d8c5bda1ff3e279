"""References of mul, matmul and matmul_v2 (float64 products rounded to the input dtype)."""
import numpy as np

from ._util import f64, fattr, like


def mul(inputs, attrs):
    x, y = np.asarray(inputs["X"]), np.asarray(inputs["Y"])
    xn, yn = attrs.get("x_num_col_dims", 1), attrs.get("y_num_col_dims", 1)
    rows, inner = int(np.prod(x.shape[:xn])), int(np.prod(x.shape[xn:]))
    cols = int(np.prod(y.shape[yn:]))
    out = f64(x).reshape(rows, inner) @ f64(y).reshape(inner, cols)
    return {"Out": like(out.reshape(x.shape[:xn] + y.shape[yn:]), x)}


def _matmul(x, y, tx, ty, alpha):
    x, y = np.asarray(x), np.asarray(y)
    a = np.swapaxes(f64(x), -1, -2) if tx and x.ndim > 1 else f64(x)
    b = np.swapaxes(f64(y), -1, -2) if ty and y.ndim > 1 else f64(y)
    out = np.matmul(a, b) * alpha
    return like(np.asarray(out), x)     # vector . vector is 0-D (Paddle 3)


def matmul(inputs, attrs):
    return {"Out": _matmul(inputs["X"], inputs["Y"], attrs.get("transpose_X", False),
                           attrs.get("transpose_Y", False), fattr(attrs, "alpha", 1.0))}


def matmul_v2(inputs, attrs):
    return {"Out": _matmul(inputs["X"], inputs["Y"], attrs.get("trans_x", False),
                           attrs.get("trans_y", False), 1.0)}


def sample_mul(rng, dtype):
    return ({"X": rng.standard_normal((2, 3, 4)).astype(dtype),
             "Y": rng.standard_normal((4, 5)).astype(dtype)}, {"x_num_col_dims": 2})


def sample_matmul(rng, dtype):
    # Broadcast batch dims and both transposes.
    return ({"X": rng.standard_normal((2, 1, 4, 3)).astype(dtype),
             "Y": rng.standard_normal((3, 5, 4)).astype(dtype)},
            {"transpose_X": True, "transpose_Y": True, "alpha": 0.5})


def sample_matmul_v2(rng, dtype):
    return ({"X": rng.standard_normal((2, 3, 4)).astype(dtype),
             "Y": rng.standard_normal((4, 5)).astype(dtype)}, {"trans_x": False})


REFERENCES = {"mul": mul, "matmul": matmul, "matmul_v2": matmul_v2}
SAMPLES = {"mul": sample_mul, "matmul": sample_matmul, "matmul_v2": sample_matmul_v2}


# -- gradients --------------------------------------------------------------------------------

def mul_grad(inputs, attrs):
    x, y, d = (np.asarray(inputs[s]) for s in ("X", "Y", "Out@GRAD"))
    xn, yn = attrs.get("x_num_col_dims", 1), attrs.get("y_num_col_dims", 1)
    rows, inner = int(np.prod(x.shape[:xn])), int(np.prod(x.shape[xn:]))
    cols = int(np.prod(y.shape[yn:]))
    if inner != int(np.prod(y.shape[:yn])) or d.shape != x.shape[:xn] + y.shape[yn:]:
        raise ValueError("mul_grad: shapes do not fit")
    x2, y2 = f64(x).reshape(rows, inner), f64(y).reshape(inner, cols)
    d2 = f64(d).reshape(rows, cols)
    return {"X@GRAD": like((d2 @ y2.T).reshape(x.shape), x),
            "Y@GRAD": like((x2.T @ d2).reshape(y.shape), y)}


def _sum_to(g, shape):
    """``g`` summed over its leading extra dims and the dims where ``shape`` has 1."""
    lead = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _matmul_grad(x, y, d, tx, ty, alpha):
    x, y, d = np.asarray(x), np.asarray(y), np.asarray(d)
    expected = _matmul(x, y, tx, ty, alpha).shape
    # A 0-D Out's gradient may come as one element of another rank ([1] in Fluid).
    if d.shape != expected and not (expected == () and d.size == 1):
        raise ValueError(f"Out@GRAD {d.shape} is not Out's {expected}")
    # Matrices: a 1-D X is a row [1, K], a 1-D Y a column [K, 1] (their flags ignored).
    a = f64(x)[None, :] if x.ndim == 1 else f64(x)
    b = f64(y)[:, None] if y.ndim == 1 else f64(y)
    tx, ty = tx and x.ndim > 1, ty and y.ndim > 1
    opa = np.swapaxes(a, -1, -2) if tx else a
    opb = np.swapaxes(b, -1, -2) if ty else b
    g = f64(d).reshape(np.matmul(opa, opb).shape)
    da = alpha * np.matmul(g, np.swapaxes(opb, -1, -2))      # d op(X)
    db = alpha * np.matmul(np.swapaxes(opa, -1, -2), g)      # d op(Y)
    da = np.swapaxes(da, -1, -2) if tx else da
    db = np.swapaxes(db, -1, -2) if ty else db
    return (like(_sum_to(da, a.shape).reshape(x.shape), x),
            like(_sum_to(db, b.shape).reshape(y.shape), y))


def matmul_grad(inputs, attrs):
    dx, dy = _matmul_grad(inputs["X"], inputs["Y"], inputs["Out@GRAD"],
                          attrs.get("transpose_X", False), attrs.get("transpose_Y", False),
                          fattr(attrs, "alpha", 1.0))
    return {"X@GRAD": dx, "Y@GRAD": dy}


def matmul_v2_grad(inputs, attrs):
    dx, dy = _matmul_grad(inputs["X"], inputs["Y"], inputs["Out@GRAD"],
                          attrs.get("trans_x", False), attrs.get("trans_y", False), 1.0)
    return {"X@GRAD": dx, "Y@GRAD": dy}


def _grad_sampler(op):
    forward = SAMPLES[op]

    def sample(rng, dtype):
        inputs, attrs = forward(rng, dtype)
        out = REFERENCES[op](inputs, attrs)["Out"]
        inputs["Out@GRAD"] = rng.standard_normal(out.shape).astype(dtype)
        return inputs, attrs
    return sample


SAMPLES.update({op + "_grad": _grad_sampler(op) for op in ("mul", "matmul", "matmul_v2")})
REFERENCES.update({"mul_grad": mul_grad, "matmul_grad": matmul_grad,
                   "matmul_v2_grad": matmul_v2_grad})
