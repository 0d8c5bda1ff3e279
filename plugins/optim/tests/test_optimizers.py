"""The optimizer update ops (sgd, momentum, adam, adagrad, rmsprop): shape rules, attributes."""
import re

import pytest

import headrace
from headrace.errors import OpValidationError, ShapeError
from headrace.ops import default_registry
from headrace_optim.reference._cases import OPS, OPTIMIZERS, STATES, build  # noqa: F401


@pytest.mark.parametrize("op_type", OPS)
def test_no_gradient(op_type):
    assert not default_registry().get(op_type).differentiable


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_update_in_place(op_type, dtype):
    block, op = build(op_type, dtype=dtype)
    assert op.output("ParamOut") == op.input("Param") == ["param"]
    for s in OPTIMIZERS[op_type][0]:
        assert op.output(f"{s}Out") == op.input(s)
    for v in block.vars.values():
        assert v.dtype == dtype
        assert v.shape == ((1,) if v.name in ("learningrate", "beta1pow", "beta2pow") else (4, 3))


@pytest.mark.parametrize("op_type", OPS)
def test_separate_outputs_take_the_input_descriptions(op_type):
    dense = OPTIMIZERS[op_type][0]
    outs = {"ParamOut": "p_new", **{f"{s}Out": f"{s.lower()}_new" for s in dense}}
    block, _ = build(op_type, shape=(-1, 8), outputs=outs)
    for name in outs.values():
        assert (block.var(name).shape, block.var(name).dtype) == ((-1, 8), "float32")


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("grad", [(5, 3), (-1, -1), (-1, 3)])
def test_unknown_dims_pass(op_type, grad):
    build(op_type, shape=(-1, 3), specs={"Grad": (grad, "float32")})


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("grad", [[4, 2], [4, 3, 1], [12]])
def test_grad_shape_must_match_param(op_type, grad):
    with pytest.raises(ShapeError, match=r"input 'Grad' \(grad\) must have the shape of 'Param' "
                                         r"\(param\)(.|\n)*expected: shape \[4, 3\](.|\n)*"
                                         r"found:    shape " + re.escape(str(grad))):
        build(op_type, specs={"Grad": (grad, "float32")})


@pytest.mark.parametrize("op_type", OPS)
def test_grad_dtype_must_match_param(op_type):
    with pytest.raises(ShapeError, match=r"'Grad' \(grad\) must have the dtype of 'Param'"
                                         r"(.|\n)*expected: float32(.|\n)*found:    float64"):
        build(op_type, specs={"Grad": ((4, 3), "float64")})


@pytest.mark.parametrize("op_type", OPS)
def test_sparse_grad(op_type):
    grad = {"shape": [4, 3], "dtype": "float32", "type": "selected_rows"}
    block, _ = build(op_type, specs={"Grad": grad})
    assert block.var("param").shape == (4, 3)


@pytest.mark.parametrize("op_type", OPS)
def test_param_must_be_dense(op_type):
    param = {"shape": [4, 3], "dtype": "float32", "type": "selected_rows"}
    with pytest.raises(ShapeError, match=r"'Param' \(param\) must be a dense tensor"):
        build(op_type, specs={"Param": param})


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("slot", ["Param", "Grad", "LearningRate"])
def test_float_only(op_type, slot):
    with pytest.raises(OpValidationError, match=rf"input '{slot}' \({slot.lower()}\) has an "
                                                r"unsupported dtype(.|\n)*found:    int64"):
        build(op_type, specs={slot: ((4, 3) if slot != "LearningRate" else [1], "int64")})


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("lr", [[], [1, 1], [-1]])
def test_learning_rate_of_one_element(op_type, lr):
    build(op_type, specs={"LearningRate": (lr, "float32")})


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("lr", [[2], [1, 3]])
def test_learning_rate_must_be_one_element(op_type, lr):
    with pytest.raises(ShapeError, match=r"'LearningRate' \(learningrate\) must hold exactly "
                                         r"one element"):
        build(op_type, specs={"LearningRate": (lr, "float32")})


@pytest.mark.parametrize("op_type, state", STATES)
def test_state_shape_must_match_param(op_type, state):
    with pytest.raises(ShapeError, match=rf"input '{state}' \({state.lower()}\) must have the "
                                         r"shape of 'Param'"):
        build(op_type, specs={state: ((3, 4), "float32")})


@pytest.mark.parametrize("op_type, state", STATES)
def test_state_output_is_required(op_type, state):
    with pytest.raises(OpValidationError, match=rf"missing output '{state}Out'"):
        build(op_type, outputs={f"{state}Out": None})


