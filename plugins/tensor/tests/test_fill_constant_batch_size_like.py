"""fill_constant_batch_size_like: the batch dim from the reference (rows, or sequences with
LoD), the shape rule at build time, dtypes, and errors naming the attribute."""
import numpy as np
import pytest

import headrace as hr
from headrace import dtypes as dt
from headrace.runtime.tensor import create_lod_tensor


def _program(ref_shape, shape, dtype="float32", lod_level=0, **attrs):
    prog = hr.Program()
    g = prog.global_block()
    ref = g.create_var(name="ref", shape=ref_shape, dtype="float32", lod_level=lod_level,
                       need_check_feed=True)
    op = g.append_op("fill_constant_batch_size_like", {"Input": ref}, {"Out": "out"},
                     {"shape": shape, "dtype": dt.to_proto(dtype), **attrs})
    return prog, g.var(op.output("Out")[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_batch_from_the_reference_rows(dtype):
    prog, out = _program([-1, 3], [-1, 5], dtype, value=2.5 if dtype != "int64" else 7)
    assert tuple(out.shape) == (-1, 5) and out.dtype == dtype
    (got,) = hr.Executor().run(prog, feed={"ref": np.zeros((4, 3), np.float32)},
                               fetch_list=[out], scope=hr.Scope())
    assert got.dtype == np.dtype(dtype) and got.shape == (4, 5)
    assert (got == (2.5 if dtype != "int64" else 7)).all()


def test_other_dims_and_str_value():
    prog, out = _program([2, 6], [3, -1, 1], input_dim_idx=1, output_dim_idx=1,
                         str_value="-inf")
    assert tuple(out.shape) == (3, 6, 1)
    (got,) = hr.Executor().run(prog, feed={"ref": np.zeros((2, 6), np.float32)},
                               fetch_list=[out], scope=hr.Scope())
    assert got.shape == (3, 6, 1) and np.isneginf(got).all()


def test_with_lod_the_batch_is_the_number_of_sequences():
    prog, out = _program([-1, 3], [-1, 4], lod_level=1)
    ref = create_lod_tensor(np.zeros((6, 3), np.float32), [[2, 0, 4]])
    (got,) = hr.Executor().run(prog, feed={"ref": ref}, fetch_list=[out], scope=hr.Scope())
    assert got.shape == (3, 4) and not got.any()


def test_bad_dim_indices_name_the_attribute():
    with pytest.raises(hr.HeadraceError, match="attribute 'output_dim_idx' must name a dim"):
        _program([-1, 3], [-1, 4], output_dim_idx=2)
    with pytest.raises(hr.HeadraceError, match="attribute 'input_dim_idx' must name a dim"):
        _program([-1, 3], [-1, 4], input_dim_idx=5)


@pytest.mark.parametrize("lengths, batch", [
    ([[2, 1], [1, 0, 3]], 3),  # two levels: Paddle counts the sequences of the last one
    ([[5]], 1),  # one sequence
    ([[0, 0]], 2),  # only empty sequences
])
def test_lod_levels_and_edge_cases(lengths, batch):
    # Declared rows are not the number of sequences: the batch is unknown until run time.
    assert tuple(_program([7, 3], [-1, 2], lod_level=len(lengths))[1].shape) == (-1, 2)
    prog, out = _program([-1, 3], [-1, 2], "float64", lod_level=len(lengths), value=1.5)
    rows = sum(lengths[-1])
    ref = create_lod_tensor(np.zeros((rows, 3), np.float32), lengths)
    (got,) = hr.Executor().run(prog, feed={"ref": ref}, fetch_list=[out], scope=hr.Scope())
    np.testing.assert_array_equal(got, np.full((batch, 2), 1.5))


def test_lod_on_another_input_dim_takes_the_rows_dim():
    prog, out = _program([-1, 3], [2, -1], lod_level=1, input_dim_idx=1, output_dim_idx=1)
    assert tuple(out.shape) == (2, 3)
    ref = create_lod_tensor(np.zeros((4, 3), np.float32), [[1, 3]])
    (got,) = hr.Executor().run(prog, feed={"ref": ref}, fetch_list=[out], scope=hr.Scope())
    assert got.shape == (2, 3)


def test_int64_str_value_is_exact():
    big = 2 ** 62 + 1  # not a float64: reading it as a double would give 2**62
    prog, out = _program([-1, 3], [-1, 1], "int64", value=1.0, str_value=str(big))
    (got,) = hr.Executor().run(prog, feed={"ref": np.zeros((2, 3), np.float32)},
                               fetch_list=[out], scope=hr.Scope())
    assert got.tolist() == [[big], [big]]


def test_value_is_the_float32_attribute():
    prog, out = _program([-1, 3], [-1], "float64", value=0.1)
    (got,) = hr.Executor().run(prog, feed={"ref": np.zeros((2, 3), np.float32)},
                               fetch_list=[out], scope=hr.Scope())
    assert (got == np.float64(np.float32(0.1))).all()  # as Paddle's float attribute gives


def test_unknown_dims_besides_the_batch_are_refused():
    with pytest.raises(hr.HeadraceError, match="fill_constant_batch_size_like.*attribute "
                                               "'shape' may be unknown"):
        _program([-1, 3], [-1, -1], output_dim_idx=0)


@pytest.mark.parametrize("dtype, text, message", [
    ("float32", "abc", "attribute 'str_value' 'abc' is not a number"),
    ("int64", "inf", "value inf cannot be stored in int64"),
])
def test_bad_str_value_names_the_op(dtype, text, message):
    prog, out = _program([-1, 3], [-1, 2], dtype, str_value=text)
    with pytest.raises(Exception, match=f"fill_constant_batch_size_like.*{message}"):
        hr.Executor().run(prog, feed={"ref": np.zeros((2, 3), np.float32)}, fetch_list=[out],
                          scope=hr.Scope())
