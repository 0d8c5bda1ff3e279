"""Reference of pool2d: a loop over the output positions with explicit window bounds."""
import math

import numpy as np

from ._util import attr, f64, four_pads, same_pads


def _windows(size, out, k, stride, pad, adaptive):
    """[(start, end)] of the real input cells of each window along one axis."""
    spans = []
    for i in range(out):
        if adaptive:
            a, b = math.floor(i * size / out), math.ceil((i + 1) * size / out)
        else:
            a = i * stride - pad
            b = a + k
        spans.append((min(max(a, 0), size), max(min(b, size), min(max(a, 0), size))))
    return spans


def _plan(x, attrs):
    """(NCHW float64 X, nhwc, is_max, exclusive, area, row windows, column windows)."""
    nhwc = attr(attrs, "data_format", "NCHW") == "NHWC"
    xd = f64(x).transpose(0, 3, 1, 2) if nhwc else f64(x)
    n, c, h, w = xd.shape
    kh, kw = attr(attrs, "ksize", None)
    sh, sw = attr(attrs, "strides", [1, 1])
    pt, pb, pl, pr = four_pads(attr(attrs, "paddings", [0, 0]))
    is_max = attr(attrs, "pooling_type", "max") == "max"
    adaptive = attr(attrs, "adaptive", False)
    exclusive = attr(attrs, "exclusive", True) or adaptive
    glob = attr(attrs, "global_pooling", False)
    if adaptive:
        ho, wo = (h, w) if glob else (kh, kw)
        pt = pl = 0
    elif glob:
        ho = wo = 1
        kh, kw, pt, pl = h, w, 0, 0
    else:
        algorithm = attr(attrs, "padding_algorithm", "EXPLICIT")
        if algorithm == "VALID":
            pt = pb = pl = pr = 0
        elif algorithm == "SAME":
            (pt, pb), (pl, pr) = same_pads(h, sh, kh), same_pads(w, sw, kw)
        ceil = attr(attrs, "ceil_mode", False)
        ho = (h - kh + pt + pb + (sh - 1 if ceil else 0)) // sh + 1
        wo = (w - kw + pl + pr + (sw - 1 if ceil else 0)) // sw + 1
        if ho <= 0 or wo <= 0:
            raise ValueError("the window does not fit the padded input")
    return (xd, nhwc, is_max, exclusive, kh * kw, _windows(h, ho, kh, sh, pt, adaptive),
            _windows(w, wo, kw, sw, pl, adaptive))


def pool2d(inputs, attrs):
    x = inputs["X"]
    xd, nhwc, is_max, exclusive, area, rows, cols = _plan(x, attrs)
    out = np.zeros(xd.shape[:2] + (len(rows), len(cols)))
    for oy, (y0, y1) in enumerate(rows):
        for ox, (x0, x1) in enumerate(cols):
            win = xd[:, :, y0:y1, x0:x1]
            if win.size == 0:
                continue  # a window of padding only: 0
            if is_max:
                out[:, :, oy, ox] = win.max(axis=(2, 3))
            else:
                div = (y1 - y0) * (x1 - x0) if exclusive else area
                out[:, :, oy, ox] = win.sum(axis=(2, 3)) / div
    if nhwc:
        out = out.transpose(0, 2, 3, 1)
    return {"Out": out.astype(x.dtype)}


def sample_pool2d(rng, dtype):
    x = rng.standard_normal((2, 3, 7, 6)).astype(dtype)
    attrs = {"pooling_type": "avg", "ksize": [3, 2], "strides": [2, 2], "paddings": [1, 1],
             "exclusive": False, "ceil_mode": True}
    return {"X": x}, attrs


def pool2d_grad(inputs, attrs):
    """Per window: max gives its Out@GRAD to the first maximum in row-major order (argmax of
    the flattened window); avg divides it as the forward divides the sum."""
    x = inputs["X"]
    xd, nhwc, is_max, exclusive, area, rows, cols = _plan(x, attrs)
    n, c = xd.shape[:2]
    want = (n, len(rows), len(cols), c) if nhwc else (n, c, len(rows), len(cols))
    for slot in ("Out", "Out@GRAD"):
        if inputs[slot].shape != want:
            raise ValueError(f"{slot} {inputs[slot].shape} is not the pooled shape {want}")
    g = f64(inputs["Out@GRAD"])
    g = g.transpose(0, 3, 1, 2) if nhwc else g
    dx = np.zeros_like(xd)
    for oy, (y0, y1) in enumerate(rows):
        for ox, (x0, x1) in enumerate(cols):
            if y1 <= y0 or x1 <= x0:
                continue
            if is_max:
                win = xd[:, :, y0:y1, x0:x1].reshape(n, c, -1)
                first = win.argmax(axis=2)
                dy_, dx_ = np.divmod(first, x1 - x0)
                for i in range(n):
                    for k in range(c):
                        dx[i, k, y0 + dy_[i, k], x0 + dx_[i, k]] += g[i, k, oy, ox]
            else:
                div = (y1 - y0) * (x1 - x0) if exclusive else area
                dx[:, :, y0:y1, x0:x1] += (g[:, :, oy, ox] / div)[:, :, None, None]
    if nhwc:
        dx = dx.transpose(0, 2, 3, 1)
    return {"X@GRAD": dx.astype(x.dtype)}


def sample_pool2d_grad(rng, dtype):
    x = rng.standard_normal((2, 3, 7, 6)).astype(dtype)
    x[0, 0, :2, :2] = 1.5   # a tie in one window: the first maximum takes the gradient
    attrs = {"pooling_type": "max", "ksize": [3, 2], "strides": [2, 2], "paddings": [1, 1],
             "ceil_mode": True}
    out = pool2d({"X": x}, attrs)["Out"]
    return {"X": x, "Out": out, "Out@GRAD": rng.standard_normal(out.shape).astype(dtype)}, attrs


REFERENCES = {"pool2d": pool2d, "pool2d_grad": pool2d_grad}
SAMPLES = {"pool2d": sample_pool2d, "pool2d_grad": sample_pool2d_grad}
