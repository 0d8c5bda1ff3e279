"""sequence_conv and its gradient on CUDAPlace (Numba's simulator without a GPU) against the
CPU kernel: windows before, around and after the row, trainable padding, empty sequences and
sequences shorter than the window, every gradient. Shapes stay tiny: the simulator runs each
thread in Python."""
from functools import partial

import numpy as np
import pytest

from headrace.runtime import Tensor
from headrace.testing.parity import same_on_cpu_and_cuda

pytestmark = pytest.mark.cuda


_same = partial(same_on_cpu_and_cuda, tol=1e-10)


@pytest.mark.parametrize("start, length, trainable", [(-1, 3, False), (-2, 3, True),
                                                      (0, 2, True), (1, 2, False)])
def test_sequence_conv_and_grad(start, length, trainable):
    rng = np.random.default_rng(0)
    D, M = 2, 3
    lod = [[0, 1, 1, 5, 7]]                    # a row shorter than the window, an empty one
    x = Tensor(rng.standard_normal((7, D)), lod)
    up, down = max(0, -start), max(0, start + length - 1)
    pad = rng.standard_normal((up + down, D)) if trainable else None
    filt = rng.standard_normal((length * D, M))
    attrs = {"contextStart": start, "contextLength": length, "paddingTrainable": trainable}
    ins = {"X": x, "PaddingData": pad, "Filter": filt}
    _same("sequence_conv", ins, ["Out"], attrs)
    grads = ["X@GRAD", "Filter@GRAD"] + (["PaddingData@GRAD"] if trainable else [])
    _same("sequence_conv_grad", {**ins, "Out@GRAD": rng.standard_normal((7, M))}, grads, attrs)


def test_sequence_conv_float32_and_no_rows():
    rng = np.random.default_rng(1)
    attrs = {"contextStart": -1, "contextLength": 3}
    x = Tensor(rng.standard_normal((5, 2)).astype("float32"), [[0, 2, 5]])
    filt = rng.standard_normal((6, 4)).astype("float32")
    _same("sequence_conv", {"X": x, "Filter": filt}, ["Out"], attrs, tol=1e-5)
    x0 = Tensor(np.zeros((0, 2)), [[0, 0]])
    _same("sequence_conv_grad", {"X": x0, "Filter": filt.astype("float64"),
                                 "Out@GRAD": np.zeros((0, 4))}, ["X@GRAD", "Filter@GRAD"],
          attrs)
