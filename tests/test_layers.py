"""Layer basics: data, fc and its parameters, the design example, LayerHelper, blocks."""
import math

import numpy as np
import pytest

import headrace as hr
from headrace.testing import op_types, run_programs
from headrace import LayerError, VariableError
from headrace.framework.program import OP_ROLE_FORWARD
from headrace.ops import default_registry

L = hr.layers


# `progs` is a fixture of conftest.py.
types, run = op_types, run_programs


def test_every_op_used_here_runs_on_cpu():
    # The executing tests below rely on these forward kernels.
    reg = default_registry()
    for op in ("conv2d", "pool2d", "mul", "sum", "elementwise_add", "relu", "softmax",
               "softmax_with_cross_entropy", "cross_entropy2", "mean", "lookup_table",
               "batch_norm", "dropout", "top_k", "accuracy", "reshape2", "transpose2", "split",
               "concat", "cast", "fill_constant", "assign_value", "uniform_random",
               "gaussian_random", "reduce_sum", "matmul", "scale", "square"):
        assert "cpu" in reg.kernels_for(op), op


# -- the design document's network -----------------------------------------------------------

def test_design_example_builds_and_runs(progs):
    main, startup = progs
    img = L.data("img", shape=[-1, 1, 8, 8], dtype="float32")
    label = L.data("label", shape=[-1, 1], dtype="int64")
    h = L.conv2d(img, num_filters=16, filter_size=3, padding=1, act="relu")
    h = L.pool2d(h, pool_size=2, pool_type="max", pool_stride=2)
    logits = L.fc(h, size=10)
    loss = L.mean(L.softmax_with_cross_entropy(logits, label))

    assert types(main) == ["conv2d", "elementwise_add", "relu", "pool2d", "mul",
                           "elementwise_add", "softmax_with_cross_entropy", "mean"]
    assert h.shape == (-1, 16, 4, 4) and logits.shape == (-1, 10) and loss.shape == ()
    assert [p.name for p in main.all_parameters()] == \
        ["conv2d_0.w_0", "conv2d_0.b_0", "fc_0.w_0", "fc_0.b_0"]
    assert main.global_block().var("fc_0.w_0").shape == (256, 10)
    # parameters: in both programs; initializer ops only in the startup program
    assert [p.name for p in startup.all_parameters()] == \
        [p.name for p in main.all_parameters()]
    assert types(startup) == ["gaussian_random", "fill_constant", "uniform_random",
                              "fill_constant"]
    conv_init, _, fc_init, _ = startup.global_block().ops
    assert conv_init.attr("std") == pytest.approx(math.sqrt(2.0 / 9), rel=1e-6)
    assert fc_init.attr("max") == pytest.approx(math.sqrt(6.0 / 266), rel=1e-6)
    assert all(op.attr("op_role") == OP_ROLE_FORWARD for op in main.global_block().ops)

    x = np.random.RandomState(0).rand(4, 1, 8, 8).astype("float32")
    y = np.array([[1], [2], [3], [9]], dtype="int64")
    (got,) = run(main, startup, {"img": x, "label": y}, [loss])
    assert got.shape == () and np.isfinite(got).all()


# -- data --------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape, kwargs, expected", [
    ([-1, 1, 8, 8], {}, (-1, 1, 8, 8)),
    ([3], {}, (-1, 3)),
    ([3, 4], {"append_batch_size": False}, (3, 4)),
    ([None, 5], {}, (-1, 5)),
    ([2, -1], {}, (2, -1)),
])
def test_data_shapes(progs, shape, kwargs, expected):
    v = L.data("x", shape, **kwargs)
    assert v.shape == expected
    assert v.need_check_feed and v.stop_gradient and not v.persistable
    assert v.block is progs[0].global_block() and not progs[0].global_block().ops


def test_data_dtype_lod_and_redeclaration(progs):
    v = L.data("words", [1], dtype="int64", lod_level=1)
    assert (v.dtype, v.lod_level) == ("int64", 1)
    assert L.data("words", [1], dtype="int64", lod_level=1) is v
    with pytest.raises(VariableError, match="re-declared"):
        L.data("words", [2], dtype="int64")


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "", "shape": [1]}, "data: argument 'name'"),
    ({"name": "x", "shape": 3}, "data: argument 'shape'"),
    ({"name": "x", "shape": [0, 2]}, "has a 0 dim"),
    ({"name": "x", "shape": [1.5]}, "data: argument 'shape' must be an int"),
    ({"name": "x", "shape": [1], "dtype": "float13"}, "data: argument 'dtype'"),
    ({"name": "x", "shape": [1], "lod_level": -1}, "data: argument 'lod_level'"),
])
def test_data_errors(progs, kwargs, message):
    with pytest.raises(LayerError, match=message):
        L.data(**kwargs)


