"""The seeds' Python API, item by item, as ``shared/seeds/`` writes it (issue 8, item 5).

python_api (Block / Operator / Variable / Parameter / Layer Function sections):
``Block.create_var`` is ``Variable(self, ...)``, ``append_operator`` is ``Operator(self, ...)``,
``create_parameter`` puts a parameter made in a sub-block into the global block with its
initializer op, ``Variable.writer`` tracks the op that writes it, the data layer uses
``create_global_var``, the fc layer sets ``out.writer = op``. programs: ``cost =
layer.mse(y, l)``, then optimize and train. variable design: ``pd.eval(targets=[var1, var2])``
runs the ops the targets need. Numbers are checked against NumPy.
"""
import numpy as np
import pytest

import headrace as hr
from headrace import LayerError, OpError, VariableError
from headrace.initializer import Constant, NumpyArrayInitializer

L = hr.layers
W0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])


@pytest.fixture
def progs():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup), hr.unique_name.guard(), hr.scope_guard(hr.Scope()):
        yield main, startup


# -- Variable(block, ...): Block.create_var is ``Variable(self, ...)`` -------------------------

def test_variable_constructor_declares_in_the_block(progs):
    main, _ = progs
    block = main.global_block()
    x = hr.Variable(block, name="x", shape=[-1, 3], dtype="float64", lod_level=1)
    assert block.vars["x"] is x and x.block is block
    assert [d.name for d in block.desc.vars] == ["x"]
    assert (x.shape, x.dtype, x.lod_level, x.kind) == ((-1, 3), "float64", 1, "lod_tensor")
    # "core.NewVarDesc must NOT create a new VarDesc message if its name already exists"
    assert hr.Variable(block, name="x") is x and block.create_var(name="x") is x
    assert [d.name for d in block.desc.vars] == ["x"]
    with pytest.raises(VariableError, match=r"'x' is re-declared .* shape \[4\]"):
        hr.Variable(block, name="x", shape=[4])
    # name=None: "name = unique_name_generator()"
    a, b = hr.Variable(block, shape=[2]), hr.Variable(block, shape=[2])
    assert a.name != b.name and block.vars[a.name] is a and block.vars[b.name] is b
    assert isinstance(x, hr.Variable) and type(x) is hr.Variable


def test_variable_without_a_block_goes_to_the_current_block(progs):
    main, _ = progs
    x = hr.Variable(name="x", shape=[2], dtype="float32")
    with main.block_guard() as sub:
        y = hr.Variable(name="y", shape=[2])
    assert main.global_block().vars["x"] is x and sub.vars["y"] is y and "y" not in \
        main.global_block().vars
    with pytest.raises(VariableError, match="first argument is the Block"):
        hr.Variable("x", shape=[2])


def test_create_global_var_from_a_sub_block(progs):
    main, _ = progs
    with main.block_guard() as sub:
        v = sub.create_global_var(name="images", shape=[-1, 4], dtype="float32")
    assert main.global_block().vars["images"] is v and "images" not in sub.vars


# -- Operator(block, ...): append_operator is ``self.ops.append(Operator(self, ...))`` ---------

def test_operator_constructor_appends_a_validated_op(progs):
    main, _ = progs
    block = main.global_block()
    hr.Variable(block, name="x", shape=[2, 3], dtype="float64")
    op = hr.Operator(block, type="relu", inputs={"X": ["x"]}, outputs={"Out": ["y"]})
    assert block.ops == [op] and block.desc.ops[0].type == "relu" and op.desc is block.desc.ops[0]
    y = block.var("y")
    assert (y.shape, y.dtype) == ((2, 3), "float64")  # shape inference ran
    # The seeds' positional order: (block, type, inputs, outputs, attrs).
    op2 = hr.Operator(block, "scale", {"X": [y]}, {"Out": ["z"]}, {"scale": 3.0, "bias": 1.0})
    assert block.ops == [op, op2] and op2.attr("scale") == 3.0
    x = np.array([[-1.0, 0.5, 2.0], [3.0, -0.25, 0.0]])
    z = hr.eval(block.var("z"), feed={"x": x})
    np.testing.assert_allclose(z, np.maximum(x, 0) * 3.0 + 1.0)


