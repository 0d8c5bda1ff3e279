"""concat and split: axis handling, unknown dims, piece sizes and counts."""
import pytest

from headrace.errors import OpValidationError, ShapeError
from headrace.testing import build_op, infer_shapes


def concat(shapes, axis=0, dtype="float32", inputs=None):
    ins = {"X": [(s, dtype) for s in shapes], **(inputs or {})}
    return infer_shapes("concat", ins, attrs={"axis": axis})["Out"][0]


@pytest.mark.parametrize("shapes, axis, expected", [
    ([[2, 3], [4, 3]], 0, (6, 3)),
    ([[2, 3], [2, 5], [2, 1]], 1, (2, 9)),
    ([[2, 3], [2, 5]], -1, (2, 8)),
    ([[2, 3, 4], [2, 3, 4]], -3, (4, 3, 4)),
    ([[-1, 3], [4, 3]], 0, (-1, 3)),
    ([[-1, 3], [4, 3]], 1, (4, 6)),  # the unknown dim must equal 4
    ([[-1, 3], [-1, -1]], 1, (-1, -1)),
    ([[7]], 0, (7,)),
])
def test_concat(shapes, axis, expected):
    assert concat(shapes, axis) == (expected, "float32")


def test_concat_keeps_lod_level_of_the_first_input():
    prog, _ = build_op("concat", {"X": [([-1, 2], "int64", 1), ([-1, 2], "int64", 1)]})
    out = prog.global_block().var("out_out_0")
    assert (out.shape, out.dtype, out.lod_level) == ((-1, 2), "int64", 1)


def test_concat_axis_tensor_leaves_every_dim_unknown():
    tensor = {"AxisTensor": ([1], "int32")}
    assert concat([[2, 3], [2, 3]], inputs=tensor) == ((-1, -1), "float32")
    with pytest.raises(ShapeError, match=r"'AxisTensor' \(axistensor_0\) must hold exactly one"):
        concat([[2, 3], [2, 3]], inputs={"AxisTensor": ([2], "int32")})


@pytest.mark.parametrize("shapes, axis, match", [
    ([[2, 3], [2, 4]], 0, r"differ in dim 1, which is not the concat axis 0(.|\n)*"
                          r"expected: dim 1 = 3 \(x_0 \[2, 3\]\)(.|\n)*found:    4 \(x_1"),
    ([[2, 3], [2, 3, 1]], 0, r"must share one rank; x_1 differs from x_0"),
    ([[2, 3], [2, 3]], 2, r"'axis' is out of range for a rank-2 input"),
    ([[2, 3], [2, 3]], -3, r"'axis' is out of range(.|\n)*axis in \[-2, 1\]"),
    ([[], []], 0, r"input 'X' \(x_0\) is 0-D"),
])
def test_concat_errors(shapes, axis, match):
    with pytest.raises(ShapeError, match=match):
        concat(shapes, axis)


def test_concat_dtypes_must_agree():
    with pytest.raises(ShapeError, match=r"share one dtype; x_1 differs(.|\n)*found:    int64"):
        infer_shapes("concat", {"X": [([2], "float32"), ([2], "int64")]})


def test_concat_needs_inputs():
    with pytest.raises(OpValidationError, match=r"missing input 'X'"):
        infer_shapes("concat", {})


# -- split -----------------------------------------------------------------------------------

def split(x, n_out, attrs, inputs=None, lod_level=0):
    ins = {"X": (x, "float32", lod_level), **(inputs or {})}
    return [s for s, _ in infer_shapes("split", ins, {"Out": n_out}, attrs)["Out"]]