# -- fc ----------------------------------------------------------------------------------------

def test_fc_names_shapes_attrs(progs):
    main, startup = progs
    x = L.data("x", [3, 4])
    out = L.fc(x, size=5, num_flatten_dims=2, act="tanh")
    assert out.shape == (-1, 3, 5)
    mul, add, act = main.global_block().ops
    assert (mul.type, add.type, act.type) == ("mul", "elementwise_add", "tanh")
    assert mul.attr("x_num_col_dims") == 2 and mul.attr("y_num_col_dims") == 1
    assert mul.input("Y") == ["fc_0.w_0"] and mul.output("Out") == ["fc_0.tmp_0"]
    assert add.attr("axis") == 2 and add.input("Y") == ["fc_0.b_0"]
    assert act.output("Out") == [out.name] == ["fc_0.tmp_2"]
    assert isinstance(out.param, hr.Parameter) and out.param.name == "fc_0.w_0"
    assert out.param.block is main.global_block() and out.param.shape == (4, 5)
    assert out.bias.name == "fc_0.b_0" and out.bias.shape == (5,)
    assert out.params == [out.param]
    assert out.param.trainable and out.param.persistable
    sw, sb = startup.all_parameters()
    assert (sw.name, sw.shape, sb.name) == ("fc_0.w_0", (4, 5), "fc_0.b_0")
    init_w, init_b = startup.global_block().ops
    assert init_w.type == "uniform_random" and init_w.output("Out") == ["fc_0.w_0"]
    assert init_w.attr("shape") == [4, 5] and init_w.attr("seed") == 0
    assert init_w.attr("max") == pytest.approx(math.sqrt(6.0 / 9)) == -init_w.attr("min")
    assert init_b.type == "fill_constant" and init_b.attr("value") == 0.0
    assert init_b.attr("shape") == [5]


def test_fc_second_layer_counts_up(progs):
    x = L.data("x", [4])
    a = L.fc(x, 3)
    b = L.fc(a, 2, name="head")
    c = L.fc(a, 2)
    assert (a.param.name, b.param.name, c.param.name) == ("fc_0.w_0", "head.w_0", "fc_1.w_0")


def test_fc_multiple_inputs_are_summed(progs):
    main, _ = progs
    x, y = L.data("x", [4]), L.data("y", [2, 3])
    out = L.fc([x, y], size=6, param_attr=["wx", hr.ParamAttr(name="wy")], bias_attr=False,
               act="relu")
    assert types(main) == ["mul", "mul", "sum", "relu"]
    assert [p.name for p in out.params] == ["wx", "wy"] and out.param == out.params
    assert out.params[1].shape == (6, 6) and out.bias is None
    assert main.global_block().ops[2].input("X") == ["fc_0.tmp_0", "fc_0.tmp_1"]


def test_fc_forward_matches_numpy(progs):
    main, startup = progs
    x = L.data("x", [2, 3])
    out = L.fc(x, size=4, act="relu", bias_attr=hr.ParamAttr(
        initializer=hr.initializer.Constant(0.25)))
    data = np.random.RandomState(1).randn(5, 2, 3).astype("float32")
    got, w, b = run(main, startup, {"x": data}, [out, out.param, out.bias])
    np.testing.assert_array_equal(b, np.full(4, 0.25, np.float32))
    np.testing.assert_allclose(got, np.maximum(data.reshape(5, 6) @ w + b, 0), rtol=1e-5)


def test_shared_parameter_by_name(progs):
    main, startup = progs
    x = L.data("x", [4])
    a = L.fc(x, 3, param_attr="shared_w", bias_attr=False)
    b = L.fc(x, 3, param_attr="shared_w", bias_attr=False)
    assert a.param is b.param
    assert types(startup) == ["uniform_random"]  # initialized once
    assert types(main) == ["mul", "mul"]


def test_param_attr_fields_reach_the_parameter(progs):
    main, startup = progs
    reg, clip = hr.regularizer.L2Decay(0.1), hr.clip.GradientClipByValue(1.0)
    x = L.data("x", [4])
    out = L.fc(x, 3, param_attr=hr.ParamAttr(
        name="w", initializer=hr.initializer.Normal(0.0, 0.5, seed=7), learning_rate=0.3,
        regularizer=reg, trainable=False, gradient_clip=clip))
    p = out.param
    assert p.optimize_attr == {"learning_rate": 0.3}
    assert p.regularizer is reg and p.gradient_clip is clip and not p.trainable
    assert p.stop_gradient and isinstance(p.initializer, hr.initializer.Normal)
    sp = startup.global_block().var("w")
    assert not sp.trainable and sp.regularizer is reg
    op = startup.global_block().ops[0]
    assert (op.type, op.attr("std"), op.attr("seed")) == ("gaussian_random", 0.5, 7)