@pytest.mark.parametrize("op_type", OPS)
def test_a_rejected_update_leaves_the_program_alone(op_type):
    block, op = build(op_type)
    before = block.program.serialize_to_string()
    inputs = {**op.inputs, "Grad": ["learningrate"]}
    with pytest.raises(ShapeError):
        block.append_op(op_type, inputs, op.outputs, OPTIMIZERS[op_type][2])
    assert len(block.ops) == 1 and block.program.serialize_to_string() == before


# -- each op's attributes ----------------------------------------------------------------------

@pytest.mark.parametrize("op_type, attrs", [
    ("momentum", {"mu": 0.0, "use_nesterov": True}),
    ("momentum", {"mu": 0.9, "regularization_method": "l2_decay",
                  "regularization_coeff": 1e-4}),
    ("adam", {"beta1": 0.0, "beta2": 0.5, "epsilon": 0.0, "lazy_mode": True}),
    ("adam", {"min_row_size_to_use_multithread": 2**40}),
    ("adagrad", {"epsilon": 1e-10}),
    ("rmsprop", {"epsilon": 1e-6, "decay": 1.0, "momentum": 0.9}),
    ("rmsprop", {"decay": 0.0}),
])
def test_valid_attributes(op_type, attrs):
    _, op = build(op_type, attrs=attrs)
    for name, value in attrs.items():
        assert op.attr(name) == pytest.approx(value)


@pytest.mark.parametrize("op_type, name, default", [
    ("momentum", "use_nesterov", False), ("momentum", "regularization_method", ""),
    ("momentum", "regularization_coeff", 0.0), ("adam", "beta1", 0.9),
    ("adam", "beta2", 0.999), ("adam", "epsilon", 1e-8), ("adam", "lazy_mode", False),
    ("adagrad", "epsilon", 1e-6), ("rmsprop", "epsilon", 1e-10), ("rmsprop", "decay", 0.9),
    ("rmsprop", "momentum", 0.0), ("rmsprop", "centered", False),
])
def test_paddle_defaults(op_type, name, default):
    _, op = build(op_type)
    assert op.attr(name) == pytest.approx(default)


@pytest.mark.parametrize("op_type, attrs, match", [
    ("momentum", {"mu": -0.5}, r"'mu' must be >= 0.0 \(got -0.5\)"),
    ("momentum", {"regularization_method": "l1_decay"},
     r"'regularization_method' must be one of \['', 'l2_decay'\]"),
    ("momentum", {"regularization_coeff": -1.0}, r"'regularization_coeff' must be >= 0.0"),
    ("momentum", {"use_nesterov": "yes"}, r"'use_nesterov' is not of type bool"),
    ("adam", {"beta1": 1.0}, r"'beta1' must be in \[0.0, 1.0\)"),
    ("adam", {"beta2": -0.1}, r"'beta2' must be in \[0.0, 1.0\)"),
    ("adam", {"epsilon": -1e-8}, r"'epsilon' must be >= 0.0"),
    ("adagrad", {"epsilon": -1.0}, r"'epsilon' must be >= 0.0"),
    ("rmsprop", {"decay": 1.5}, r"'decay' must be in \[0.0, 1.0\]"),
    ("rmsprop", {"momentum": -0.1}, r"'momentum' must be >= 0.0"),
    ("rmsprop", {"rho": 0.9}, r"unknown attribute 'rho'"),
    ("sgd", {"mu": 0.9}, r"unknown attribute 'mu'"),
])
def test_bad_attributes(op_type, attrs, match):
    with pytest.raises(OpValidationError, match=match):
        build(op_type, attrs=attrs)


def test_momentum_mu_is_required():
    prog = headrace.Program()
    block = prog.global_block()
    for name in ("p", "g", "v"):
        block.create_var(name=name, shape=[2], dtype="float32")
    block.create_var(name="lr", shape=[1], dtype="float32")
    with pytest.raises(OpValidationError, match=r"missing required attribute 'mu'"):
        block.append_op("momentum", {"Param": "p", "Grad": "g", "Velocity": "v",
                                     "LearningRate": "lr"},
                        {"ParamOut": "p", "VelocityOut": "v"})


# -- adam's beta powers ----------------------------------------------------------------------

@pytest.mark.parametrize("pow_shape", [[1], [], [-1]])
def test_adam_beta_pows_hold_one_element(pow_shape):
    build("adam", specs={"Beta1Pow": (pow_shape, "float32"), "Beta2Pow": (pow_shape, "float32")})


