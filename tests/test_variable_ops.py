"""Python operators on Variables (framework/math_ops.py) and ``Variable.grad``."""
import operator

import numpy as np
import pytest

import headrace as hr
from headrace import VariableError


@pytest.fixture
def prog():
    """A program that is NOT the default main program: operators must use the variable's."""
    p = hr.Program()
    b = p.global_block()
    b.create_var(name="x", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.create_var(name="y", shape=[-1, 3], dtype="float32", need_check_feed=True)
    b.create_var(name="r", shape=[3], dtype="float32", need_check_feed=True)
    b.create_var(name="i", shape=[-1, 3], dtype="int64", need_check_feed=True)
    return p


XV = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.5]], np.float32)
YV = np.array([[2.0, 1.0, -1.0], [3.0, 0.5, 2.0]], np.float32)
RV = np.array([1.0, 2.0, 4.0], np.float32)
IV = np.array([[1, 2, 3], [4, 5, 6]], np.int64)


def evaluate(prog, out):
    (got,) = hr.Executor().run(prog, feed={"x": XV, "y": YV, "r": RV, "i": IV},
                               fetch_list=[out], scope=hr.Scope())
    return got


def new_ops(prog, before):
    return [op.type for op in prog.global_block().ops[before:]]


BINARY = [
    ("add", operator.add, "elementwise_add"),
    ("sub", operator.sub, "elementwise_sub"),
    ("mul", operator.mul, "elementwise_mul"),
    ("div", operator.truediv, "elementwise_div"),
    ("pow", operator.pow, "elementwise_pow"),
]


@pytest.mark.parametrize("name, fn, op_type", BINARY, ids=[b[0] for b in BINARY])
def test_variable_with_variable(prog, name, fn, op_type):
    b = prog.global_block()
    x, y, r = b.var("x"), b.var("y"), b.var("r")
    base = abs(x) if name == "pow" else x  # no fractional powers of negative numbers
    n = len(b.ops)
    out = fn(base, y)
    (op,) = b.ops[n:]
    assert op.type == op_type and op.attr("axis") == -1
    assert op.input("X") == [base.name] and op.input("Y") == ["y"]
    assert op.output("Out") == [out.name]
    assert out.shape == (-1, 3) and out.dtype == "float32" and out.block is b
    assert not hr.default_main_program().global_block().ops  # never the default program
    broadcast = fn(base, r)
    assert broadcast.shape == (-1, 3)
    ref_x = np.abs(XV) if name == "pow" else XV
    np.testing.assert_allclose(evaluate(prog, out), fn(ref_x, YV), rtol=1e-5)
    np.testing.assert_allclose(evaluate(prog, broadcast), fn(ref_x, RV), rtol=1e-5)


@pytest.mark.parametrize("expr, ref, attrs", [
    (lambda v: v + 2, lambda a: a + 2, {"scale": 1.0, "bias": 2.0}),
    (lambda v: 2 + v, lambda a: 2 + a, {"scale": 1.0, "bias": 2.0}),
    (lambda v: v - 1.5, lambda a: a - 1.5, {"scale": 1.0, "bias": -1.5}),
    (lambda v: 1.5 - v, lambda a: 1.5 - a, {"scale": -1.0, "bias": 1.5}),
    (lambda v: v * 3, lambda a: a * 3, {"scale": 3.0, "bias": 0.0}),
    (lambda v: 3 * v, lambda a: 3 * a, {"scale": 3.0, "bias": 0.0}),
    (lambda v: v / 4, lambda a: a / 4, {"scale": 0.25, "bias": 0.0}),
    (lambda v: -v, lambda a: -a, {"scale": -1.0, "bias": 0.0}),
    (lambda v: np.float32(2) * v, lambda a: 2 * a, {"scale": 2.0, "bias": 0.0}),
])
def test_float_variable_with_scalar_is_one_scale_op(prog, expr, ref, attrs):
    b = prog.global_block()
    out = expr(b.var("x"))
    (op,) = b.ops
    assert op.type == "scale" and op.attr("bias_after_scale")
    for k, v in attrs.items():
        assert op.attr(k) == pytest.approx(v)
    assert out.shape == (-1, 3)
    np.testing.assert_allclose(evaluate(prog, out), ref(XV), rtol=1e-6)