@pytest.mark.parametrize("x, n_out, attrs, expected", [
    ([6, 4], 3, {"num": 3}, [(2, 4)] * 3),
    ([6, 4], 2, {"num": 2, "axis": 1}, [(6, 2)] * 2),
    ([6, 4], 2, {"num": 2, "axis": -1}, [(6, 2)] * 2),
    ([-1, 4], 2, {"num": 2}, [(-1, 4)] * 2),
    ([3, 6], 3, {"sections": [1, -1, 2], "axis": 1}, [(3, 1), (3, 3), (3, 2)]),
    ([3, 6], 2, {"sections": [4, 2], "axis": -1}, [(3, 4), (3, 2)]),
    ([5, 2], 2, {"sections": [5, 0]}, [(5, 2), (0, 2)]),
    ([-1, 2], 2, {"sections": [3, -1]}, [(3, 2), (-1, 2)]),
    ([2, 7], 1, {"sections": [-1], "axis": 1}, [(2, 7)]),
])
def test_split(x, n_out, attrs, expected):
    assert split(x, n_out, attrs) == expected


@pytest.mark.parametrize("axis, lod_level", [(0, 0), (1, 2)])
def test_split_keeps_lod_only_when_rows_are_not_split(axis, lod_level):
    prog, op = build_op("split", {"X": ([4, 4], "float32", 2)}, {"Out": 2},
                        {"num": 2, "axis": axis})
    for name in op.output("Out"):
        assert prog.global_block().var(name).lod_level == lod_level


def test_split_tensors_leave_their_dims_unknown():
    sections = {"SectionsTensorList": [([1], "int32")] * 2}
    assert split([3, 6], 2, {"sections": [-1, 2], "axis": 1}, sections) == [(3, -1), (3, 2)]
    axis = {"AxisTensor": ([1], "int64")}
    assert split([3, 6], 3, {"num": 3}, axis) == [(-1, -1)] * 3


@pytest.mark.parametrize("x, n_out, attrs, match", [
    ([6, 4], 4, {"num": 4}, r"cannot be split equally into 4 pieces(.|\n)*found:    size 6"),
    ([6, 4], 2, {"num": 3}, r"must hold 'num' variables(.|\n)*expected: 3 variables"),
    ([6, 4], 3, {"sections": [1, 5]}, r"one variable per section(.|\n)*found:    3"),
    ([6, 4], 2, {"sections": [-1, -1]}, r"sizes >= 0 and at most one -1"),
    ([6, 4], 2, {"sections": [-2, 8]}, r"sizes >= 0 and at most one -1"),
    ([6, 4], 2, {"sections": [2, 3]}, r"must sum to the split axis size(.|\n)*expected: sum 6"
                                      r"(.|\n)*found:    sections=\[2, 3\] \(sum 5\)"),
    ([6, 4], 2, {"sections": [7, -1]}, r"asks for more than input 'X' \(x_0\) holds"),
    ([6, 4], 2, {"sections": [3, 3], "num": 2}, r"exactly one of 'num'"),
    ([6, 4], 2, {}, r"exactly one of 'num'"),
    ([6, 4], 2, {"num": 2, "axis": 2}, r"'axis' is out of range for a rank-2 input"),
    ([], 1, {"num": 1}, r"is 0-D"),
])
def test_split_errors(x, n_out, attrs, match):
    with pytest.raises(ShapeError, match=match):
        split(x, n_out, attrs)


def test_split_sections_tensor_count():
    with pytest.raises(ShapeError, match=r"'SectionsTensorList' must hold one tensor per "
                                         r"section(.|\n)*expected: 2 tensors"):
        split([3, 6], 2, {"sections": [-1, 2]}, {"SectionsTensorList": [([1], "int32")]})


def test_split_sections_tensors_hold_one_element():
    with pytest.raises(ShapeError, match=r"'SectionsTensorList' \(sectionstensorlist_0\) must "
                                         r"hold exactly one element"):
        split([3, 6], 2, {"sections": [-1, 2]}, {"SectionsTensorList": [([2], "int32")] * 2})


def test_split_num_must_not_be_negative():
    with pytest.raises(OpValidationError, match=r"'num' must be >= 0"):
        split([6], 1, {"num": -1})


# == kernels ===================================================================================

import numpy as np  # noqa: E402