def test_operator_constructor_rejects_a_bad_op_and_changes_nothing(progs):
    main, _ = progs
    block = main.global_block()
    hr.Variable(block, name="x", shape=[2], dtype="float32")
    before = main.serialize_to_string()
    with pytest.raises(OpError, match="unknown input slot 'Y'"):
        hr.Operator(block, type="relu", inputs={"Y": ["x"]}, outputs={"Out": ["y"]})
    with pytest.raises(OpError, match="no plugin registered"):
        hr.Operator(block, type="relux", inputs={"X": ["x"]}, outputs={"Out": ["y"]})
    with pytest.raises(OpError, match="an op type must be a non-empty str"):
        hr.Operator(block, inputs={"X": ["x"]}, outputs={"Out": ["y"]})
    assert main.serialize_to_string() == before and block.ops == [] and "y" not in block.vars


def test_append_operator_and_prepend_operator(progs):
    main, _ = progs
    block = main.global_block()
    x = hr.Variable(block, name="x", shape=[2], dtype="float32")
    second = block.append_operator("scale", {"X": x}, {"Out": "y"}, {"scale": 2.0})
    first = block.prepend_operator("fill_constant", {}, {"Out": x},
                                   {"shape": [2], "dtype": 5, "value": 1.5})
    assert block.ops == [first, second]
    np.testing.assert_array_equal(hr.eval(block.var("y")), [3.0, 3.0])


def test_programs_loaded_from_bytes_wrap_their_descs(progs):
    """Parsing makes views of existing descs: nothing is declared or appended twice."""
    main, _ = progs
    block = main.global_block()
    hr.Variable(block, name="x", shape=[2], dtype="float32")
    hr.Operator(block, type="relu", inputs={"X": ["x"]}, outputs={"Out": ["y"]})
    block.create_parameter("w", [2], initializer=Constant(1.0))
    again = hr.Program.parse_from_string(main.serialize_to_string())
    assert again.serialize_to_string() == main.serialize_to_string()
    g = again.global_block()
    assert type(g.var("x")) is hr.Variable and type(g.var("w")) is hr.Parameter
    assert g.var("y").writer is g.ops[0] and type(g.ops[0]) is hr.Operator


# -- Variable.writer -------------------------------------------------------------------------

def test_writer_is_the_op_that_last_writes_the_variable(progs):
    main, _ = progs
    block = main.global_block()
    x = L.data("x", [3], dtype="float64")
    w = block.create_parameter("w", [3], dtype="float64", initializer=Constant(2.0))
    assert x.writer is None and w.writer is None  # fed data, a parameter: nobody writes them
    y = x * w
    assert y.writer is y.op and y.writer.type == "elementwise_mul"
    h = block.create_var(name="h", dtype="float64")
    first = block.append_op("relu", {"X": y}, {"Out": h})
    assert h.writer is first
    second = block.append_op("scale", {"X": h}, {"Out": h}, {"scale": -1.0})
    assert h.writer is second  # the last write in block order
    block.remove_op(len(block.ops) - 1)
    assert h.writer is first
    # The startup program's twin of w is written by its initializer op.
    twin = hr.default_startup_program().global_block().var("w")
    assert twin.writer is hr.default_startup_program().global_block().ops[0]


