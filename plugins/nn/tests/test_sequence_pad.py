"""sequence_pad / sequence_unpad: padding (a value or a row, padded_length), lengths, the
round trip, gradients of "sequence_pad" and "sequence_unpad" against finite differences, and
errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import layers
from headrace.runtime.tensor import Tensor, create_lod_tensor
from headrace.testing import program_gradients, run_op


def test_pad_and_unpad_round_trip():
    x = Tensor(np.arange(12.0).reshape(6, 2), [[0, 2, 2, 6]])
    res = run_op("sequence_pad", {"X": x, "PadValue": np.array([-1.0])},
                 attrs={"padded_length": 5})
    out, length = (np.asarray(res[k][0].data) for k in ("Out", "Length"))
    assert out.shape == (3, 5, 2) and length.tolist() == [2, 0, 4]
    np.testing.assert_array_equal(out[0, :2], x.data[:2])
    assert (out[0, 2:] == -1).all() and (out[1] == -1).all() and (out[2, 4] == -1).all()
    (back,) = run_op("sequence_unpad", {"X": out, "Length": length})["Out"]
    np.testing.assert_array_equal(np.asarray(back.data), x.data)
    assert back.lod == [[0, 2, 2, 6]]


def test_gradients_through_pad_and_unpad():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[2], dtype="float64", lod_level=1)
        x.stop_gradient = False
        pad = layers.fill_constant([1], "float64", 0.5)
        padded, length = layers.sequence_pad(x, pad)
        w = layers.create_parameter([2], "float64", name="w")
        y = layers.sequence_unpad(layers.elementwise_mul(layers.tanh(padded), w), length)
        loss = layers.mean(layers.elementwise_mul(y, y))
        hr.gradients(loss, [x, w])
    feed = {"x": create_lod_tensor(np.random.default_rng(0).standard_normal((5, 2)),
                                   [[3, 0, 2]])}
    analytic, numeric = program_gradients(main, startup, loss, ["x", "w"], feed)
    for n in analytic:
        np.testing.assert_allclose(analytic[n], numeric[n], rtol=1e-6, atol=1e-8, err_msg=n)


def test_errors():
    x = Tensor(np.zeros((4, 2)), [[0, 4]])
    with pytest.raises(hr.HeadraceError, match="does not fit padded_length 3"):
        run_op("sequence_pad", {"X": x, "PadValue": np.array([0.0])},
               attrs={"padded_length": 3})
    with pytest.raises(hr.HeadraceError, match="one length in \\[0, 4\\] per sequence"):
        run_op("sequence_unpad", {"X": np.zeros((2, 4, 1)), "Length": np.array([5, 1])})


def test_lod_reset_and_lod_append_layers():
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[2], dtype="float64", lod_level=1)
        plain = layers.data("plain", shape=[2], dtype="float64")
        a = layers.lod_reset(x, target_lod=[0, 1, 4])
        b = layers.lod_append(plain, [0, 3, 4])
    feed = {"x": create_lod_tensor(np.arange(8.0).reshape(4, 2), [[2, 2]]),
            "plain": np.arange(8.0).reshape(4, 2)}
    ta, tb = hr.Executor().run(main, feed=feed, fetch_list=[a, b], scope=hr.Scope(),
                               return_numpy=False)
    assert ta.lod == [[0, 1, 4]] and tb.lod == [[0, 3, 4]]
    with pytest.raises(hr.HeadraceError, match="give y .* or target_lod"):
        with hr.program_guard(hr.Program(), hr.Program()):
            layers.lod_reset(layers.data("z", shape=[1], dtype="float32"))


def test_sequence_slice_and_its_gradient():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = layers.data("x", shape=[2], dtype="float64", lod_level=1)
        x.stop_gradient = False
        off = layers.data("off", shape=[1], dtype="int64")
        n = layers.data("n", shape=[1], dtype="int64")
        y = layers.sequence_slice(x, off, n)
        loss = layers.mean(layers.elementwise_mul(y, layers.tanh(y)))
        hr.gradients(loss, [x])
    data = np.random.default_rng(2).standard_normal((7, 2))
    feed = {"x": create_lod_tensor(data, [[3, 0, 4]]), "off": np.array([[1], [0], [2]]),
            "n": np.array([[2], [0], [1]])}
    (got,) = hr.Executor().run(main, feed=feed, fetch_list=[y], scope=hr.Scope(),
                               return_numpy=False)
    np.testing.assert_array_equal(np.asarray(got), data[[1, 2, 5]])
    assert got.lod == [[0, 2, 2, 3]]
    analytic, numeric = program_gradients(main, startup, loss, ["x"], feed)
    np.testing.assert_allclose(analytic["x"], numeric["x"], rtol=1e-6, atol=1e-8)
    with pytest.raises(hr.HeadraceError, match="sequence 2 has 4 rows; Offset 3 and Length 2"):
        hr.Executor().run(main, feed=dict(feed, off=np.array([[1], [0], [3]]),
                                          n=np.array([[2], [0], [2]])),
                          fetch_list=[y], scope=hr.Scope())