from headrace.runtime import Tensor  # noqa: E402
from headrace.runtime.kernel_info import KernelInfo, SlotVar, kernel_info  # noqa: E402
from headrace.testing import check_op  # noqa: E402
from headrace_tensor.kernels.cpu import concat_split as kcs  # noqa: E402

NUMPY_TYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "float16", "float32",
               "float64", "complex64", "complex128"]


def arange(shape, dtype="float64", start=0):
    return (np.arange(int(np.prod(shape))) + start).astype(dtype).reshape(shape)


@pytest.mark.parametrize("shapes, axis", [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 1), (2, 5)], 1),
    ([(2, 3), (2, 1), (2, 5)], -1),
    ([(2, 3, 4), (2, 2, 4), (2, 0, 4), (2, 1, 4)], -2),
    ([(3, 2, 2)] * 5, 2),
    ([(4,)], 0),
    ([(0, 3), (0, 3)], 1),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_concat_kernel(shapes, axis, dtype):
    xs = [arange(s, dtype, 100 * i) for i, s in enumerate(shapes)]
    check_op("concat", {"X": xs}, {"Out": np.concatenate(xs, axis)}, attrs={"axis": axis})


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_concat_kernel_dtypes(name):
    xs = [arange((2, 2), name), arange((2, 3), name, 1)]
    check_op("concat", {"X": xs}, {"Out": np.concatenate(xs, 1)}, attrs={"axis": 1})


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_concat_axis_tensor(index_type):
    xs = [arange((2, 3)), arange((2, 2))]
    check_op("concat", {"X": xs, "AxisTensor": np.array([-1], index_type)},
             {"Out": np.concatenate(xs, 1)}, attrs={"axis": 0})


def test_concat_strided_read_only_inputs_and_lod():
    a = arange((3, 8))[:, ::2]
    b = arange((3, 2))
    b.flags.writeable = False
    check_op("concat", {"X": [Tensor(a, [[0, 1, 3]]), b]},
             {"Out": Tensor(np.concatenate([a, b], 1), [[0, 1, 3]])}, attrs={"axis": 1})


@pytest.mark.parametrize("xs, kw, error, match", [
    ([np.ones((2, 3)), np.ones((3, 3))], {"axis": 1}, ValueError,
     r"X\[1\] has shape \[3, 3\], which differs from X\[0\]'s \[2, 3\] outside axis 1"),
    ([np.ones((2, 3)), np.ones((2, 3, 1))], {"axis": 0}, ValueError, r"X\[1\] has shape"),
    ([np.ones((2, 3)), np.ones((2, 3), "float32")], {"axis": 0}, TypeError,
     r"X\[1\] is float32 but X\[0\] is float64"),
    ([np.ones(())], {"axis": 0}, ValueError, r"X\[0\] is 0-D"),
    ([np.ones((2, 3))], {"axis": 2}, IndexError, r"axis 2 is out of range for rank 2"),
    ([np.ones((2, 3))], {"axis": -3}, IndexError, r"axis -3 is out of range"),
    ([], {"axis": 0}, ValueError, r"non-empty list"),
    ([np.ones(2), "x"], {"axis": 0}, TypeError, r"input 'X\[1\]' must be a dense tensor"),
])
def test_concat_direct_bad_inputs(xs, kw, error, match):
    with pytest.raises(error, match=match):
        kcs.Concat(kw)(xs)


def test_concat_direct_bad_axis_tensor():
    with pytest.raises(ValueError, match=r"'AxisTensor' must hold exactly one element"):
        kcs.Concat({"axis": 0})([np.ones(2)], np.array([0, 1]))
    with pytest.raises(TypeError, match=r"'AxisTensor' must hold integers"):
        kcs.Concat({"axis": 0})([np.ones(2)], np.array([0.0]))


def split_expected(x, sizes, axis):
    return np.split(x, np.cumsum(sizes)[:-1], axis=axis)


