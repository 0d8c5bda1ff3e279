"""The tensor plugin's data-movement kernels on CUDAPlace (Numba's simulator without a GPU)
against their CPU twins: reshape2/flatten, squeeze2/unsqueeze2, transpose2, concat/split,
stack/unstack, slice/strided_slice, the expand ops, and their gradients; attribute variants,
empty and 0-D tensors, and errors equal to the CPU kernel's. Shapes stay tiny: the simulator
runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing.optest import run_op

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)


def _rand(shape, dtype="float64", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def same(op, inputs, slots, attrs=None, counts=None):
    """Run ``op`` on both places; every output in ``slots`` equal (dtype, shape, values)."""
    want = run_op(op, inputs, slots, attrs, CPU, output_counts=counts)
    got = run_op(op, inputs, slots, attrs, GPU, output_counts=counts)
    for slot in slots:
        for w, g in zip(want[slot], got[slot]):
            w, g = np.asarray(w.numpy()), np.asarray(g.numpy())
            assert g.dtype == w.dtype and g.shape == w.shape, (op, slot, g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-12, err_msg=f"{op} {slot}")
    return got


def same_error(module, kernel, attrs, args, match):
    """The CUDA kernel refuses what its CPU twin refuses (called directly: the build-time
    shape checks would stop a program first), with the same exception type and message."""
    from importlib import import_module

    from numba import cuda
    errors = []
    for dev in ("cpu", "cuda"):
        k = getattr(import_module(f"headrace_tensor.kernels.{dev}.{module}"), kernel)(attrs)
        put = cuda.to_device if dev == "cuda" else (lambda a: a)
        with pytest.raises(Exception, match=match) as e:
            k(*[[put(v) for v in a] if isinstance(a, list) else a if a is None else put(a)
                for a in args])
        errors.append(e.value)
    assert type(errors[0]) is type(errors[1])


@pytest.mark.parametrize("shape,target", [((2, 3, 4), [0, -1]), ((6,), [2, 3]),
                                          ((0, 3), [0, 1, 3]), ((1,), [])])
def test_reshape2(shape, target):
    x = _rand(shape)
    same("reshape2", {"X": x}, ["Out", "XShape"], {"shape": target})
    dout = _rand(run_op("reshape2", {"X": x}, ["Out"], {"shape": target}, CPU)["Out"][0]
                 .numpy().shape, seed=1)
    same("reshape2_grad", {"XShape": np.zeros((0,) + shape), "Out@GRAD": dout}, ["X@GRAD"])


def test_reshape2_shape_tensor_and_errors():
    x = _rand((2, 6)).astype("int32")
    same("reshape2", {"X": x, "Shape": np.array([3, -1], "int32")}, ["Out"],
         {"shape": [1, 1]})
    same_error("reshape", "Reshape2", {"shape": [5, -1]}, [x], "not a whole number")


def test_flatten_and_squeeze():
    x = _rand((2, 1, 3, 1))
    same("flatten_contiguous_range", {"X": x}, ["Out", "XShape"],
         {"start_axis": 1, "stop_axis": -1})
    same("squeeze2", {"X": x}, ["Out", "XShape"], {"axes": [1, -1]})
    same("squeeze2", {"X": x}, ["Out"], {"axes": []})
    same("unsqueeze2", {"X": x[:, 0, :, 0].copy()}, ["Out", "XShape"], {"axes": [0, -1]})
    same("unsqueeze2_grad", {"XShape": np.zeros((0, 2, 3)), "Out@GRAD": _rand((1, 2, 3, 1))},
         ["X@GRAD"])
    same_error("squeeze", "Squeeze2", {"axes": [4]}, [x], "out of range")


@pytest.mark.parametrize("shape,axis,dtype", [
    ((2, 3, 4), [0, 2, 1], "float64"),       # batched 2-D: the shared-memory tiles
    ((2, 3, 4, 5), [0, 2, 3, 1], "float32"),  # NCHW -> NHWC: tiles of [N, C, HW]
    ((33, 40), [1, 0], "float32"),           # tile edges in both dims
    ((2, 3, 4), [2, 1, 0], "float64"),       # the general strided gather
    ((3, 1, 5), [1, 2, 0], "float64"), ((2, 0, 3), [2, 1, 0], "float64"), ((), [], "float64")])
def test_transpose2(shape, axis, dtype):
    x = _rand(shape, dtype)
    out = same("transpose2", {"X": x}, ["Out", "XShape"], {"axis": axis})
    dout = _rand(out["Out"][0].numpy().shape, dtype, seed=3)
    same("transpose2_grad", {"XShape": np.zeros((0,) + shape, dtype), "Out@GRAD": dout},
         ["X@GRAD"],
         {"axis": axis})


def test_transpose2_bool_and_bad_axis():
    x = _rand((2, 3)) > 0
    same("transpose2", {"X": x}, ["Out"], {"axis": [1, 0]})
    same("transpose2", {"X": (_rand((3, 4)) * 9).astype("int32")}, ["Out"], {"axis": [1, 0]})
    same_error("transpose", "Transpose2", {"axis": [0, 0]}, [x], "not a permutation")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_split(axis):
    xs = [_rand((2, 3, 2), seed=1), _rand((2, 3, 2), seed=2)]
    if axis == 1:
        xs[1] = _rand((2, 1, 2), seed=2)
    out = same("concat", {"X": xs}, ["Out"], {"axis": axis})["Out"][0].numpy()
    same("concat_grad", {"X": xs, "Out@GRAD": out * 2}, ["X@GRAD"], {"axis": axis},
         counts={"X@GRAD": 2})
    n = out.shape[axis]
    same("split", {"X": out}, ["Out"], {"axis": axis, "num": 0, "sections": [1, -1]},
         counts={"Out": 2})
    if n % 2 == 0:
        same("split", {"X": out}, ["Out"], {"axis": axis, "num": 2, "sections": []},
             counts={"Out": 2})


def test_concat_errors():
    same_error("concat_split", "Concat", {"axis": 1}, [[_rand((2, 3)), _rand((3, 3))]],
               "differs from X")
    same_error("concat_split", "Split", {"axis": 0, "num": 0, "sections": [1, 1]},
               [_rand((3, 2))], "sum to 2")


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_unstack(axis):
    xs = [_rand((2, 3), seed=k) for k in range(3)]
    y = same("stack", {"X": xs}, ["Y"], {"axis": axis})["Y"][0].numpy()
    same("stack_grad", {"Y@GRAD": y}, ["X@GRAD"], {"axis": axis}, counts={"X@GRAD": 3})
    same("unstack", {"X": y}, ["Y"], {"axis": axis, "num": 3}, counts={"Y": 3})
    same("unstack_grad", {"Y@GRAD": xs}, ["X@GRAD"], {"axis": axis})


SLICES = [
    ("slice", {"axes": [1, 2], "starts": [1, -3], "ends": [3, 100], "infer_flags": [1, 1],
               "decrease_axis": []}),
    ("slice", {"axes": [0], "starts": [1], "ends": [2], "infer_flags": [1],
               "decrease_axis": [0]}),
    ("strided_slice", {"axes": [0, 2], "starts": [-1, 0], "ends": [-100, 4],
                       "strides": [-1, 2], "infer_flags": [1, 1], "decrease_axis": []}),
    ("strided_slice", {"axes": [1], "starts": [-1], "ends": [0], "strides": [1],
                       "infer_flags": [-1], "decrease_axis": [1]}),
]


@pytest.mark.parametrize("op,attrs", SLICES)
def test_slices(op, attrs):
    x = _rand((2, 3, 4))
    out = same(op, {"Input": x}, ["Out"], attrs)["Out"][0].numpy()
    same(op + "_grad", {"Input": x, "Out@GRAD": _rand(out.shape, seed=5)}, ["Input@GRAD"],
         attrs)


def test_slice_tensor_starts_and_errors():
    x = _rand((4, 3)).astype("float32")
    attrs = {"axes": [0], "starts": [0], "ends": [1], "infer_flags": [-1], "decrease_axis": []}
    same("slice", {"Input": x, "StartsTensor": np.array([1], "int64")}, ["Out"], attrs)
    bad = dict(SLICES[2][1], starts=[0, 0], ends=[1, 4])
    same_error("slice", "StridedSlice", bad, [x[None]] + [None] * 6, "start 0 comes before")


@pytest.mark.parametrize("xshape,shape", [((3, 1), [2, 3, 4]), ((1, 1), [5, 40]),
                                          ((2, 3), [-1, 3]), ((0, 1), [0, 2])])
def test_expand_v2(xshape, shape):
    x = _rand(xshape)
    out = same("expand_v2", {"X": x}, ["Out"], {"shape": shape})["Out"][0].numpy()
    # (5, 40) from (1, 1) sums 200 copies per element: the block tree reduction
    same("expand_v2_grad", {"X": x, "Out@GRAD": _rand(out.shape, seed=4)}, ["X@GRAD"],
         {"shape": shape})
    same("expand_as_v2", {"X": x, "Y": out}, ["Out"], {"target_shape": []})


@pytest.mark.parametrize("times", [[2, 1], [1, 3], [3, 20]])
def test_expand_tiles(times):
    x = _rand((2, 3)).astype("float32")
    out = same("expand", {"X": x}, ["Out"], {"expand_times": times})["Out"][0].numpy()
    same("expand_grad", {"X": x, "Out@GRAD": _rand(out.shape, "float32", 6)}, ["X@GRAD"],
         {"expand_times": times})


def test_expand_errors():
    same_error("expand", "ExpandV2", {"shape": [4, 3]}, [_rand((2, 3))], "not 1")
    same_error("expand", "ExpandGrad", {"expand_times": [1]}, [_rand((2, 3)), None, None,
               _rand((3, 3))], "not a tiling")
