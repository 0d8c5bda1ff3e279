"""The core's ops on CUDAPlace (Numba's simulator without a GPU): fill_constant (attribute,
str_value, ShapeTensor/ShapeTensorList, ValueTensor, dtypes), fill_zeros_like, fill_any_like,
scale (both bias orders, integer X), sum (N inputs, empty ones, tensor arrays) and assign (a
real device copy, tensor arrays too), each against the CPU kernel. Shapes stay tiny."""
import numpy as np
import pytest

import headrace as hr
from headrace import dtypes as dt
from headrace.runtime.tensor import Tensor
from headrace.testing import run_op

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)


def both(op, inputs, attrs, slot="Out"):
    """The op's output on the CPU and on CUDA (NumPy arrays)."""
    return [np.asarray(run_op(op, inputs, [slot], attrs, place)[slot][0].numpy())
            for place in (CPU, GPU)]


def same(op, inputs, attrs, slot="Out"):
    cpu, gpu = both(op, inputs, attrs, slot)
    assert gpu.dtype == cpu.dtype and gpu.shape == cpu.shape
    np.testing.assert_array_equal(gpu, cpu)
    return gpu


@pytest.mark.parametrize("dtype,value,text", [
    ("float32", 1.5, ""), ("float64", -2.25, ""), ("int32", 3.9, ""), ("int64", 0, "inf"),
    ("int64", 0, "9223372036854775807"), ("bool", 0.5, ""), ("float64", 0, "-1e-30"),
    ("int8", -7, ""), ("complex64", 2.0, "")])
def test_fill_constant_values_and_dtypes(dtype, value, text):
    attrs = {"shape": [2, 3], "dtype": dt.to_proto(dtype), "value": value, "str_value": text}
    if dtype.startswith("int") and text == "inf":
        for place in (CPU, GPU):
            with pytest.raises(Exception, match="cannot be stored|not a number"):
                run_op("fill_constant", {}, ["Out"], attrs, place)
        return
    same("fill_constant", {}, attrs)


def test_fill_constant_shapes_from_tensors_and_empty():
    attrs = {"shape": [], "dtype": dt.to_proto("float32"), "value": 4.0}
    out = same("fill_constant", {"ShapeTensor": np.array([2, 0, 3], "int64")}, attrs)
    assert out.shape == (2, 0, 3)
    out = same("fill_constant", {"ShapeTensorList": [np.array([2], "int32"),
                                                     np.array([3], "int64")]}, attrs)
    assert out.shape == (2, 3)
    with pytest.raises(Exception, match="negative dim"):
        run_op("fill_constant", {"ShapeTensor": np.array([2, -1], "int64")}, ["Out"], attrs,
               GPU)


@pytest.mark.parametrize("dtype,v", [("float32", np.float64(2.5)), ("int32", np.float32(-3.7)),
                                     ("bool", np.float32(0.0)), ("int64", np.int32(7))])
def test_fill_constant_value_tensor_on_the_device(dtype, v):
    attrs = {"shape": [3, 2], "dtype": dt.to_proto(dtype), "value": 0.0}
    same("fill_constant", {"ValueTensor": np.array([v])}, attrs)


def test_fill_constant_value_tensor_out_of_range_is_the_cpu_error():
    attrs = {"shape": [2], "dtype": dt.to_proto("int32"), "value": 0.0}
    for place in (CPU, GPU):
        with pytest.raises(Exception, match="int32"):
            run_op("fill_constant", {"ValueTensor": np.array([np.nan])}, ["Out"], attrs, place)


@pytest.mark.parametrize("shape", [(2, 3), (0, 4), ()])
def test_fill_zeros_like_and_fill_any_like(shape):
    x = np.full(shape, 7, "float32")
    same("fill_zeros_like", {"X": x}, {})
    same("fill_any_like", {"X": x}, {"value": 2.5, "dtype": -1})
    same("fill_any_like", {"X": x}, {"value": 2.5, "dtype": dt.to_proto("int64")})


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("after", [True, False])
def test_scale(dtype, after):
    x = (np.arange(-5, 7).reshape(3, 4) * 1.5).astype(dtype)
    attrs = {"scale": 2.7, "bias": -1.6, "bias_after_scale": after}
    cpu, gpu = both("scale", {"X": x}, attrs)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-6)
    assert gpu.dtype == cpu.dtype


def test_sum_of_n_inputs_in_order_and_empty_contributions():
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((3, 4)).astype("float32") for _ in range(4)]
    same("sum", {"X": xs}, {})
    same("sum", {"X": [xs[0]]}, {})
    same("sum", {"X": [np.zeros((0,), "float32"), xs[1], xs[2]]}, {})
    same("sum", {"X": [np.arange(6, dtype="int64").reshape(2, 3)] * 3}, {})
    # A shape mismatch is refused when the op is built, before any kernel.


def test_assign_is_a_real_copy():
    x = np.arange(6, dtype="float64").reshape(2, 3)
    same("assign", {"X": x}, {})
    same("assign", {"X": np.array([True, False])}, {})


def test_tensor_arrays_on_the_device():
    # sum, assign and fill_zeros_like of tensor arrays, called as the executor calls them.
    from numba import cuda

    from headrace.core_ops.kernels.cuda.assign import Assign
    from headrace.core_ops.kernels.cuda.fill import FillZerosLike
    from headrace.core_ops.kernels.cuda.sum import Sum
    a = [Tensor(cuda.to_device(np.ones((2, 2), "float32")), [[0, 1, 2]]), None]
    b = [Tensor(cuda.to_device(np.full((2, 2), 2, "float32")), []),
         Tensor(cuda.to_device(np.full(3, 5, "float32")), [])]
    (s,) = Sum({})([a, b])
    assert len(s) == 2 and s[0].lod == [[0, 1, 2]]
    np.testing.assert_array_equal(s[0].data.copy_to_host(), np.full((2, 2), 3))
    np.testing.assert_array_equal(s[1].data.copy_to_host(), np.full(3, 5))
    assert s[1].data is not b[1].data
    (c,) = Assign({})(b)
    assert c[0].data is not b[0].data
    np.testing.assert_array_equal(c[1].data.copy_to_host(), np.full(3, 5))
    (z,) = FillZerosLike({})(a)
    assert z[1] is None and z[0].lod == [[0, 1, 2]]
    np.testing.assert_array_equal(z[0].data.copy_to_host(), np.zeros((2, 2)))


def test_print_copies_to_the_host_prints_and_passes_through(capfd):
    x = Tensor(np.array([[1.5, -2.0], [np.nan, 4.0]], np.float32), [[0, 1, 2]])
    got = run_op("print", {"In": x}, ["Out"], {"message": "dev", "summarize": 3}, GPU)["Out"][0]
    np.testing.assert_array_equal(got.numpy(), x.data)
    assert got.lod == [[0, 1, 2]]
    text = capfd.readouterr().out
    assert "  - message: dev\n  - lod: {{0, 1, 2}}\n  - place: CUDAPlace(0)\n" \
           "  - shape: [2, 2]\n  - dtype: float32\n  - data: [1.5 -2 nan]\n" in text