@pytest.mark.parametrize("shape, attrs, sizes", [
    ((6, 4), {"axis": 0, "num": 3}, [2, 2, 2]),
    ((6, 4), {"axis": -1, "num": 2}, [2, 2]),
    ((6, 4), {"axis": 1, "sections": [1, 3]}, [1, 3]),
    ((6, 4), {"axis": 0, "sections": [1, -1, 2]}, [1, 3, 2]),
    ((2, 5, 3), {"axis": -2, "sections": [0, 2, -1]}, [0, 2, 3]),
    ((2, 5, 3), {"axis": 2, "num": 1}, [3]),
    ((0, 4), {"axis": 1, "sections": [1, 3]}, [1, 3]),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_split_kernel(shape, attrs, sizes, dtype):
    x = arange(shape, dtype)
    axis = attrs["axis"]
    check_op("split", {"X": x}, {"Out": split_expected(x, sizes, axis)}, attrs=attrs)


@pytest.mark.parametrize("name", NUMPY_TYPES)
def test_split_kernel_dtypes(name):
    x = arange((3, 5), name)
    check_op("split", {"X": x}, {"Out": split_expected(x, [2, 3], 1)},
             attrs={"axis": 1, "sections": [2, -1]})


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_split_tensors_give_axis_and_sections(index_type):
    x = arange((4, 6))
    sections = [np.array([2], index_type), np.array([4], index_type)]
    # the tensors beat both attributes
    check_op("split", {"X": x, "SectionsTensorList": sections,
                       "AxisTensor": np.array([-1], index_type)},
             {"Out": split_expected(x, [2, 4], 1)}, attrs={"axis": 0, "sections": [1, -1]})


def test_split_keeps_lod_off_the_rows_and_reads_strided_inputs():
    x = arange((4, 12))[:, ::3]
    check_op("split", {"X": Tensor(x, [[0, 1, 4]])},
             {"Out": [Tensor(p, [[0, 1, 4]]) for p in split_expected(x, [1, 3], 1)]},
             attrs={"axis": 1, "sections": [1, 3]})


def test_split_pieces_are_new_arrays():
    x = arange((4, 2))
    (pieces,) = kcs.Split({"axis": 0, "num": 2, "sections": []})(x)
    assert isinstance(pieces, list) and len(pieces) == 2
    assert not any(np.shares_memory(p, x) for p in pieces)


@pytest.mark.parametrize("attrs, args, error, match", [
    ({"num": 4}, (np.ones((6, 2)),), ValueError, r"size 6 cannot be split into 4 equal pieces"),
    ({"sections": [2, 2]}, (np.ones((6, 2)),), ValueError, r"sections \[2, 2\] sum to 4, but "
                                                           r"the split dim has 6"),
    ({"sections": [5, -1, 3]}, (np.ones((6, 2)),), ValueError, r"ask for more than the 6"),
    ({"sections": [-1, -1]}, (np.ones((6, 2)),), ValueError, r"at most one -1"),
    ({"sections": [-2, 8]}, (np.ones((6, 2)),), ValueError, r"sizes >= 0"),
    ({"num": 2, "axis": 2}, (np.ones((6, 2)),), IndexError, r"axis 2 is out of range"),
    ({"num": 1}, (np.ones(()),), ValueError, r"X is 0-D"),
    ({"num": 1}, ([1.0],), TypeError, r"input 'X' must be a dense tensor"),
    ({"sections": [1, 1]}, (np.ones((2, 2)), None, [np.ones(1)]), TypeError,
     r"'SectionsTensorList\[0\]' must hold integers"),
])
def test_split_direct_bad_inputs(attrs, args, error, match):
    full = {"axis": 0, "num": 0, "sections": [], **attrs}
    with pytest.raises(error, match=match):
        kcs.Split(full)(*args)


def test_split_direct_bad_attributes():
    with pytest.raises(ValueError, match=r"give exactly one of num \(> 0\) and sections"):
        kcs.Split({"axis": 0, "num": 2, "sections": [1, 1]})
    with pytest.raises(ValueError, match=r"give exactly one of num"):
        kcs.Split({"axis": 0, "num": 0, "sections": []})


def test_split_pieces_must_match_the_outputs():
    _, op = build_op("split", {"X": ([6, 2], "float64")}, outputs={"Out": 2},
                     attrs={"num": 2})
    kernel = kcs.Split({"axis": 0, "num": 3, "sections": []}, kernel_info(op))
    with pytest.raises(ValueError, match=r"split: 3 pieces for 2 output variables"):
        kernel(np.ones((6, 2)))


# == gradients =================================================================================

import headrace  # noqa: E402
from headrace.ops.grad import GradContext  # noqa: E402
from headrace.runtime import Executor, Scope  # noqa: E402
from headrace.testing import check_grad  # noqa: E402


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("shapes, axis", [
    ([(2, 3), (4, 3)], 0),
    ([(2, 3), (2, 1), (2, 5)], 1),
    ([(2, 3), (2, 1), (2, 5)], -1),
    ([(2, 3, 4), (2, 2, 4), (2, 1, 4)], -2),
    ([(3, 2, 2)] * 4, 2),
    ([(2, 1, 2, 3), (2, 2, 2, 3)], -3),
    ([(4,)], 0),
    ([(2, 3), (2, 0), (2, 2)], 1),  # an empty input gets an empty gradient
])
def test_concat_gradient(shapes, axis):
    xs = [rand(s, i) for i, s in enumerate(shapes)]
    check_grad("concat", {"X": xs}, wrt=["X"], attrs={"axis": axis})


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_concat_gradient_with_axis_tensor(index_type):
    xs = [rand((2, 3), 1), rand((2, 2), 2)]
    check_grad("concat", {"X": xs, "AxisTensor": np.array([-1], index_type)}, wrt=["X"],
               attrs={"axis": 0})


def numeric_gradient_check(op_type, inputs, attrs, n_out, wrt="X", targets=None, eps=1e-6):
    """check_grad for ops with several variables in the output slot 'Out' (split), which
    check_grad (one variable per output slot) cannot build: the gradient of
    sum_i sum(Out[i] * G[i]) over the ``targets`` pieces, analytic vs central differences."""
    prog = headrace.Program()
    block = prog.global_block()
    feed, ins = {}, {}
    for slot, value in inputs.items():
        names = []
        for i, a in enumerate(value if isinstance(value, list) else [value]):
            name = f"{slot.lower()}_{i}"
            block.create_var(name=name, shape=a.shape, dtype=a.dtype, need_check_feed=True,
                             stop_gradient=slot != wrt)
            feed[name] = a
            names.append(name)
        ins[slot] = names
    outs = [f"out_{i}" for i in range(n_out)]
    block.append_op(op_type, ins, {"Out": outs}, attrs)
    targets = [block.var(outs[i]) for i in (range(n_out) if targets is None else targets)]
    exe = Executor()
    values = exe.run(prog, feed=feed, fetch_list=targets, scope=Scope())
    rng = np.random.default_rng(7)
    upstream = {f"g_{t.name}": rng.standard_normal(v.shape) for t, v in zip(targets, values)}
    g_vars = [block.create_var(name=f"g_{t.name}", shape=v.shape, dtype=v.dtype,
                               need_check_feed=True, stop_gradient=True)
              for t, v in zip(targets, values)]
    fwd = prog.clone()
    grads = headrace.gradients(targets, [block.var(n) for n in ins[wrt]],
                               target_gradients=g_vars)
    analytic = exe.run(prog, feed={**feed, **upstream}, fetch_list=grads, scope=Scope())

    def objective(fd):
        vals = exe.run(fwd, feed=fd, fetch_list=[t.name for t in targets], scope=Scope())
        return sum(float(np.sum(v * upstream[f"g_{t.name}"])) for v, t in zip(vals, targets))

    for name, got in zip(ins[wrt], analytic):
        x = feed[name].copy()
        numeric = np.zeros_like(x)
        for k in range(x.size):
            old = x.flat[k]
            x.flat[k] = old + eps
            plus = objective({**feed, name: x.copy()})
            x.flat[k] = old - eps
            minus = objective({**feed, name: x.copy()})
            x.flat[k] = old
            numeric.flat[k] = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(got, numeric, rtol=1e-5, atol=1e-7,
                                   err_msg=f"{op_type}: gradient of {name}")
    return prog


@pytest.mark.parametrize("shape, attrs, n_out", [
    ((6, 4), {"axis": 0, "num": 3}, 3),
    ((6, 4), {"axis": -1, "num": 2}, 2),
    ((6, 4), {"axis": 1, "sections": [1, 3]}, 2),
    ((6, 4), {"axis": 0, "sections": [1, -1, 2]}, 3),    # unequal, one inferred
    ((2, 5, 3), {"axis": -2, "sections": [3, 2]}, 2),
    ((2, 5, 3), {"axis": -2, "sections": [0, 2, -1]}, 3),  # an empty piece
    ((2, 3, 2, 2), {"axis": 1, "sections": [2, 1]}, 2),
    ((2, 5, 3), {"axis": 2, "num": 1}, 1),
])
def test_split_gradient(shape, attrs, n_out):
    numeric_gradient_check("split", {"X": rand(shape)}, attrs, n_out)


def test_split_gradient_with_check_grad():
    # one piece: check_grad itself can build it
    check_grad("split", {"X": rand((3, 4))}, wrt=["X"], attrs={"axis": -1, "num": 1})
    check_grad("split", {"X": rand((3, 4))}, wrt=["X"], attrs={"axis": 0, "sections": [-1]})


@pytest.mark.parametrize("targets", [[0], [1], [0, 2], [2]])
def test_split_gradient_of_some_pieces(targets):
    # pieces that do not reach the targets get zero-filled gradients
    prog = numeric_gradient_check("split", {"X": rand((6, 4))},
                                  {"axis": 0, "sections": [1, 3, 2]}, 3, targets=targets)
    types_ = [op.type for op in prog.global_block().ops]
    assert types_.count("fill_zeros_like") == 3 - len(targets)
    assert "concat" in types_


@pytest.mark.parametrize("index_type", ["int32", "int64"])
def test_split_gradient_with_axis_and_sections_tensors(index_type):
    x = rand((4, 6))
    prog = numeric_gradient_check(
        "split", {"X": x, "AxisTensor": np.array([-1], index_type),
                  "SectionsTensorList": [np.array([2], index_type), np.array([4], index_type)]},
        {"axis": 0, "sections": [2, -1]}, 2)
    (concat,) = [op for op in prog.global_block().ops if op.type == "concat"]
    assert concat.input("AxisTensor") == ["axistensor_0"]


def test_split_gradient_is_a_concat_of_the_piece_gradients():
    _, op = build_op("split", {"X": ([6, 2], "float64")}, outputs={"Out": 3},
                     attrs={"axis": -2, "sections": [1, 2, -1]})
    (spec,) = op.opdef.grad(GradContext(op, {"x_0"}, set()))
    assert spec.type == "concat"
    assert spec.inputs == {"X": [f"out_out_{i}@GRAD" for i in range(3)]}
    assert spec.outputs == {"Out": ["x_0@GRAD"]} and spec.attrs == {"axis": -2}


def test_concat_gradient_reads_x_for_shapes():
    _, op = build_op("concat", {"X": [([2, 3], "float64"), ([2, 4], "float64")]},
                     attrs={"axis": 1})
    (spec,) = op.opdef.grad(GradContext(op, {"x_0", "x_1"}, set()))
    assert spec.type == "concat_grad"
    assert spec.inputs["X"] == ["x_0", "x_1"] and spec.inputs["Out@GRAD"] == ["out_out_0@GRAD"]
    assert spec.outputs == {"X@GRAD": ["x_0@GRAD", "x_1@GRAD"]} and spec.attrs["axis"] == 1


def _concat_program(stop):
    prog = headrace.Program()
    block = prog.global_block()
    for name, shape in (("a", [2, 3]), ("b", [2, 1]), ("c", [2, 2])):
        block.create_var(name=name, shape=shape, dtype="float64", need_check_feed=True,
                         stop_gradient=name in stop)
    # a appears twice: its two gradient contributions are summed
    block.append_op("concat", {"X": ["a", "b", "a", "c"]}, {"Out": "out"}, {"axis": -1})
    block.create_var(name="g", shape=[2, 9], dtype="float64", need_check_feed=True,
                     stop_gradient=True)
    return prog, block


@pytest.mark.parametrize("stop", [(), ("b",), ("a", "c"), ("b", "c")])
def test_concat_gradient_of_some_inputs(stop):
    prog, block = _concat_program(stop)
    wanted = [n for n in "abc" if n not in stop]
    grads = headrace.gradients([block.var("out")], [block.var(n) for n in wanted],
                               target_gradients=[block.var("g")])
    rng = np.random.default_rng(0)
    feed = {"a": rng.standard_normal((2, 3)), "b": rng.standard_normal((2, 1)),
            "c": rng.standard_normal((2, 2)), "g": rng.standard_normal((2, 9))}
    got = dict(zip(wanted, Executor().run(prog, feed=feed, fetch_list=grads, scope=Scope())))
    g = feed["g"]
    expected = {"a": g[:, 0:3] + g[:, 4:7], "b": g[:, 3:4], "c": g[:, 7:9]}
    for n in wanted:
        np.testing.assert_array_equal(got[n], expected[n])
    # no gradient variable appears for an input that wants none
    names = set(block.vars)
    for n in stop:
        assert f"{n}@GRAD" not in names


@pytest.mark.parametrize("shapes, dout, axis, expected", [
    ([[2, 3], [2, 4]], [2, 7], 1, [(2, 3), (2, 4)]),
    ([[-1, 3], [-1, 4]], [-1, 7], -1, [(-1, 3), (-1, 4)]),
    ([[5]], [5], 0, [(5,)]),
])
def test_concat_grad_shape_rule(shapes, dout, axis, expected):
    out = infer_shapes("concat_grad", {"X": [(s, "float32") for s in shapes],
                                       "Out@GRAD": (dout, "float32")},
                       outputs={"X@GRAD": len(shapes)}, attrs={"axis": axis})
    assert out["X@GRAD"] == [(e, "float32") for e in expected]


@pytest.mark.parametrize("dout, n_out, match", [
    (([2, 7, 1], "float32"), 2, r"must have the rank of the inputs 'X'"),
    (([2, 7], "float64"), 2, r"must have the dtype of the inputs 'X'"),
    (([2, 7], "float32"), 3, r"one variable per input 'X'(.|\n)*expected: 2 variables"),
])
def test_concat_grad_shape_rule_errors(dout, n_out, match):
    with pytest.raises(ShapeError, match=match):
        infer_shapes("concat_grad", {"X": [([2, 3], "float32"), ([2, 4], "float32")],
                                     "Out@GRAD": dout},
                     outputs={"X@GRAD": n_out}, attrs={"axis": 1})


@pytest.mark.parametrize("shapes, axis", [
    ([(2, 3), (2, 1), (2, 5)], 1),
    ([(2, 3, 4), (2, 2, 4), (2, 0, 4)], -2),
    ([(3, 2), (1, 2)], 0),
    ([(0, 3), (0, 3)], 1),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_concat_grad_kernel(shapes, axis, dtype):
    xs = [arange(s, dtype) for s in shapes]
    g = arange(np.concatenate(xs, axis).shape, dtype, 1000)
    sizes = [x.shape[axis] for x in xs]
    check_op("concat_grad", {"X": xs, "Out@GRAD": g},
             {"X@GRAD": split_expected(g, sizes, axis)}, attrs={"axis": axis})


def test_concat_grad_kernel_reads_only_shapes_of_x():
    # X may be strided or read-only (and is not copied); Out@GRAD likewise
    xs = [arange((3, 8))[:, ::2], arange((3, 2))]
    xs[1].flags.writeable = False
    g = arange((3, 12))[:, ::2]
    (dxs,) = kcs.ConcatGrad({"axis": 1})(xs, None, g)
    for got, exp in zip(dxs, split_expected(g, [4, 2], 1)):
        np.testing.assert_array_equal(got, exp)
        assert got.flags.c_contiguous and not np.shares_memory(got, g)


def test_concat_grad_kernel_skips_empty_gradients():
    # An @EMPTY@ entry has no variable: None in the info.
    info = KernelInfo("concat_grad", {"axis": 0},
                      outputs={"X@GRAD": (SlotVar("a@GRAD"), None, SlotVar("c@GRAD"))})
    kernel = kcs.ConcatGrad({"axis": 0}, info)
    xs = [np.ones((1, 2)), np.ones((2, 2)), np.ones((3, 2))]
    g = arange((6, 2))
    (dxs,) = kernel(xs, None, g)
    assert dxs[1] is None
    np.testing.assert_array_equal(dxs[0], g[:1])
    np.testing.assert_array_equal(dxs[2], g[3:])
    # X@GRAD unbound: nothing computed, inputs still checked
    unbound = kcs.ConcatGrad({"axis": 0}, KernelInfo("concat_grad", {"axis": 0}))
    assert unbound(xs, None, g) == ([],)
    with pytest.raises(ValueError, match=r"hold 6 entries along axis 0, but Out@GRAD has 5"):
        unbound(xs, None, g[:5])


@pytest.mark.parametrize("xs, axis_tensor, dout, kw, error, match", [
    ([np.ones((2, 3)), np.ones((2, 4))], None, np.ones((2, 6)), {"axis": 1}, ValueError,
     r"the inputs X hold 7 entries along axis 1, but Out@GRAD has 6"),
    ([np.ones((2, 3)), np.ones((3, 4))], None, np.ones((2, 7)), {"axis": 1}, ValueError,
     r"X\[1\] has shape \[3, 4\], which does not fit Out@GRAD's \[2, 7\] outside axis 1"),
    ([np.ones((2, 3))], None, np.ones((2, 3, 1)), {"axis": 0}, ValueError, r"X\[0\] has shape"),
    ([np.ones((2, 3), "float32")], None, np.ones((2, 3)), {"axis": 0}, TypeError,
     r"X\[0\] is float32 but Out@GRAD is float64"),
    ([np.ones((2, 3), "int32")], None, np.ones((2, 3), "int32"), {"axis": 0}, TypeError,
     r"Out@GRAD has dtype int32; supported: float32, float64"),
    ([np.ones((2, 3))], None, np.ones(()), {"axis": 0}, ValueError, r"Out@GRAD is 0-D"),
    ([np.ones((2, 3))], None, np.ones((2, 3)), {"axis": 2}, IndexError,
     r"axis 2 is out of range for rank 2"),
    ([np.ones((2, 3))], np.array([0, 1]), np.ones((2, 3)), {"axis": 0}, ValueError,
     r"'AxisTensor' must hold exactly one element"),
    ([], None, np.ones((2, 3)), {"axis": 0}, ValueError, r"non-empty list"),
    ([np.ones(2), "x"], None, np.ones(4), {"axis": 0}, TypeError,
     r"input 'X\[1\]' must be a dense tensor"),
    ([np.ones(2)], None, [1.0, 2.0], {"axis": 0}, TypeError,
     r"input 'Out@GRAD' must be a dense tensor"),
])
def test_concat_grad_direct_bad_inputs(xs, axis_tensor, dout, kw, error, match):
    with pytest.raises(error, match=match):
        kcs.ConcatGrad(kw)(xs, axis_tensor, dout)