@pytest.mark.parametrize("expr, ref, op_type", [
    (lambda v: 2 / v, lambda a: 2 / a, "elementwise_div"),
    (lambda v: v ** 2, lambda a: a ** 2, "elementwise_pow"),
    (lambda v: 2 ** v, lambda a: 2.0 ** a, "elementwise_pow"),
    (lambda v: v / 0.0, lambda a: a / 0.0, "elementwise_div"),
])
def test_float_variable_with_scalar_elementwise(prog, expr, ref, op_type):
    b = prog.global_block()
    with np.errstate(divide="ignore"):
        want = ref(XV)
    out = expr(b.var("x"))
    fill, op = b.ops
    assert fill.type == "fill_constant" and fill.attr("shape") == [1] and fill.attr("dtype") == 5
    assert op.type == op_type and out.shape == (-1, 3)
    np.testing.assert_allclose(evaluate(prog, out), want, rtol=1e-5)


@pytest.mark.parametrize("expr, ref", [
    (lambda v: v + 2, lambda a: a + 2),
    (lambda v: 10 - v, lambda a: 10 - a),
    (lambda v: v * 3, lambda a: a * 3),
    (lambda v: -v, lambda a: -a),
])
def test_integer_variable_with_scalar(prog, expr, ref):
    b = prog.global_block()
    out = expr(b.var("i"))
    assert [op.type for op in b.ops][0] == "fill_constant"
    assert b.ops[0].attr("dtype") == 3 and out.dtype == "int64"
    got = evaluate(prog, out)
    np.testing.assert_array_equal(got, ref(IV))
    assert got.dtype == np.int64


@pytest.mark.parametrize("fn, op_type", [
    (operator.lt, "less_than"), (operator.le, "less_equal"),
    (operator.gt, "greater_than"), (operator.ge, "greater_equal"),
])
def test_comparisons(prog, fn, op_type):
    b = prog.global_block()
    x, y = b.var("x"), b.var("y")
    out = fn(x, y)
    (op,) = b.ops
    assert op.type == op_type and out.dtype == "bool" and out.stop_gradient
    with_scalar = fn(x, 1.0)
    reflected = fn(1.0, x)  # Python swaps: 1.0 < x is x > 1.0
    assert new_ops(prog, 1) == ["fill_constant", op_type, "fill_constant",
                                {"less_than": "greater_than", "less_equal": "greater_equal",
                                 "greater_than": "less_than",
                                 "greater_equal": "less_equal"}[op_type]]
    np.testing.assert_array_equal(evaluate(prog, out), fn(XV, YV))
    np.testing.assert_array_equal(evaluate(prog, with_scalar), fn(XV, 1.0))
    np.testing.assert_array_equal(evaluate(prog, reflected), fn(1.0, XV))


def test_equality_stays_identity_and_hashable(prog):
    b = prog.global_block()
    x, y = b.var("x"), b.var("y")
    assert (x == x) is True and (x == y) is False and (x != y) is True
    assert x in [y, x] and [y, x].index(x) == 1 and {x: 1, y: 2}[y] == 2
    assert len({x, y, b.var("x")}) == 2
    assert not b.ops  # none of that built an op
    eq, ne = x.equal(y), x.not_equal(2.0)
    assert [op.type for op in b.ops] == ["equal", "fill_constant", "not_equal"]
    assert eq.dtype == ne.dtype == "bool"
    np.testing.assert_array_equal(evaluate(prog, eq), XV == YV)
    np.testing.assert_array_equal(evaluate(prog, ne), XV != 2.0)


