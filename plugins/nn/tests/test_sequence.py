"""sequence_pool: LoD levels, unknown sequence counts, attribute checks; the CPU kernel (a LoD
kernel: Tensors in, Tensors out) against the reference."""
import numpy as np
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.ops import DictInferContext, VarMeta, default_registry
from headrace.runtime import Tensor
from headrace.testing import build_op, check_op
from headrace_nn.reference.sequence import sequence_pool as reference

POOL_TYPES = ["AVERAGE", "SUM", "SQRT", "MAX", "LAST", "FIRST"]


def pool(x_shape, lod_level=1, dtype="float32", **attrs):
    prog, op = build_op("sequence_pool", {"X": (x_shape, dtype, lod_level)},
                        outputs={"Out": 1, "MaxIndex": 1}, attrs=attrs)
    block = prog.global_block()
    return block.var(op.output("Out")[0]), block.var(op.output("MaxIndex")[0])


@pytest.mark.parametrize("x_shape, want", [
    ([-1, 16], (-1, 16)), ([20, 16], (-1, 16)), ([20, 4, 4], (-1, 4, 4)), ([20], (-1,))])
@pytest.mark.parametrize("pooltype", POOL_TYPES)
def test_one_unknown_row_count_per_sequence(x_shape, want, pooltype):
    out, max_index = pool(x_shape, pooltype=pooltype)
    assert (out.shape, out.dtype, out.lod_level) == (want, "float32", 0)
    assert (max_index.shape, max_index.dtype) == (want, "int32")


