"""layers.fill_constant_batch_size_like: the op it appends (Paddle's attributes, the value also
as text), the batch dim at build and run time, exact values, and argument errors."""
import numpy as np
import pytest

import headrace as hr
from headrace import LayerError
from headrace.runtime.tensor import create_lod_tensor
from headrace.testing import run_programs

L = hr.layers


def test_the_op_and_its_attributes(progs):
    main, startup = progs
    x = L.data("x", [-1, 3])
    out = L.fill_constant_batch_size_like(x, [-1, 4], "float32", 0.5, force_cpu=True)
    (op,) = [op for op in main.global_block().ops if op.type == "fill_constant_batch_size_like"]
    assert op.input("Input") == [x.name] and op.output("Out") == [out.name]
    assert op.attr("shape") == [-1, 4] and op.attr("dtype") == 5 and op.attr("value") == 0.5
    assert op.attr("str_value") == "0.5" and op.attr("force_cpu") is True
    assert (op.attr("input_dim_idx"), op.attr("output_dim_idx")) == (0, 0)
    assert (out.shape, out.dtype, out.stop_gradient) == ((-1, 4), "float32", True)


@pytest.mark.parametrize("dtype, value", [("float32", -1.25), ("float64", 0.1),
                                          ("int64", 2 ** 62 + 1), ("int64", 2.75)])
def test_batch_follows_the_input_and_values_are_exact(progs, dtype, value):
    main, startup = progs
    x = L.data("x", [-1, 3])
    out = L.fill_constant_batch_size_like(x, [2, -1, 1], dtype, value, input_dim_idx=0,
                                          output_dim_idx=1)
    assert out.shape == (2, -1, 1) and out.dtype == dtype
    for batch in (1, 5):
        (got,) = run_programs(main, startup, {"x": np.zeros((batch, 3), np.float32)}, [out])
        want = np.full((2, batch, 1), int(value) if dtype == "int64" else value, dtype)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)  # float64 0.1 is 0.1, not float32(0.1)


def test_static_input_dim_and_lod_sequences(progs):
    main, startup = progs
    x = L.data("x", [-1, 6])
    words = L.data("words", [-1, 1], dtype="int64", lod_level=1)
    by_width = L.fill_constant_batch_size_like(x, [-1, 2], "float32", 1.0, input_dim_idx=1)
    per_seq = L.fill_constant_batch_size_like(words, [-1, 3], "float32", 0.0)
    assert by_width.shape == (6, 2) and per_seq.shape == (-1, 3)
    ids = create_lod_tensor(np.arange(5, dtype=np.int64).reshape(5, 1), [[2, 0, 3]])
    a, b = run_programs(main, startup, {"x": np.zeros((4, 6), np.float32), "words": ids},
                        [by_width, per_seq])
    assert a.shape == (6, 2) and b.shape == (3, 3)  # three sequences, not five rows


@pytest.mark.parametrize("call, message", [
    (lambda x: L.fill_constant_batch_size_like("x", [-1], "float32", 0.0),
     "fill_constant_batch_size_like: argument 'input'"),
    (lambda x: L.fill_constant_batch_size_like(x, [-1, -2], "float32", 0.0),
     "fill_constant_batch_size_like: argument 'shape'"),
    (lambda x: L.fill_constant_batch_size_like(x, [-1], "floaty", 0.0),
     "fill_constant_batch_size_like: argument 'dtype'"),
    (lambda x: L.fill_constant_batch_size_like(x, [-1], "float32", "0"),
     "fill_constant_batch_size_like: argument 'value'"),
    (lambda x: L.fill_constant_batch_size_like(x, [-1], "int64", float("inf")),
     "fill_constant_batch_size_like: argument 'value' inf cannot be stored in int64"),
    (lambda x: L.fill_constant_batch_size_like(x, [-1], "float32", 0.0, input_dim_idx=-1),
     "fill_constant_batch_size_like: argument 'input_dim_idx' must be >= 0"),
])
def test_argument_errors(progs, call, message):
    x = L.data("x", [-1, 3])
    with pytest.raises(LayerError, match=message):
        call(x)


@pytest.mark.parametrize("attr, value, message", [
    ("input_dim_idx", 2, "attribute 'input_dim_idx' must name a dim of input 'Input'"),
    ("output_dim_idx", 1, "attribute 'output_dim_idx' must name a dim of attribute 'shape'"),
])
def test_dim_indices_out_of_range_name_the_op_and_attribute(progs, attr, value, message):
    x = L.data("x", [-1, 3])
    with pytest.raises(hr.HeadraceError, match=message) as info:
        L.fill_constant_batch_size_like(x, [-1], "float32", 0.0, **{attr: value})
    assert "fill_constant_batch_size_like" in str(info.value)