def test_operators_are_a_visible_mixin():
    # Variable inherits its operators from VariableMathMixin: they are in the MRO and in
    # help(Variable), not attached to the class by an import side effect.
    from headrace.framework.math_ops import VariableMathMixin
    from headrace.framework.variable import Variable
    assert Variable.__bases__ == (VariableMathMixin,)
    for name in ("__add__", "__radd__", "__rsub__", "__truediv__", "__pow__", "__matmul__",
                 "__lt__", "__neg__", "__abs__", "astype", "equal", "not_equal"):
        assert name in VariableMathMixin.__dict__, name
        assert name not in Variable.__dict__, name
        assert VariableMathMixin.__dict__[name].__name__ == name  # help() and tracebacks
    assert "__eq__" not in VariableMathMixin.__dict__  # identity stays Variable's own


def test_scalar_operand_constant_takes_no_gradient(prog):
    i = prog.global_block().var("i")
    out = i + 2  # an integer operand: fill_constant + elementwise_add
    const = prog.global_block().var(out.op.input("Y")[0])
    assert const.op.type == "fill_constant" and const.stop_gradient


def test_astype_abs_matmul(prog):
    b = prog.global_block()
    x, i = b.var("x"), b.var("i")
    c = x.astype("int32")
    d = i.astype(np.float64)
    a = abs(x)
    m = x @ b.var("r")
    ops = b.ops
    assert [op.type for op in ops] == ["cast", "cast", "abs", "matmul"]
    assert ops[0].attr("in_dtype") == 5 and ops[0].attr("out_dtype") == 2 and c.dtype == "int32"
    assert d.dtype == "float64" and m.shape == (-1,)
    np.testing.assert_array_equal(evaluate(prog, c), XV.astype(np.int32))
    np.testing.assert_array_equal(evaluate(prog, d), IV.astype(np.float64))
    np.testing.assert_array_equal(evaluate(prog, a), np.abs(XV))
    np.testing.assert_allclose(evaluate(prog, m), XV @ RV, rtol=1e-6)


def test_chained_expression(prog):
    b = prog.global_block()
    x, y = b.var("x"), b.var("y")
    out = (x * 2 - y) / (abs(y) + 1) + 0.5
    np.testing.assert_allclose(evaluate(prog, out), (XV * 2 - YV) / (np.abs(YV) + 1) + 0.5,
                               rtol=1e-5)


def test_ops_go_to_the_current_block(prog):
    x = prog.global_block().var("x")
    with prog.block_guard() as sub:
        y = x * 2 + 1
        z = x < 0
    assert y.block is sub and z.block is sub
    assert [op.type for op in sub.ops] == ["scale", "scale", "fill_constant", "less_than"]
    assert not prog.global_block().ops


def test_unsupported_operands(prog):
    x = prog.global_block().var("x")
    with pytest.raises(TypeError):
        x + "1"
    with pytest.raises(TypeError):
        x < [1, 2]
    with pytest.raises(TypeError):
        x @ 2
    other = hr.Program().global_block().create_var(name="o", shape=[3], dtype="float32")
    with pytest.raises(hr.OpError, match="input variable 'o'"):
        x + other
    with pytest.raises(hr.OpError, match="same dtype|dtype"):
        x + prog.global_block().var("i")
    with pytest.raises(VariableError, match="unknown dtype"):
        x.astype("float13")


# -- Variable.grad -------------------------------------------------------------------------------

def test_grad_property_after_backward():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard():
        w = hr.layers.create_parameter([1], "float32",
                                       default_initializer=hr.initializer.Constant(2.0))
        loss = w * 3.0 + 1.0
        with pytest.raises(VariableError, match="'create_parameter_0.w_0' has no gradient: its "
                                                "program has no variable "
                                                "'create_parameter_0.w_0@GRAD'. Build the "
                                                "backward pass first"):
            w.grad
        hr.append_backward(loss)
    assert w.grad is main.global_block().var("create_parameter_0.w_0@GRAD")
    scope = hr.Scope()
    exe = hr.Executor()
    exe.run(startup, scope=scope)
    wv, gv = exe.run(main, fetch_list=[w, w.grad], scope=scope)
    assert wv.tolist() == [2.0] and gv.tolist() == [3.0]
