"""Reference of conv2d: a direct loop over the filter taps (no im2col), in float64."""
import numpy as np

from ._util import attr, f64, four_pads, same_pads


def _geometry(xd, wd, attrs):
    """(groups, strides, dilations, [top, bottom, left, right] pads, (Ho, Wo)) for NCHW xd."""
    n, c, h, wid = xd.shape
    m, cg, kh, kw = wd.shape
    groups = attr(attrs, "groups", 1)
    if c != cg * groups or m % groups:
        raise ValueError(f"channels {c} / filters {m} do not fit groups={groups}")
    sh, sw = attr(attrs, "strides", [1, 1])
    dh, dw = attr(attrs, "dilations", [1, 1])
    pt, pb, pl, pr = four_pads(attr(attrs, "paddings", [0, 0]))
    algorithm = attr(attrs, "padding_algorithm", "EXPLICIT")
    if algorithm == "VALID":
        pt = pb = pl = pr = 0
    elif algorithm == "SAME":
        dh = dw = 1
        (pt, pb), (pl, pr) = same_pads(h, sh, kh), same_pads(wid, sw, kw)
    ho = (h + pt + pb - (dh * (kh - 1) + 1)) // sh + 1
    wo = (wid + pl + pr - (dw * (kw - 1) + 1)) // sw + 1
    if ho <= 0 or wo <= 0:
        raise ValueError("the dilated filter does not fit the padded input")
    return groups, (sh, sw), (dh, dw), (pt, pb, pl, pr), (ho, wo)


def conv2d(inputs, attrs):
    x, w = inputs["Input"], inputs["Filter"]
    nhwc = attr(attrs, "data_format", "NCHW") == "NHWC"
    xd = f64(x).transpose(0, 3, 1, 2) if nhwc else f64(x)
    wd = f64(w)
    n, c, h, wid = xd.shape
    m, cg, kh, kw = wd.shape
    groups, (sh, sw), (dh, dw), (pt, pb, pl, pr), (ho, wo) = _geometry(xd, wd, attrs)
    xp = np.pad(xd, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    out = np.zeros((n, m, ho, wo))
    mg = m // groups
    for g in range(groups):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = wd[g * mg:(g + 1) * mg]
        for i in range(kh):
            for j in range(kw):
                # The input pixels tap (i, j) meets at every output position.
                tap = xg[:, :, i * dh:i * dh + (ho - 1) * sh + 1:sh,
                         j * dw:j * dw + (wo - 1) * sw + 1:sw]
                out[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", tap, wg[:, :, i, j])
    if inputs.get("Bias") is not None:
        out += f64(inputs["Bias"]).reshape(1, m, 1, 1)
    if nhwc:
        out = out.transpose(0, 2, 3, 1)
    if inputs.get("ResidualData") is not None:
        out = out + f64(inputs["ResidualData"])
    return {"Output": out.astype(x.dtype)}


def sample_conv2d(rng, dtype):
    x = rng.standard_normal((2, 4, 7, 6)).astype(dtype)
    w = (rng.standard_normal((6, 2, 3, 2)) * 0.5).astype(dtype)
    attrs = {"strides": [2, 1], "paddings": [1, 0, 2, 1], "dilations": [1, 2], "groups": 2}
    return {"Input": x, "Filter": w}, attrs


def conv2d_grad(inputs, attrs):
    """The adjoint of the tap loop above: each tap's slice of the padded input receives
    Filter^T @ Output@GRAD, and the filter tap the products of those slices with it."""
    x, w, dout = inputs["Input"], inputs["Filter"], inputs["Output@GRAD"]
    nhwc = attr(attrs, "data_format", "NCHW") == "NHWC"
    xd = f64(x).transpose(0, 3, 1, 2) if nhwc else f64(x)
    wd = f64(w)
    n, c, h, wid = xd.shape
    m, cg, kh, kw = wd.shape
    groups, (sh, sw), (dh, dw), (pt, pb, pl, pr), (ho, wo) = _geometry(xd, wd, attrs)
    g_out = f64(dout).transpose(0, 3, 1, 2) if nhwc else f64(dout)
    if g_out.shape != (n, m, ho, wo):
        raise ValueError(f"Output@GRAD {dout.shape} does not fit the output {(n, m, ho, wo)}")
    xp = np.pad(xd, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    dxp = np.zeros_like(xp)
    dwd = np.zeros_like(wd)
    mg = m // groups
    for g in range(groups):
        cs, ms = slice(g * cg, (g + 1) * cg), slice(g * mg, (g + 1) * mg)
        for i in range(kh):
            for j in range(kw):
                win = (slice(None), cs, slice(i * dh, i * dh + (ho - 1) * sh + 1, sh),
                       slice(j * dw, j * dw + (wo - 1) * sw + 1, sw))
                dxp[win] += np.einsum("nmhw,mc->nchw", g_out[:, ms], wd[ms, :, i, j])
                dwd[ms, :, i, j] += np.einsum("nmhw,nchw->mc", g_out[:, ms], xp[win])
    dx = dxp[:, :, pt:pt + h, pl:pl + wid]
    if nhwc:
        dx = dx.transpose(0, 2, 3, 1)
    return {"Input@GRAD": dx.astype(x.dtype), "Filter@GRAD": dwd.astype(w.dtype),
            "Bias@GRAD": g_out.sum(axis=(0, 2, 3)).astype(x.dtype),
            "ResidualData@GRAD": f64(dout).astype(x.dtype)}


def sample_conv2d_grad(rng, dtype):
    inputs, attrs = sample_conv2d(rng, dtype)
    out = conv2d(inputs, attrs)["Output"]
    return {**inputs, "Output@GRAD": rng.standard_normal(out.shape).astype(dtype)}, attrs


REFERENCES = {"conv2d": conv2d, "conv2d_grad": conv2d_grad}
SAMPLES = {"conv2d": sample_conv2d, "conv2d_grad": sample_conv2d_grad}
