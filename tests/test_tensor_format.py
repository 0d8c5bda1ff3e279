"""Fetched tensors (``Executor.run(..., return_numpy=False)``) carry their LoD and show it:
``repr`` gives shape, dtype and LoD on one line, ``str`` Paddle's LoDTensor text (LoD, place,
shape, dtype, the first 20 values). The expected texts are written out by hand."""
import numpy as np

import headrace as hr
from headrace.runtime import Tensor
from headrace.runtime.tensor_format import format_values


def test_fetch_without_numpy_keeps_lod_and_shows_it():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 1], dtype="int64", lod_level=1)
        y = hr.layers.scale(x, scale=2.0)
    (t,) = hr.Executor().run(main, feed={"x": [[1, 2], [3, 4, 5]]}, fetch_list=[y],
                             scope=hr.Scope(), return_numpy=False)
    assert isinstance(t, Tensor) and t.lod == [[0, 2, 5]]
    assert t.recursive_sequence_lengths() == [[2, 3]]
    assert repr(t) == "Tensor(shape=[5, 1], dtype=int64, lod=[[0, 2, 5]])"
    assert str(t) == ("  - lod: {{0, 2, 5}}\n  - place: CPUPlace()\n  - shape: [5, 1]\n"
                      "  - dtype: int64\n  - data: [2 4 6 8 10]\n")
    np.testing.assert_array_equal(np.asarray(t), [[2], [4], [6], [8], [10]])


def test_str_summarizes_to_twenty_values_and_shows_an_empty_lod():
    t = Tensor(np.arange(30, dtype=np.float64).reshape(5, 6) / 4)
    assert repr(t) == "Tensor(shape=[5, 6], dtype=float64)"
    assert str(t).splitlines()[0] == "  - lod: {}"
    assert str(t).splitlines()[-1] == "  - data: [" + " ".join(
        ["0", "0.25", "0.5", "0.75", "1", "1.25", "1.5", "1.75", "2", "2.25", "2.5", "2.75",
         "3", "3.25", "3.5", "3.75", "4", "4.25", "4.5", "4.75"]) + "]"


def test_values_are_written_as_cpp_streams_write_them():
    assert format_values(np.array([123456789.0, 1e-5, -0.0, 2.5e16], np.float64), -1) == \
        "1.23457e+08 1e-05 -0 2.5e+16"
    assert format_values(np.array([1, 2, 3], np.uint8), 2) == "1 2"
    assert format_values(np.array([1 + 2j], np.complex64), -1) == "(1+2j)"