@pytest.mark.parametrize("lod_level", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_out_drops_one_lod_level(lod_level, dtype):
    out, _ = pool([-1, 8], lod_level, dtype, pooltype="SUM", pad_value=-1.0)
    assert (out.lod_level, out.dtype) == (lod_level - 1, dtype)


def test_max_index_is_created_when_not_bound():
    prog, op = build_op("sequence_pool", {"X": ([-1, 8], "float32", 1)},
                        attrs={"pooltype": "MAX"})
    assert prog.global_block().var(op.output("MaxIndex")[0]).dtype == "int32"


def test_a_plain_tensor_is_rejected_at_build_time():
    with pytest.raises(ShapeError, match=r"X \(x_0\) must be a sequence batch .*\n.*"
                                         r"expected: lod_level >= 1\n.*found:    lod_level 0"):
        pool([-1, 8], lod_level=0)


def test_run_time_inference_leaves_the_lod_to_the_kernel():
    # At run time the LoD travels with the tensor, not in the desc's lod_level.
    opdef = default_registry().get("sequence_pool")
    attrs = {name: a.default for name, a in opdef.attrs.items()}
    ctx = DictInferContext("sequence_pool", {"X": [VarMeta("x", (7, 3), "float32", 0,
                                                           "lod_tensor")]},
                           {"Out": ["out"], "MaxIndex": ["idx"]}, attrs, runtime=True)
    opdef.infer(ctx)
    assert ctx.results["Out"][0].shape == (-1, 3)


@pytest.mark.parametrize("shape, dtype, attrs, error, match", [
    ([], "float32", {}, ShapeError, r"X \(x_0\) must have a row dim"),
    ([-1, 8], "int64", {}, OpValidationError, r"input 'X' \(x_0\) has an unsupported dtype"),
    ([-1, 8], "float32", {"pooltype": "MEAN"}, OpValidationError, r"'pooltype' must be one of"),
    ([-1, 8], "float32", {"pooltype": "max"}, OpValidationError, r"'pooltype' must be one of"),
    ([-1, 8], "float32", {"pad_value": "0"}, OpValidationError, r"'pad_value' is not of type"),
])
def test_errors(shape, dtype, attrs, error, match):
    with pytest.raises(error, match=match):
        pool(shape, 1, dtype, **attrs)


# ---------------------------------------------------------------- kernel
LODS = [
    [[0, 2, 5, 6]],
    [[0, 0, 3, 3, 6]],              # empty sequences, first and in the middle
    [[0, 1, 3], [0, 2, 2, 6]],      # two levels: Out keeps the first
    [[0, 6]],
    [[0, 0]],                       # one empty sequence of no rows
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pooltype", POOL_TYPES)
@pytest.mark.parametrize("lod", range(len(LODS)))
@pytest.mark.parametrize("tail", [(3,), (), (2, 2)])
def test_kernel_matches_reference(check, dtype, pooltype, lod, tail):
    offsets = LODS[lod]
    rows = offsets[-1][-1]
    x = np.random.default_rng(lod).standard_normal((rows,) + tail).astype(dtype)
    check("sequence_pool", {"X": Tensor(x, offsets)}, {"pooltype": pooltype, "pad_value": 2.5})


def test_max_index_names_the_rows_of_x(kernel):
    x = np.array([[1.0, 5.0], [3.0, 2.0], [3.0, 9.0], [0.0, 0.0]])
    out, idx = kernel("sequence_pool", {"pooltype": "MAX"}, "float64")(
        Tensor(x, [[0, 3, 3, 4]]))
    np.testing.assert_array_equal(out.numpy(), [[3, 9], [0, 0], [0, 0]])
    np.testing.assert_array_equal(idx.numpy(), [[1, 2], [-1, -1], [3, 3]])
    assert idx.numpy().dtype == np.int32 and out.lod == [] and idx.lod == []


@pytest.mark.parametrize("pooltype", POOL_TYPES)
def test_runs_through_the_executor(pooltype):
    x = Tensor(np.random.default_rng(1).standard_normal((6, 3)).astype(np.float32),
               [[0, 1, 3], [0, 2, 2, 6]])
    attrs = {"pooltype": pooltype, "pad_value": -1.0}
    expected = reference({"X": x}, attrs)
    if pooltype != "MAX":
        del expected["MaxIndex"]
    check_op("sequence_pool", {"X": x}, expected, attrs)


@pytest.mark.parametrize("which", ["strided", "readonly"])
def test_kernel_strided_and_readonly(kernel, variants, which):
    x = np.random.default_rng(2).standard_normal((5, 3))
    k = kernel("sequence_pool", {"pooltype": "SQRT"}, "float64")
    want = k(Tensor(x, [[0, 2, 5]]))[0].numpy()
    got = k(Tensor(variants(x)[which], [[0, 2, 5]]))[0].numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("x, error, match", [
    (np.ones((4, 2)), ValueError, "has no LoD"),
    (Tensor(np.ones((4, 2)), []), ValueError, "has no LoD"),
    (Tensor(np.ones((4, 2)), [[0, 2, 3]]), ValueError, "end at X's 4 rows"),
    (Tensor(np.ones((4, 2)), [[0, 3, 2, 4]]), ValueError, "not decrease"),
    (Tensor(np.ones((4, 2)), [[1, 4]]), ValueError, "start at"),
    (Tensor(np.ones((4, 2)), [[0, 9, 4]]), ValueError, "not decrease"),
    (Tensor(np.ones((4, 2)), [[0, -2, 4]]), ValueError, "not decrease"),
    (Tensor(np.ones((4, 2), np.int64), [[0, 4]]), TypeError, "dtype"),
    (Tensor(np.float64(1.0), [[0, 1]]), ValueError, "row dim"),
])
def test_kernel_rejects_bad_inputs(kernel, x, error, match):
    with pytest.raises(error, match=f"sequence_pool: .*{match}"):
        kernel("sequence_pool", {"pooltype": "MAX"}, "float64")(x)


@pytest.mark.parametrize("op_type", ["sequence_pool", "sequence_pool_grad"])
def test_registered_as_a_lod_kernel(op_type):
    from headrace.ops import default_registry
    assert default_registry().kernel(op_type, "cpu", "float32").kind == "lod"


# ---------------------------------------------------------------- gradient
from headrace.testing import check_grad  # noqa: E402


@pytest.mark.parametrize("pooltype", POOL_TYPES)
@pytest.mark.parametrize("lod", [[[0, 2, 2, 5, 6]], [[0, 1, 3], [0, 2, 2, 6]]],
                         ids=["empty-sequence", "two-levels"])
def test_gradient_matches_finite_differences(pooltype, lod):
    # Distinct values 0.1 apart: MAX has no ties, nor any within a finite difference.
    x = np.random.default_rng(5).permutation(18).reshape(6, 3) * 0.1
    check_grad("sequence_pool", {"X": Tensor(x, lod)}, wrt=["X"],
               attrs={"pooltype": pooltype, "pad_value": 1.5})


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pooltype", POOL_TYPES)
@pytest.mark.parametrize("lod", range(len(LODS)))
@pytest.mark.parametrize("tail", [(3,), (2, 2)])
def test_grad_kernel_matches_reference(check, dtype, pooltype, lod, tail):
    offsets = LODS[lod]
    rng = np.random.default_rng(lod)
    x = Tensor(rng.standard_normal((offsets[-1][-1],) + tail).astype(dtype), offsets)
    out = reference({"X": x}, {"pooltype": pooltype})
    g = rng.standard_normal(out["Out"].numpy().shape).astype(dtype)
    check("sequence_pool_grad", {"X": x, "MaxIndex": out["MaxIndex"], "Out@GRAD": g},
          {"pooltype": pooltype})


def test_grad_kernel_gives_x_its_lod(kernel):
    x = Tensor(np.ones((4, 2)), [[0, 1, 3], [0, 3, 3, 4]])
    (dx,) = kernel("sequence_pool_grad", {"pooltype": "SQRT"}, "float64")(
        x, None, Tensor(np.full((3, 2), 6.0), [[0, 1, 3]]))
    assert dx.lod == [[0, 1, 3], [0, 3, 3, 4]]
    np.testing.assert_allclose(dx.numpy(), [[6 / 3 ** 0.5] * 2] * 3 + [[6.0, 6.0]])


@pytest.mark.parametrize("x, idx, dout, error, match", [
    (Tensor(np.ones((4, 2)), [[0, 3, 4]]), np.array([[0, 3], [3, 3]], np.int32),
     np.ones((2, 2)), IndexError, r"MaxIndex value 3 \(position 1\) is not a row of sequence 0"),
    (Tensor(np.ones((4, 2)), [[0, 3, 4]]), np.array([[0, 1]], np.int32), np.ones((2, 2)),
     ValueError, r"MaxIndex\[1, 2\] must have Out's shape"),
    (Tensor(np.ones((4, 2)), [[0, 3, 4]]), np.zeros((2, 2), np.int64), np.ones((2, 2)),
     TypeError, r"MaxIndex has dtype int64"),
    (Tensor(np.ones((4, 2)), [[0, 3, 4]]), np.zeros((2, 2), np.int32), np.ones((3, 2)),
     ValueError, r"Out@GRAD\[3, 2\] must have Out's shape \[2, 2\]"),
    (np.ones((4, 2)), np.zeros((2, 2), np.int32), np.ones((2, 2)), ValueError,
     r"X has no LoD"),
])
def test_grad_kernel_rejects_bad_inputs(kernel, x, idx, dout, error, match):
    with pytest.raises(error, match=f"sequence_pool_grad: {match}"):
        kernel("sequence_pool_grad", {"pooltype": "MAX"}, "float64")(x, Tensor(idx, []), dout)


# == layers ======================================================================================

@pytest.mark.parametrize("layer, kind", [("sequence_first_step", "FIRST"),
                                         ("sequence_last_step", "LAST"),
                                         ("sequence_pool", "sqrt")])
def test_layers_pool_each_sequence(layer, kind):
    import headrace as hr
    from headrace import layers
    from headrace.runtime.tensor import create_lod_tensor
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        x = layers.data("x", shape=[2], dtype="float64", lod_level=1)
        fn = getattr(layers, layer)
        out = fn(x, kind) if layer == "sequence_pool" else fn(x)
    data = np.arange(10, dtype=np.float64).reshape(5, 2)
    (got,) = hr.Executor().run(main, feed={"x": create_lod_tensor(data, [[2, 0, 3]])},
                               fetch_list=[out], scope=hr.Scope())
    rows = {"FIRST": [data[0], [0, 0], data[2]], "LAST": [data[1], [0, 0], data[4]],
            "sqrt": [data[:2].sum(0) / np.sqrt(2), [0, 0], data[2:].sum(0) / np.sqrt(3)]}
    np.testing.assert_allclose(got, np.array(rows[kind]), rtol=1e-12)


def test_max_pooling_keeps_a_nan_wherever_it_is():
    # MAX kept a NaN only when it came first in its sequence (issue 10: NaN semantics as
    # NumPy's in every pooling kernel); MaxIndex names the first NaN, as NumPy's argmax.
    import numpy as np

    from headrace.runtime.tensor import Tensor
    from headrace.testing import run_op
    x = np.array([[1.0, 2.0], [np.nan, 0.0], [3.0, np.nan], [5.0, 1.0], [np.nan, 9.0]])
    got = run_op("sequence_pool", {"X": Tensor(x, [[0, 3, 5]])}, ["Out", "MaxIndex"],
                 {"pooltype": "MAX"})
    np.testing.assert_array_equal(got["Out"][0].numpy(), [[np.nan, np.nan], [np.nan, 9.0]])
    np.testing.assert_array_equal(got["MaxIndex"][0].numpy(), [[1, 2], [4, 4]])
