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
    return like(np.reshape(out, np.shape(out) or (1,)), x)   # vector . vector is [1]


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
