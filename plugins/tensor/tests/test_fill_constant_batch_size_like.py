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