def test_fc_layer_as_the_seed_writes_it(progs):
    """python_api's fc_layer: create_parameter, create_var, append_operator, out.writer = op."""
    main, startup = progs

    def fc_layer(input, size):
        block = main.current_block()
        w = block.create_parameter("fc.w", [input.shape[1], size], dtype=input.dtype,
                                   initializer=NumpyArrayInitializer(W0))
        b = block.create_parameter("fc.b", [size], dtype=input.dtype, initializer=Constant(0.5))
        tmp = block.create_var(dtype=input.dtype)
        block.append_operator("mul", {"X": input, "Y": w}, {"Out": tmp})
        out = block.create_var(dtype=input.dtype)
        op = block.append_operator("elementwise_add", {"X": tmp, "Y": b}, {"Out": out},
                                   {"axis": 1})
        out.writer = op
        return out

    x = L.data("x", [3], dtype="float64")
    out = fc_layer(x, 2)
    assert out.writer is main.global_block().ops[-1] and out.shape == (-1, 2)
    hr.Executor().run(startup)
    xv = np.arange(12.0).reshape(4, 3) / 7
    np.testing.assert_allclose(hr.eval(out, feed={"x": xv}), xv @ W0 + 0.5, rtol=1e-12)


# -- create_parameter: "parameters are global variables ... created in some sub-blocks" -------

def test_create_parameter_in_a_step_block_lands_in_the_global_block(progs):
    main, startup = progs
    with main.block_guard() as step:  # e.g. "an FC layer in the step block of an RNN operator"
        w = step.create_parameter("rnn.w", [3, 2], dtype="float64",
                                  initializer=NumpyArrayInitializer(W0))
    assert main.global_block().vars["rnn.w"] is w and "rnn.w" not in step.vars
    assert isinstance(w, hr.Parameter) and w.persistable and w.trainable
    assert main.global_block().ops == []  # the initializer is not part of the main program
    sops = startup.global_block().ops
    assert [op.type for op in sops] == ["assign_value"] and sops[0].output("Out") == ["rnn.w"]
    hr.Executor().run(startup)
    np.testing.assert_array_equal(hr.eval(w), W0)
    # Re-declaring returns the same parameter and appends no second initializer.
    assert step.create_parameter("rnn.w", [3, 2], dtype="float64",
                                 initializer=Constant(9.0)) is w
    assert len(startup.global_block().ops) == 1


def test_create_parameter_with_the_seeds_init_attr(progs):
    """``init_attr={type: "uniform_random", min: -1.0, max: 1.0}``: an op type and its attrs."""
    main, startup = progs
    w = main.global_block().create_parameter(
        "w", [50, 4], initializer={"type": "uniform_random", "min": -0.5, "max": 0.25,
                                   "seed": 7})
    op = startup.global_block().ops[0]
    assert op.type == "uniform_random" and op.attr("shape") == [50, 4]
    assert (op.attr("min"), op.attr("max"), op.attr("seed")) == (-0.5, 0.25, 7)
    hr.Executor().run(startup)
    v = hr.eval(w)
    assert v.shape == (50, 4) and v.dtype == np.float32
    assert v.min() >= -0.5 and v.max() < 0.25 and v.std() > 0.1


def test_program_create_parameter_with_init_attr(progs):
    """python_api: ``program.create_parameter(..., init_attr={type: "uniform_random", ...})``."""
    main, startup = progs
    w = main.create_parameter("w", [3], dtype="float64",
                              init_attr={"type": "fill_constant", "value": 0.25})
    assert main.global_block().vars["w"] is w
    hr.Executor().run(startup)
    np.testing.assert_array_equal(hr.eval(w), [0.25] * 3)
    with pytest.raises(hr.ProgramError, match="not both"):
        main.create_parameter("v", [3], initializer=Constant(1.0), init_attr={"type": "x"})


def test_create_parameter_rejects_an_unusable_initializer_and_changes_nothing(progs):
    main, startup = progs
    g = main.global_block()
    with pytest.raises(VariableError, match="initializer must be"):
        g.create_parameter("w", [2], initializer="const")
    with pytest.raises(OpError, match="no plugin registered"):
        g.create_parameter("w", [2], initializer={"type": "load_numpy"})
    assert "w" not in g.vars and "w" not in startup.global_block().vars
    assert startup.global_block().ops == []
    with pytest.raises(VariableError, match="parameter name"):
        g.create_parameter(None, [2])