@pytest.mark.parametrize("slot", ["Beta1Pow", "Beta2Pow"])
def test_adam_beta_pow_of_the_param_shape_is_an_error(slot):
    with pytest.raises(ShapeError, match=rf"'{slot}' \({slot.lower()}\) must hold exactly one "
                                         r"element(.|\n)*found:    shape \[4, 3\]"):
        build("adam", specs={slot: ((4, 3), "float32")})


def test_adam_advances_the_powers_when_their_outputs_are_bound():
    outs = {"Beta1PowOut": "beta1pow", "Beta2PowOut": "beta2pow"}
    block, op = build("adam", outputs=outs)
    assert op.output("Beta1PowOut") == ["beta1pow"] and block.var("beta2pow").shape == (1,)


def test_adam_older_programs_bind_no_pow_outputs():
    _, op = build("adam")
    assert op.output("Beta1PowOut") == [] and op.output("Beta2PowOut") == []


@pytest.mark.parametrize("bound", ["Beta1PowOut", "Beta2PowOut"])
def test_adam_pow_outputs_go_together(bound):
    with pytest.raises(ShapeError, match=rf"go together(.|\n)*found:    only {bound}"):
        build("adam", outputs={bound: bound[:-3].lower()})


# -- rmsprop's mean gradient -----------------------------------------------------------------

def test_rmsprop_centered():
    block, op = build("rmsprop", specs={"MeanGrad": ((4, 3), "float32")},
                      outputs={"MeanGradOut": "meangrad"}, attrs={"centered": True})
    assert op.output("MeanGradOut") == ["meangrad"]


@pytest.mark.parametrize("specs, outputs, missing", [
    ({}, {}, "MeanGrad"),
    ({"MeanGrad": ((4, 3), "float32")}, {}, "MeanGradOut"),
])
def test_rmsprop_centered_needs_the_mean_gradient(specs, outputs, missing):
    with pytest.raises(ShapeError, match=rf"centered RMSProp needs '{missing}'"):
        build("rmsprop", specs=specs, outputs=outputs, attrs={"centered": True})


def test_rmsprop_mean_grad_shape():
    with pytest.raises(ShapeError, match=r"'MeanGrad' \(meangrad\) must have the shape of "
                                         r"'Param'"):
        build("rmsprop", specs={"MeanGrad": ((4,), "float32")},
              outputs={"MeanGradOut": "meangrad"})


def test_rmsprop_mean_grad_out_without_mean_grad():
    with pytest.raises(ShapeError, match=r"output 'MeanGradOut' is bound but input 'MeanGrad' "
                                         r"is not"):
        build("rmsprop", outputs={"MeanGradOut": "mg"})


# -- Paddle 3's adam attributes, adamw --------------------------------------------------------

@pytest.mark.parametrize("op_type", ["adam", "adamw"])
def test_amsgrad_needs_moment2_max(op_type):
    # Without its running maximum AMSGrad would silently be plain Adam: refused by name.
    with pytest.raises(ShapeError, match="'amsgrad' needs input 'Moment2Max' and output "
                                         "'Moment2MaxOut'"):
        build(op_type, attrs={"amsgrad": True})
    _, op = build(op_type, specs={"Moment2Max": ((4, 3), "float32")}, attrs={"amsgrad": True},
                  outputs={"Moment2MaxOut": "moment2max"})
    assert op.output("Moment2MaxOut") == ["moment2max"]


def test_adamw_defaults_are_paddles():
    _, op = build("adamw")
    assert (op.attr("coeff"), op.attr("lr_ratio"), op.attr("with_decay")) == \
        (pytest.approx(0.01), 1.0, False)
    assert (op.attr("multi_precision"), op.attr("use_global_beta_pow"), op.attr("amsgrad")) == \
        (False, False, False)


@pytest.mark.parametrize("slot", ["Beta1Tensor", "Beta2Tensor", "EpsilonTensor"])
def test_adam_tensor_inputs_hold_one_element(slot):
    with pytest.raises(ShapeError, match=f"input '{slot}' \\({slot.lower()}\\) must hold one "
                                         f"element"):
        build("adam", specs={slot: ([2], "float32")})
    build("adam", specs={slot: ([], "float32")})


@pytest.mark.parametrize("op_type", ["sgd", "momentum", "adam", "adamw"])
def test_a_master_param_is_refused_by_name(op_type):
    # Paddle 3's float16 multi_precision training: declared, so never silently ignored.
    with pytest.raises(ShapeError, match="'MasterParam'/'MasterParamOut' .* not supported"):
        build(op_type, specs={"MasterParam": ((4, 3), "float32")})
