"""Reference of conv2d: a direct loop over the filter taps (no im2col), in float64."""
import numpy as np

from ._util import attr, f64, four_pads, same_pads


def conv2d(inputs, attrs):
    x, w = inputs["Input"], inputs["Filter"]
    nhwc = attr(attrs, "data_format", "NCHW") == "NHWC"
    xd = f64(x).transpose(0, 3, 1, 2) if nhwc else f64(x)
    wd = f64(w)
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


REFERENCES = {"conv2d": conv2d}
SAMPLES = {"conv2d": sample_conv2d}