def test_layers_and_create_parameter_share_one_initialization(progs):
    """A layer's parameter and Block.create_parameter go the same way: one twin, one op."""
    main, startup = progs
    x = L.data("x", [3], dtype="float64")
    L.fc(x, 2, param_attr=hr.ParamAttr(name="shared", initializer=Constant(1.0)),
         bias_attr=False)
    w = main.global_block().create_parameter("shared", [3, 2], dtype="float64",
                                              initializer=Constant(5.0))
    assert [op.output("Out") for op in startup.global_block().ops] == [["shared"]]
    hr.Executor().run(startup)
    np.testing.assert_array_equal(hr.eval(w), np.ones((3, 2)))


def test_a_parameter_declared_first_without_initializer_gets_its_twin_later(progs):
    main, startup = progs
    g = main.global_block()
    w = g.create_parameter("w", [2], dtype="float64")
    assert startup.global_block().vars == {}
    assert g.create_parameter("w", [2], dtype="float64", initializer=Constant(3.0)) is w
    hr.Executor().run(startup)
    np.testing.assert_array_equal(hr.eval(w), [3.0, 3.0])


def test_parameter_constructor(progs):
    """python_api's ``Parameter(block, name, shape, dtype, lod_level, trainable, ...)``."""
    main, startup = progs
    with main.block_guard() as sub:
        p = hr.Parameter(sub, "p", [2, 2], "float64", trainable=False,
                         initializer=Constant(-2.0))
    assert main.global_block().vars["p"] is p and type(p) is hr.Parameter and not p.trainable
    assert hr.Parameter(name="p", shape=[2, 2], dtype="float64") is p
    hr.Executor().run(startup)
    np.testing.assert_array_equal(hr.eval(p), np.full((2, 2), -2.0))


# -- hr.eval: "pd.eval(targets=[var1, var2]) to run the related ops" -------------------------

def test_eval_runs_only_the_ops_the_targets_need(progs):
    main, startup = progs
    x = L.data("x", [2], dtype="float64")
    unfed = L.data("unfed", [2], dtype="float64")
    w = main.global_block().create_parameter("w", [2], dtype="float64",
                                             initializer=Constant(3.0))
    var1 = x * w
    var2 = L.relu(var1 - 1.0)
    L.exp(unfed)  # needs a feed that is not given: must not run
    hr.Executor().run(startup)
    xv = np.array([[1.0, -2.0], [0.5, 4.0]])
    v1, v2 = hr.eval(targets=[var1, var2], feed={"x": xv})
    np.testing.assert_allclose(v1, xv * 3.0)
    np.testing.assert_allclose(v2, np.maximum(xv * 3.0 - 1.0, 0))
    only = hr.eval(var2, feed={x: xv})  # one target: one array; a feed keyed by Variable
    np.testing.assert_allclose(only, v2)
    assert isinstance(hr.eval((var1,), feed={"x": xv}), list)


