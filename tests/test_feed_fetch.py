"""feed / fetch: holder kinds, col, and that the executor-interpreted ops infer nothing else."""
import pytest

import headrace
from headrace.errors import OpValidationError, ShapeError
from headrace.ops import default_registry

FEED = {"name": "feed", "type": "feed_minibatch"}
FETCH = {"name": "fetch", "type": "fetch_list"}


def _program():
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(**FEED)
    return prog, block


@pytest.mark.parametrize("op_type", ["feed", "fetch"])
def test_interpreted_by_the_executor(op_type):
    opdef = default_registry().get(op_type)
    assert opdef.no_kernel and not opdef.differentiable
    assert opdef.attrs["col"].required


def test_feed_keeps_the_declared_shape():
    prog, block = _program()
    x = block.create_var(name="img", shape=[-1, 1, 8, 8], dtype="float32", lod_level=1)
    op = block.append_op("feed", {"X": "feed"}, {"Out": "img"}, {"col": 0})
    assert (x.shape, x.dtype, x.lod_level) == ((-1, 1, 8, 8), "float32", 1)
    assert op.attr("col") == 0 and op.input("X") == ["feed"]


def test_feed_creates_an_undeclared_output():
    prog, block = _program()
    block.append_op("feed", {"X": "feed"}, {"Out": "x"}, {"col": 3})
    assert block.var("x").kind == "lod_tensor"


def test_fetch_creates_the_holder():
    prog, block = _program()
    block.create_var(name="loss", shape=[1], dtype="float32")
    block.append_op("fetch", {"X": "loss"}, {"Out": "fetch"}, {"col": 0})
    assert block.var("fetch").kind == "fetch_list"


@pytest.mark.parametrize("kind", ["lod_tensor", "lod_tensor_array", "selected_rows"])
def test_fetch_accepts_tensor_kinds(kind):
    prog, block = _program()
    block.create_var(name="fetch", type="fetch_list")
    block.create_var(name="v", shape=[2, 3], dtype="int64", type=kind)
    block.append_op("fetch", {"X": "v"}, {"Out": "fetch"}, {"col": 1})
    assert block.var("fetch").kind == "fetch_list"


def test_feed_from_a_tensor_is_an_error():
    prog, block = _program()
    block.create_var(name="t", shape=[1], dtype="float32")
    with pytest.raises(ShapeError, match=r"input 'X' \(t\) is a lod_tensor(.|\n)*feed_minibatch"):
        block.append_op("feed", {"X": "t"}, {"Out": "x"}, {"col": 0})


def test_fetch_of_a_holder_is_an_error():
    prog, block = _program()
    with pytest.raises(ShapeError, match=r"input 'X' \(feed\) is a feed_minibatch"):
        block.append_op("fetch", {"X": "feed"}, {"Out": "fetch"}, {"col": 0})


def test_fetch_into_a_tensor_is_an_error():
    prog, block = _program()
    block.create_var(name="loss", shape=[1], dtype="float32")
    block.create_var(name="fetch", shape=[1], dtype="float32")  # wrong kind
    with pytest.raises(headrace.OpError, match=r"fetch_list"):
        block.append_op("fetch", {"X": "loss"}, {"Out": "fetch"}, {"col": 0})
    assert not block.ops  # a rejected op leaves the program unchanged


@pytest.mark.parametrize("op_type, ins, outs", [
    ("feed", {"X": "feed"}, {"Out": "x"}),
    ("fetch", {"X": "feed"}, {"Out": "fetch"}),
])
@pytest.mark.parametrize("attrs, match", [
    ({"col": -1}, r"attribute 'col' must be >= 0"),
    ({}, r"missing required attribute 'col'"),
    ({"col": 1.5}, r"attribute 'col' is not of type int"),
])
def test_col_checks(op_type, ins, outs, attrs, match):
    prog, block = _program()
    with pytest.raises(OpValidationError, match=match):
        block.append_op(op_type, ins, outs, attrs)


def test_lod_variables_take_nested_python_sequences():
    # Fluid's habit: a batch of word-id sentences fed as a list of lists.
    import numpy as np

    import headrace as hr
    main = hr.Program()
    with hr.program_guard(main, hr.Program()):
        words = hr.layers.data("words", shape=[1], dtype="int64", lod_level=1)
        docs = hr.layers.data("docs", shape=[2], dtype="float32", lod_level=2)
        a = hr.layers.scale(hr.layers.cast(words, "float32"), scale=1.0)
        b = hr.layers.scale(docs, scale=2.0)
    ta, tb = hr.Executor().run(
        main, feed={"words": [[1, 2, 3], [], [4]],
                    "docs": [[[[1, 1]], [[2, 2], [3, 3]]], [[[4, 4]]]]},
        fetch_list=[a, b], scope=hr.Scope(), return_numpy=False)
    assert np.asarray(ta).ravel().tolist() == [1, 2, 3, 4] and ta.lod == [[0, 3, 3, 4]]
    assert tb.lod == [[0, 2, 3], [0, 1, 3, 4]]
    np.testing.assert_array_equal(np.asarray(tb), 2 * np.array([[1, 1], [2, 2], [3, 3],
                                                                [4, 4]], np.float32))
    with pytest.raises(hr.HeadraceError, match="expected sequences nested 2 deep"):
        hr.Executor().run(main, feed={"words": [[1]], "docs": [[1, 2]]}, fetch_list=[b],
                          scope=hr.Scope())