def test_fc_errors(progs):
    x = L.data("x", [3, 4])
    with pytest.raises(LayerError, match="fc: argument 'size' must be >= 1"):
        L.fc(x, 0)
    with pytest.raises(LayerError, match="fc: argument 'size' must be an int"):
        L.fc(x, 2.5)
    with pytest.raises(LayerError, match="num_flatten_dims' \\(3\\) must be less than the rank"):
        L.fc(x, 2, num_flatten_dims=3)
    with pytest.raises(LayerError, match="needs known dims"):
        L.fc(L.data("z", [4, -1], append_batch_size=False), 2)
    with pytest.raises(LayerError, match="fc: argument 'input' must be a Variable"):
        L.fc("x", 2)
    with pytest.raises(LayerError, match="'act' names an unknown activation 'relux'; valid: relu"):
        L.fc(x, 2, act="relux")
    with pytest.raises(LayerError, match="argument 'param_attr' must be a ParamAttr"):
        L.fc(x, 2, param_attr=3.5)
    with pytest.raises(LayerError, match="share one dtype"):
        L.fc([x, L.data("d", [4], dtype="float64")], 2)


def test_activation_as_dict_with_attrs(progs):
    main, _ = progs
    out = L.fc(L.data("x", [4]), 3, act={"type": "leaky_relu", "alpha": 0.1})
    op = main.global_block().ops[-1]
    assert op.type == "leaky_relu" and op.attr("alpha") == pytest.approx(0.1)
    assert op.output("Out") == [out.name]


def test_op_source_is_the_users_line(progs):
    main, _ = progs
    L.fc(L.data("x", [4]), 3)  # the line ops point at
    for op in main.global_block().ops:
        assert "test_layers.py" in op.source and "L.fc(" in op.source


# -- LayerHelper -------------------------------------------------------------------------------

def test_layer_helper_basics(progs):
    main, startup = progs
    x = L.data("x", [4])
    helper = hr.LayerHelper("my_layer", input=[x, x], act="relu", param_attr="pw",
                            bias_attr=False)
    assert helper.name == "my_layer_0" and helper.kwargs["act"] == "relu"
    assert helper.main_program is main and helper.startup_program is startup
    assert helper.multiple_input() == [x, x]
    with pytest.raises(LayerError, match="my_layer: argument 'input' must be a Variable, got"):
        helper.input()
    assert [a.name for a in helper.multiple_param_attr(2)] == ["pw", "pw"]
    tmp = helper.create_variable_for_type_inference("float32")
    assert tmp.name == "my_layer_0.tmp_0" and helper.create_tmp_variable("int64").name == \
        "my_layer_0.tmp_1"
    w = helper.create_parameter(helper.param_attr, [4, 2], "float32")
    assert w.name == "pw" and startup.global_block().var("pw").shape == (4, 2)
    assert helper.append_bias_op(tmp) is tmp  # bias_attr=False
    out = helper.append_activation(tmp)
    assert out.op.type == "relu" and out.name == "my_layer_0.tmp_2"
    assert helper.create_parameter(False, [2], "float32") is None
    with pytest.raises(LayerError, match="my_layer: cannot create a parameter of shape"):
        helper.create_parameter(hr.ParamAttr(), [-1, 2], "float32")
    g, fresh = helper.create_or_get_global_variable("counter", shape=[1], dtype="int64")
    assert fresh and helper.create_or_get_global_variable("counter")[0] is g
    assert not helper.create_or_get_global_variable("counter")[1]
    helper.set_variable_initializer(g, hr.initializer.Constant(4))
    assert startup.global_block().ops[-1].output("Out") == ["counter"]
    with pytest.raises(LayerError, match="my_layer: argument 'name'"):
        hr.LayerHelper("my_layer", name="")


def test_layers_go_to_the_current_block(progs):
    main, _ = progs
    x = L.data("x", [3])
    with main.block_guard() as sub:
        y = L.relu(x)
        z = L.fc(x, 2)
    assert y.block is sub and [op.type for op in sub.ops] == ["relu", "mul", "elementwise_add"]
    assert z.param.block is main.global_block()  # parameters are global
    assert not main.global_block().ops


def test_clone_for_test_keeps_forward_ops(progs):
    main, _ = progs
    h = L.dropout(L.batch_norm(L.data("x", [2, 2, 2])), 0.5)
    L.mean(h)
    test = main.clone(for_test=True)
    assert types(test) == types(main)
    assert all(op.attr("is_test") for op in test.global_block().ops
               if op.opdef is not None and "is_test" in op.opdef.attrs)