def test_eval_reads_the_scope_it_is_given(progs):
    main, startup = progs
    w = main.global_block().create_parameter("w", [3], dtype="float64",
                                             initializer=Constant(1.0))
    y = w * 2.0
    other = hr.Scope()
    hr.Executor().run(startup)                 # the global scope (scope_guard'ed here)
    hr.Executor().run(startup, scope=other)
    other.get("w").data = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(hr.eval(y), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(hr.eval(y, scope=other), [2.0, 4.0, 6.0])
    # Same answer as Executor.eval.
    np.testing.assert_array_equal(hr.Executor().eval(y, scope=other), [2.0, 4.0, 6.0])


def test_eval_refuses_targets_of_two_programs(progs):
    main, _ = progs
    a = L.fill_constant([1], "float32", 1.0)
    other = hr.Program()
    with hr.program_guard(other):
        b = L.fill_constant([1], "float32", 2.0)
    with pytest.raises(hr.HeadraceError, match="different programs"):
        hr.eval([a, b])
    with pytest.raises(hr.HeadraceError, match="Variable or a list of Variables"):
        hr.eval("a")


# -- layers.mse: ``cost = layer.mse(y, l)`` ----------------------------------------------------

def test_mse_values_and_gradient(progs):
    main, _ = progs
    block = main.global_block()
    y = hr.Variable(block, name="y", shape=[4, 3], dtype="float64")
    label = L.data("l", [3], dtype="float64")
    cost = L.mse(y, label)
    assert cost.shape == () and L.mse_loss is L.mse          # 0-D, as in Paddle 3
    (gy,) = hr.gradients(cost, [y])
    rng = np.random.RandomState(0)
    yv, lv = rng.randn(4, 3), rng.randn(4, 3)
    c, g = hr.eval([cost, gy], feed={"y": yv, "l": lv})
    assert c.shape == ()
    np.testing.assert_allclose(c, np.mean((yv - lv) ** 2), rtol=1e-12)
    np.testing.assert_allclose(g, 2 * (yv - lv) / yv.size, rtol=1e-12)
    # Finite differences of the executed cost.
    eps, num = 1e-6, np.zeros_like(yv)
    for i in np.ndindex(*yv.shape):
        d = np.zeros_like(yv)
        d[i] = eps
        up = float(hr.eval(cost, feed={"y": yv + d, "l": lv}))
        down = float(hr.eval(cost, feed={"y": yv - d, "l": lv}))
        num[i] = (up - down) / (2 * eps)
    np.testing.assert_allclose(g, num, rtol=1e-6, atol=1e-9)


def test_mse_argument_errors(progs):
    y = L.data("y", [3], dtype="float64")
    with pytest.raises(LayerError, match=r"mse: argument 'label' \(l32\) must have dtype "
                                         r"float64, found float32"):
        L.mse(y, L.data("l32", [3], dtype="float32"))
    with pytest.raises(LayerError, match="mse: argument 'input' must be a Variable"):
        L.mse(np.ones(3), y)


def test_the_programs_seed_trains(progs):
    """programs.md: x = layer.data("images"); l = layer.data("label"); y = layer.fc(x);
    cost = layer.mse(y, l); optimize(cost); train(cost, reader=...)."""
    main, startup = progs
    main.random_seed = startup.random_seed = 1
    x = L.data("images", [4], dtype="float64")
    l = L.data("label", [1], dtype="float64")
    y = L.fc(x, 1)
    cost = L.mse(y, l)
    hr.optimizer.SGD(0.1).minimize(cost)
    rng = np.random.RandomState(3)
    true_w = np.array([[1.0], [-2.0], [0.5], [3.0]])
    reader = [(xb, xb @ true_w + 0.7) for xb in (rng.randn(16, 4) for _ in range(200))]
    exe = hr.Executor()
    exe.run(startup)
    # The values in the scope (eval of a parameter here would run the update that writes it).
    w, b = (hr.global_scope().get(p.name) for p in main.global_block().all_parameters())
    xb, lb = reader[0]
    expected = np.mean((xb @ w.numpy() + b.numpy() - lb) ** 2)
    first = exe.run(main, feed={"images": xb, "label": lb}, fetch_list=[cost])[0]
    assert first.shape == ()
    np.testing.assert_allclose(first, expected, rtol=1e-12)
    for xb, lb in reader[1:]:
        last = exe.run(main, feed={"images": xb, "label": lb}, fetch_list=[cost])[0]
    assert last < 1e-6 < first
    np.testing.assert_allclose(w.numpy(), true_w, atol=1e-3)
    np.testing.assert_allclose(b.numpy(), [0.7], atol=1e-3)
