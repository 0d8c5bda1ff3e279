"""Reference of sequence_conv and its gradient: the context of each row built by loops over
the sequences and the window (positions outside a sequence read zeros, or PaddingData's rows
when paddingTrainable), then plain matrix products in float64."""
import numpy as np

from headrace.runtime import Tensor

from ._util import attr, f64


def _setting(inputs, attrs):
    """(X, its offsets, PaddingData or None, contextStart, contextLength), checked as Paddle
    checks them."""
    x = inputs["X"]
    if attr(attrs, "contextStride", 1) != 1:
        raise ValueError("sequence_conv: only contextStride 1")
    if not getattr(x, "lod", None) or len(x.lod) != 1:
        raise ValueError("sequence_conv: X must have exactly one LoD level")
    data = f64(x.data)
    start, length = attr(attrs, "contextStart", 0), attrs["contextLength"]
    if data.ndim != 2 or length < 1 or start + length < 1:
        raise ValueError("sequence_conv: X must be 2-D, contextLength > 0, the window must "
                         "reach the row (contextStart + contextLength >= 1)")
    off = [int(v) for v in x.lod[0]]
    if off[0] != 0 or off[-1] != data.shape[0] or any(b < a for a, b in zip(off, off[1:])):
        raise ValueError("sequence_conv: bad LoD")
    pad = None
    if attr(attrs, "paddingTrainable", False):
        up, down = max(0, -start), max(0, start + length - 1)
        pad = f64(np.asarray(getattr(inputs.get("PaddingData"), "data",
                                     inputs.get("PaddingData"))))
        if (start == 0 and length == 1) or pad.shape != (up + down, data.shape[1]):
            raise ValueError("sequence_conv: PaddingData must be [up + down, D]")
    return data, off, pad, start, length


def _sources(off, start, length):
    """Per (row, window slot): ("x", row of X) or ("pad", row of PaddingData), or None for a
    zero; Paddle's ContextProjectFunctor: position p = row + start + slot of its sequence."""
    up = max(0, -start)
    for b, e in zip(off, off[1:]):
        h = e - b
        for r in range(h):
            for j in range(length):
                p = r + start + j
                if 0 <= p < h:
                    yield b + r, j, ("x", b + p)
                elif p < 0:
                    yield b + r, j, ("pad", up + p)          # up-padding rows first
                else:
                    yield b + r, j, ("pad", up + p - h)      # then down-padding rows


def _col(data, off, pad, start, length):
    d = data.shape[1]
    col = np.zeros((data.shape[0], length * d))
    for row, j, (kind, k) in _sources(off, start, length):
        if kind == "x":
            col[row, j * d:(j + 1) * d] = data[k]
        elif pad is not None:
            col[row, j * d:(j + 1) * d] = pad[k]
    return col


def _filter(inputs, data, length):
    w = f64(np.asarray(getattr(inputs["Filter"], "data", inputs["Filter"])))
    if w.ndim != 2 or w.shape[0] != length * data.shape[1]:
        raise ValueError("sequence_conv: Filter must be [contextLength * D, M]")
    return w


def sequence_conv(inputs, attrs):
    data, off, pad, start, length = _setting(inputs, attrs)
    w = _filter(inputs, data, length)
    out = _col(data, off, pad, start, length) @ w
    return {"Out": Tensor(out.astype(np.asarray(inputs["X"].data).dtype), inputs["X"].lod)}


def sequence_conv_grad(inputs, attrs):
    data, off, pad, start, length = _setting(inputs, attrs)
    w = _filter(inputs, data, length)
    dtype = np.asarray(inputs["X"].data).dtype
    g = f64(np.asarray(getattr(inputs["Out@GRAD"], "data", inputs["Out@GRAD"])))
    if g.shape != (data.shape[0], w.shape[1]):
        raise ValueError("sequence_conv_grad: Out@GRAD must be [T, M]")
    d = data.shape[1]
    dcol = g @ w.T
    dx = np.zeros_like(data)
    dpad = None if pad is None else np.zeros_like(pad)
    for row, j, (kind, k) in _sources(off, start, length):
        piece = dcol[row, j * d:(j + 1) * d]
        if kind == "x":
            dx[k] += piece
        elif dpad is not None:
            dpad[k] += piece
    result = {"X@GRAD": Tensor(dx.astype(dtype), inputs["X"].lod),
              "Filter@GRAD": (_col(data, off, pad, start, length).T @ g).astype(dtype)}
    if dpad is not None:
        result["PaddingData@GRAD"] = dpad.astype(dtype)
    return result


def sample_sequence_conv(rng, dtype):
    # Sequences of 3, 0, 1 and 4 rows; a window of 4 from -2: two up-padding rows and one
    # down-padding row, learned.
    x = Tensor(rng.standard_normal((8, 3)).astype(dtype), [[0, 3, 3, 4, 8]])
    return {"X": x, "PaddingData": rng.standard_normal((3, 3)).astype(dtype),
            "Filter": rng.standard_normal((12, 2)).astype(dtype)}, \
        {"contextLength": 4, "contextStart": -2, "paddingTrainable": True}


def sample_sequence_conv_grad(rng, dtype):
    inputs, attrs = sample_sequence_conv(rng, dtype)
    return dict(inputs, **{"Out@GRAD": rng.standard_normal((8, 2)).astype(dtype)}), attrs


REFERENCES = {"sequence_conv": sequence_conv, "sequence_conv_grad": sequence_conv_grad}
SAMPLES = {"sequence_conv": sample_sequence_conv,
           "sequence_conv_grad": sample_sequence_conv_grad}
