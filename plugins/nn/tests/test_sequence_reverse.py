"""sequence_reverse: each sequence's rows reversed (empty sequences, two LoD levels, any
dtype), its gradient ("sequence_reverse" on the output's gradient) against finite
differences, and errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import program_gradients, run_op


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
def test_reverses_each_sequence(dtype):
    x = np.arange(14).reshape(7, 2).astype(dtype)
    (y,) = run_op("sequence_reverse", {"X": Tensor(x, [[0, 2, 4], [0, 3, 3, 5, 7]])})["Y"]
    want = np.concatenate([x[0:3][::-1], x[5:7][::-1]])
    want = np.concatenate([want[:3], x[3:5][::-1], want[3:]])
    np.testing.assert_array_equal(np.asarray(y.data), want)
    assert y.lod == [[0, 2, 4], [0, 3, 3, 5, 7]]


def test_gradient_is_the_reverse_of_the_output_gradient():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[3], dtype="float64", lod_level=1)
        x.stop_gradient = False
        y = layers.sequence_reverse(x)
        w = layers.create_parameter([3], "float64", name="w")
        loss = layers.mean(layers.elementwise_mul(layers.elementwise_mul(y, w),
                                                  layers.scale(x, scale=2.0, bias=1.0)))
        hr.gradients(loss, [x, w])
    types = [op.type for op in main.global_block().ops]
    assert types.count("sequence_reverse") == 2  # forward, and its gradient
    feed = {"x": create_lod_tensor(np.random.default_rng(0).standard_normal((6, 3)),
                                   [[2, 0, 4]])}
    analytic, numeric = program_gradients(main, startup, loss, ["x", "w"], feed)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_without_lod_is_a_clear_error():
    # At build time the shape rule says so; at run time (a LoD variable fed without LoD) the
    # kernel does.
    with pytest.raises(hr.HeadraceError, match=r"X \(x_0\) must be a sequence batch"):
        run_op("sequence_reverse", {"X": np.zeros((3, 2))})
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        y = layers.sequence_reverse(layers.data("x", shape=[2], dtype="float32", lod_level=1))
    with pytest.raises(hr.HeadraceError, match="sequence_reverse: X must be a batch of "
                                               "sequences"):
        hr.Executor().run(main, feed={"x": np.zeros((3, 2), np.float32)}, fetch_list=[y],
                          scope=hr.Scope())
