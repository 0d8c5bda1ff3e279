"""pool2d: output-size formula against independent computations, global/adaptive, errors."""
import itertools
import math

import numpy as np
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


def pool(x, dtype="float32", **attrs):
    attrs.setdefault("pooling_type", "max")
    return infer_shapes("pool2d", {"X": (x, dtype)}, attrs=attrs)["Out"][0]


def reference(size, k, stride, pads, ceil_mode):
    """Floor: count the windows over the padded line. Ceil: the textbook ceil formula."""
    length = size + pads[0] + pads[1]
    if length < k:
        return 0
    if ceil_mode:
        return math.ceil((length - k) / stride) + 1
    return np.lib.stride_tricks.sliding_window_view(np.zeros(length), k)[::stride].shape[0]


# Each grid point sets H; W keeps a fixed, different setting (ksize 2, stride 2, pads 0/1).
W_SIZE = 9
GRID = list(itertools.product((5, 8, 13), (1, 2, 3), (1, 2, 3),
                              ((0, 0), (1, 1), (1, 0), (0, 2)), (False, True)))


@pytest.mark.parametrize("size, k, stride, pads, ceil_mode", GRID)
def test_output_size_matches_reference(size, k, stride, pads, ceil_mode):
    want = reference(size, k, stride, pads, ceil_mode)
    w_out = reference(W_SIZE, 2, 2, (0, 1), ceil_mode)
    attrs = dict(ksize=[k, 2], strides=[stride, 2], paddings=[pads[0], pads[1], 0, 1],
                 ceil_mode=ceil_mode)
    if want <= 0:
        with pytest.raises(ShapeError, match=r"height .* is smaller than the window"):
            pool([2, 3, size, W_SIZE], **attrs)
    else:
        assert pool([2, 3, size, W_SIZE], **attrs) == ((2, 3, want, w_out), "float32")


@pytest.mark.parametrize("size, k, stride", [(s, k, st) for s, k, st, p, c in GRID
                                             if p == (0, 0) and not c])
def test_same_and_valid_padding(size, k, stride):
    attrs = dict(ksize=[k, k], strides=[stride, stride], paddings=[3, 3])
    same = pool([1, 3, size, size], padding_algorithm="SAME", **attrs)
    assert same[0] == (1, 3, math.ceil(size / stride), math.ceil(size / stride))
    want = reference(size, k, stride, (0, 0), False)
    valid = pool([1, 3, size, size], padding_algorithm="VALID", **attrs)
    assert valid[0] == (1, 3, want, want)


@pytest.mark.parametrize("x, attrs, want", [
    ([4, 3, 7, 9], {"global_pooling": True}, (4, 3, 1, 1)),
    ([-1, 3, -1, -1], {"global_pooling": True, "paddings": [2, 2]}, (-1, 3, 1, 1)),
    ([4, 7, 9, 3], {"global_pooling": True, "data_format": "NHWC"}, (4, 1, 1, 3)),
    ([4, 3, 7, 9], {"adaptive": True, "ksize": [3, 4]}, (4, 3, 3, 4)),
    ([4, 3, -1, -1], {"adaptive": True, "ksize": [1, 1]}, (4, 3, 1, 1)),
    ([4, 3, 7, 9], {"adaptive": True, "global_pooling": True}, (4, 3, 7, 9)),
    ([-1, 3, 8, 8], {}, (-1, 3, 7, 7)),
    ([-1, 3, -1, 8], {}, (-1, 3, -1, 7)),
    ([-1, -1, 8, 8], {}, (-1, -1, 7, 7)),
    ([2, 8, 8, 3], {"data_format": "NHWC"}, (2, 7, 7, 3)),
    ([2, 3, 8, 8], {"data_format": "AnyLayout"}, (2, 3, 7, 7)),
])
def test_global_adaptive_layouts_and_unknown_dims(x, attrs, want):
    attrs.setdefault("ksize", [2, 2])
    assert pool(x, **attrs) == (want, "float32")


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_out_dtype_and_lod_follow_x(dtype):
    prog, op = build_op("pool2d", {"X": ([-1, 3, 8, 8], dtype, 1)},
                        attrs={"pooling_type": "avg", "ksize": [2, 2]})
    out = prog.global_block().var(op.output("Out")[0])
    assert (out.dtype, out.lod_level) == (dtype, 1)


@pytest.mark.parametrize("x, attrs, match", [
    ([2, 3, 8], {"ksize": [2, 2]}, r"input 'X' \(x_0\) has the wrong rank"),
    ([2, 3, 1, 8], {"ksize": [3, 3]}, r"X \(x_0\) height \(1\) is smaller than the window"),
    ([2, 3, 8, 2], {"ksize": [2, 4], "paddings": [0, 0, 1, 0]},
     r"width \(2\) is smaller than the window \(4\) plus padding \(1\+0\)"),
])
def test_shape_errors(x, attrs, match):
    with pytest.raises(ShapeError, match=match):
        pool(x, **attrs)


MAX2 = {"pooling_type": "max", "ksize": [2, 2]}


@pytest.mark.parametrize("attrs, match", [
    ({"ksize": [2, 2]}, r"missing required attribute 'pooling_type'"),
    ({"pooling_type": "avg"}, r"missing required attribute 'ksize'"),
    ({**MAX2, "pooling_type": "sum"}, r"'pooling_type' must be one of \['max', 'avg'\]"),
    ({**MAX2, "ksize": [2]}, r"'ksize' must hold 2 values"),
    ({**MAX2, "ksize": [0, 2]}, r"'ksize' values must be >= 1"),
    ({**MAX2, "strides": [2, 0]}, r"'strides' values must be >= 1"),
    ({**MAX2, "paddings": [1, 1, 1]}, r"'paddings' must hold 2 or 4 values"),
    ({**MAX2, "data_format": "NCDHW"}, r"'data_format' must be one of"),
    ({**MAX2, "padding_algorithm": "same"}, r"'padding_algorithm' must be one of"),
])
def test_attribute_errors(attrs, match):
    with pytest.raises(OpValidationError, match=match):
        infer_shapes("pool2d", {"X": ([1, 3, 8, 8], "float32")}, attrs=attrs)


def test_integer_input_is_rejected():
    with pytest.raises(OpValidationError, match=r"input 'X' \(x_0\) has an unsupported dtype"):
        pool([1, 3, 8, 8], dtype="int64", ksize=[2, 2])
