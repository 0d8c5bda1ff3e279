"""The optimizer update kernels (CPU) against the NumPy references of headrace_optim."""
# One step through check_op, several steps through an Executor with the state in a Scope and
# updated in place, and direct calls of the kernel objects with bad inputs.

import numpy as np
import pytest

import headrace
from headrace.ops import default_registry
from headrace.runtime import Executor, Scope, Tensor
from headrace.runtime.kernel_info import kernel_info
from headrace.testing import check_op
from headrace_optim.kernels.cpu import adagrad as k_adagrad
from headrace_optim.kernels.cpu import adam as k_adam
from headrace_optim.kernels.cpu import momentum as k_momentum
from headrace_optim.kernels.cpu import rmsprop as k_rmsprop
from headrace_optim.kernels.cpu import sgd as k_sgd
from headrace_optim.reference import adagrad as r_adagrad
from headrace_optim.reference import adam as r_adam
from headrace_optim.reference import momentum as r_momentum
from headrace_optim.reference import rmsprop as r_rmsprop
from headrace_optim.reference import sgd as r_sgd

from headrace_optim.reference._cases import (OPS, OPTIMIZERS, STATE_SLOTS, STATES,  # noqa: F401
                                             build, initial_state)


REFS = {**r_sgd.REFERENCES, **r_momentum.REFERENCES, **r_adam.REFERENCES,
        **r_adagrad.REFERENCES, **r_rmsprop.REFERENCES}
KERNEL_CLASSES = {"sgd": k_sgd.SGD, "momentum": k_momentum.Momentum, "adam": k_adam.Adam,
                  "adamw": k_adam.AdamW, "adagrad": k_adagrad.Adagrad,
                  "rmsprop": k_rmsprop.RMSProp}
CASES = [
    ("sgd", {}),
    ("momentum", {"mu": 0.9}),
    ("momentum", {"mu": 0.8, "use_nesterov": True}),
    ("momentum", {"mu": 0.9, "regularization_method": "l2_decay", "regularization_coeff": 0.05}),
    ("momentum", {"mu": 0.9, "rescale_grad": 0.25, "regularization_method": "l2_decay",
                  "regularization_coeff": 0.05, "multi_precision": True}),
    ("adam", {}),
    ("adam", {"beta1": 0.5, "beta2": 0.9, "epsilon": 1e-4}),
    ("adam", {"use_global_beta_pow": True, "multi_precision": True}),
    ("adam", {"amsgrad": True}),
    ("adamw", {"amsgrad": True, "coeff": 0.05, "with_decay": True}),
    ("adamw", {"coeff": 0.05, "with_decay": True}),
    ("adamw", {"coeff": 0.05, "lr_ratio": 0.5, "with_decay": True, "beta1": 0.5}),
    ("adamw", {"coeff": 0.05}),                       # without with_decay: adam
    ("adagrad", {"epsilon": 1e-6}),
    ("rmsprop", {"decay": 0.9, "epsilon": 1e-6}),
    ("rmsprop", {"decay": 0.8, "epsilon": 1e-6, "momentum": 0.5}),
    ("rmsprop", {"decay": 0.9, "epsilon": 1e-6, "momentum": 0.3, "centered": True}),
]
CASE_IDS = [f"{op}-{i}" for i, (op, _) in enumerate(CASES)]


def defaults(op_type, attrs):
    opdef = default_registry().get(op_type)
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    return full


def reference_step(op_type, attrs, state, grad):
    """The next state per the reference; adam also advances its beta powers."""
    out = REFS[op_type]({**state, "Grad": grad}, defaults(op_type, attrs))
    new = dict(state)
    for slot, value in out.items():
        new[slot[:-3]] = value
    return new


@pytest.mark.parametrize("op_type, attrs", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernel_matches_reference(op_type, attrs, dtype):
    rng = np.random.default_rng(7)
    inputs = initial_state(op_type, attrs, (5, 4), dtype, rng)
    inputs["Grad"] = rng.standard_normal((5, 4)).astype(dtype)
    expected = REFS[op_type](inputs, defaults(op_type, attrs))
    check_op(op_type, inputs, expected, attrs=attrs)


def step_program(op_type, attrs, state, dtype):
    """One update op over persistable variables bound in place (outputs = inputs), the
    gradient fed per step: the setting of a training program."""
    prog = headrace.Program()
    block = prog.global_block()
    inputs, outputs = {}, {}
    for slot, value in state.items():
        block.create_var(name=slot.lower(), shape=value.shape, dtype=dtype, persistable=True)
        inputs[slot] = slot.lower()
        if slot != "LearningRate":
            outputs[f"{slot}Out"] = slot.lower()
    block.create_var(name="grad", shape=state["Param"].shape, dtype=dtype)
    inputs["Grad"] = "grad"
    block.append_op(op_type, inputs, outputs, attrs)
    return prog


@pytest.mark.parametrize("op_type, attrs", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_updates_in_place_over_several_steps(op_type, attrs, dtype):
    rng = np.random.default_rng(3)
    state = initial_state(op_type, attrs, (6, 3), dtype, rng)
    prog = step_program(op_type, attrs, state, dtype)
    scope = Scope()
    arrays = {}
    for slot, value in state.items():
        arrays[slot] = value.copy()
        scope.set(slot.lower(), Tensor(arrays[slot]))
    exe = Executor()
    expected = state
    for _ in range(5):
        grad = rng.standard_normal(state["Param"].shape).astype(dtype)
        exe.run(prog, feed={"grad": grad}, fetch_list=[], scope=scope)
        expected = reference_step(op_type, attrs, expected, grad)
    rtol = 1e-4 if dtype == "float32" else 1e-10
    for slot, value in expected.items():
        got = scope.find(slot.lower()).data
        # The scope's tensors still hold the very arrays they started with: updated in place.
        assert got is arrays[slot], slot
        np.testing.assert_allclose(got, value, rtol=rtol, atol=rtol, err_msg=slot)


@pytest.mark.parametrize("op_type, attrs", CASES[:5], ids=CASE_IDS[:5])
def test_read_only_state_is_replaced_not_written(op_type, attrs):
    rng = np.random.default_rng(5)
    state = initial_state(op_type, attrs, (4, 4), "float64", rng)
    prog = step_program(op_type, attrs, state, "float64")
    scope = Scope()
    frozen = {}
    for slot, value in state.items():
        frozen[slot] = value.copy()
        frozen[slot].flags.writeable = False
        scope.set(slot.lower(), Tensor(frozen[slot]))
    grad = rng.standard_normal((4, 4))
    Executor().run(prog, feed={"grad": grad}, fetch_list=[], scope=scope)
    expected = reference_step(op_type, attrs, state, grad)
    for slot, value in state.items():
        np.testing.assert_array_equal(frozen[slot], value)  # untouched
        got = scope.find(slot.lower()).data
        if slot != "LearningRate":
            assert got is not frozen[slot] and got.flags.writeable
        np.testing.assert_allclose(got, expected[slot], rtol=1e-10, err_msg=slot)


def test_separate_outputs_leave_the_inputs_alone():
    rng = np.random.default_rng(0)
    p, g, v = (rng.standard_normal((3, 3)) for _ in range(3))
    before = p.copy(), v.copy()
    check_op("momentum", {"Param": p, "Grad": g, "Velocity": v,
                          "LearningRate": np.array([0.1])},
             REFS["momentum"]({"Param": p, "Grad": g, "Velocity": v,
                               "LearningRate": np.array([0.1])}, {"mu": 0.9}),
             attrs={"mu": 0.9})
    np.testing.assert_array_equal(p, before[0])
    np.testing.assert_array_equal(v, before[1])


def test_adam_without_pow_outputs_leaves_the_powers():
    rng = np.random.default_rng(1)
    state = initial_state("adam", {}, (3, 2), "float32", rng)
    prog = headrace.Program()
    block = prog.global_block()
    for slot, value in state.items():
        block.create_var(name=slot.lower(), shape=value.shape, dtype="float32",
                         persistable=True)
    block.create_var(name="grad", shape=(3, 2), dtype="float32")
    block.append_op("adam", {**{s: s.lower() for s in state}, "Grad": "grad"},
                    {"ParamOut": "param", "Moment1Out": "moment1", "Moment2Out": "moment2"})
    scope = Scope()
    for slot, value in state.items():
        scope.set(slot.lower(), Tensor(value.copy()))
    Executor().run(prog, feed={"grad": np.ones((3, 2), "float32")}, fetch_list=[],
                   scope=scope)
    np.testing.assert_array_equal(scope.find("beta1pow").data, state["Beta1Pow"])


def test_a_view_of_a_parameter_taken_before_the_update_keeps_the_old_values():
    """reshape2 returns views, but not of persistable variables: sgd updates the parameter
    in place afterwards, and the fetched reshape must still show the values it was given."""
    reg = default_registry()
    if "reshape2" not in reg:
        pytest.skip("the tensor plugin is not installed")
    prog = headrace.Program()
    block = prog.global_block()
    block.create_var(name="w", shape=[2, 3], dtype="float32", persistable=True)
    block.create_var(name="lr", shape=[1], dtype="float32", persistable=True)
    block.create_var(name="g", shape=[2, 3], dtype="float32")
    block.append_op("reshape2", {"X": "w"}, {"Out": "w_flat"}, {"shape": [-1]})
    block.append_op("sgd", {"Param": "w", "Grad": "g", "LearningRate": "lr"}, {"ParamOut": "w"})
    w0 = np.arange(6, dtype="float32").reshape(2, 3)
    scope = Scope()
    scope.set("w", Tensor(w0.copy()))
    scope.set("lr", Tensor(np.array([1.0], "float32")))
    flat, w = Executor().run(prog, feed={"g": np.ones((2, 3), "float32")},
                             fetch_list=["w_flat", "w"], scope=scope)
    np.testing.assert_array_equal(flat, w0.reshape(-1))
    np.testing.assert_array_equal(w, w0 - 1)


def in_place_info(op_type, shape=(4, 3)):
    """A KernelInfo for an op that binds every output to its (persistable) input."""
    block, op = build(op_type, shape=shape, dtype="float64")
    for v in block.vars.values():
        v.persistable = True
    return kernel_info(op)


def test_direct_call_in_place_and_aliasing():
    rng = np.random.default_rng(2)
    p, g, v = (rng.standard_normal((4, 3)) for _ in range(3))
    lr = np.array([0.1])
    # mu = 0.5: exact in float32, which the reference rounds 'float' attributes to.
    expected = REFS["momentum"]({"Param": p, "Grad": g, "Velocity": v, "LearningRate": lr},
                                {"mu": 0.5})
    kernel = k_momentum.Momentum({"mu": 0.5}, in_place_info("momentum"))
    p1, v1 = p.copy(), v.copy()
    po, vo, master = kernel(p1, g, lr, v1)
    assert po is p1 and vo is v1 and master is None
    np.testing.assert_allclose(po, expected["ParamOut"], rtol=1e-12)
    np.testing.assert_allclose(vo, expected["VelocityOut"], rtol=1e-12)
    # The same array as Param and Velocity: in-place writes would race; fresh outputs instead.
    same = p.copy()
    po, vo, _ = kernel(same, g, lr, same)
    assert po is not same and vo is not same
    ref = REFS["momentum"]({"Param": p, "Grad": g, "Velocity": p, "LearningRate": lr},
                           {"mu": 0.5})
    np.testing.assert_allclose(po, ref["ParamOut"], rtol=1e-12)
    np.testing.assert_array_equal(same, p)
    # A non-contiguous Param is updated into a new array, the view left alone.
    big = np.repeat(p, 2, axis=1)
    view = big[:, ::2]
    po, _, _ = kernel(view, g, lr, v.copy())
    np.testing.assert_allclose(po, expected["ParamOut"], rtol=1e-12)
    np.testing.assert_array_equal(big[:, ::2], p)


def test_direct_call_out_of_place_by_default():
    rng = np.random.default_rng(4)
    p, g = rng.standard_normal((3,)), rng.standard_normal((3,))
    po, master = k_sgd.SGD({})(p, g, np.array([0.5], "float32"))
    assert po is not p and master is None
    np.testing.assert_allclose(po, p - 0.5 * g)


def _args(op_type, p, g, lr, **override):
    state = {s: (np.abs(p) + 0.1 if s not in ("Beta1Pow", "Beta2Pow") else np.array([0.9]))
             for s in STATE_SLOTS[op_type]}
    state.update(override)
    return [p, g, lr] + [state[s] for s in STATE_SLOTS[op_type]]


@pytest.mark.parametrize("op_type", OPS)
@pytest.mark.parametrize("case, error, match", [
    ("grad_shape", ValueError, r"'Grad' has shape \[3, 2\], Param has \[2, 3\]"),
    ("grad_dtype", TypeError, r"'Grad' is float32 but Param is float64"),
    ("int_param", TypeError, r"'Param' has dtype int64, expected float32 or float64"),
    ("list_param", TypeError, r"'Param' must be a dense float tensor"),
    ("lr_size", ValueError, r"'LearningRate' must hold one float"),
    ("lr_int", ValueError, r"'LearningRate' must hold one float, got int64"),
])
def test_direct_call_bad_inputs(op_type, case, error, match):
    attrs = {"mu": 0.9} if op_type == "momentum" else {}
    kernel = KERNEL_CLASSES[op_type](defaults(op_type, attrs), None)
    p, g, lr = np.ones((2, 3)), np.ones((2, 3)), np.array([0.1])
    if case == "grad_shape":
        args = _args(op_type, p, np.ones((3, 2)), lr)
    elif case == "grad_dtype":
        args = _args(op_type, p, g.astype("float32"), lr)
    elif case == "int_param":
        args = _args(op_type, p.astype("int64"), g, lr)
    elif case == "list_param":
        args = _args(op_type, [[1.0] * 3] * 2, g, lr)
    elif case == "lr_size":
        args = _args(op_type, p, g, np.array([0.1, 0.2]))
    else:
        args = _args(op_type, p, g, np.array([1]))
    with pytest.raises(error, match=match):
        kernel(*args)


@pytest.mark.parametrize("op_type, slot", STATES)
def test_direct_call_bad_state(op_type, slot):
    attrs = {"mu": 0.9} if op_type == "momentum" else {}
    kernel = KERNEL_CLASSES[op_type](defaults(op_type, attrs), None)
    p = np.ones((2, 3))
    with pytest.raises(ValueError, match=rf"'{slot}' has shape \[6\], Param has \[2, 3\]"):
        kernel(*_args(op_type, p, p, np.array([0.1]), **{slot: np.ones(6)}))
    with pytest.raises(TypeError, match=rf"'{slot}' is float32 but Param is float64"):
        kernel(*_args(op_type, p, p, np.array([0.1]), **{slot: np.ones((2, 3), "float32")}))


def test_direct_call_op_specific_errors():
    p = np.ones((2, 2))
    with pytest.raises(ValueError, match=r"centered RMSProp needs the MeanGrad input"):
        k_rmsprop.RMSProp(defaults("rmsprop", {"centered": True}), None)(
            p, p, np.array([0.1]), p, None, p)
    with pytest.raises(ValueError, match=r"Beta1Pow \(1.0\) must not be 1"):
        k_adam.Adam(defaults("adam", {}), None)(p, p, np.array([0.1]), p, p, np.array([1.0]),
                                                 np.array([0.5]))
    with pytest.raises(ValueError, match=r"'Beta2Pow' must hold one float"):
        k_adam.Adam(defaults("adam", {}), None)(p, p, np.array([0.1]), p, p, np.array([0.9]),
                                                 np.ones(2))
    with pytest.raises(ValueError, match=r"regularization_method 'l1' is not"):
        k_momentum.Momentum({"mu": 0.9, "regularization_method": "l1"}, None)


def test_kernel_errors_surface_as_op_errors():
    """A bad value at run time (a scope entry of the wrong shape) is an OpError at the op."""
    from headrace.errors import OpError
    rng = np.random.default_rng(0)
    state = initial_state("sgd", {}, (2, 2), "float32", rng)
    prog = step_program("sgd", {}, state, "float32")
    scope = Scope()
    scope.set("param", Tensor(np.ones((3, 3), "float32")))
    scope.set("learningrate", Tensor(state["LearningRate"]))
    with pytest.raises(OpError, match=r"sgd"):
        Executor().run(prog, feed={"grad": np.ones((2, 2), "float32")}, fetch_list=[],
                       scope=scope)


def test_big_endian_and_float32_learning_rate():
    p = np.arange(4, dtype=">f8")
    g = np.ones(4, dtype=">f8")
    po, _ = k_sgd.SGD({})(p, g, np.array([0.25], "float32"))
    np.testing.assert_allclose(po, np.arange(4) - 0.25)


def test_a_fed_non_persistable_param_is_not_written():
    """In place only for persistable variables: a fed array belongs to the caller."""
    prog = headrace.Program()
    block = prog.global_block()
    for name, shape in (("p", [3]), ("g", [3]), ("lr", [1])):
        block.create_var(name=name, shape=shape, dtype="float64")
    block.append_op("sgd", {"Param": "p", "Grad": "g", "LearningRate": "lr"}, {"ParamOut": "p"})
    p = np.array([1.0, 2.0, 3.0])
    (out,) = Executor().run(prog, feed={"p": p, "g": np.ones(3), "lr": np.array([0.5])},
                            fetch_list=["p"], scope=Scope())
    np.testing.assert_array_equal(p, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(out, [0.5, 1.5, 2.5])


# -- Paddle 3's optional adam inputs --------------------------------------------------------------

@pytest.mark.parametrize("op_type", ["adam", "adamw"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adam_takes_beta_and_epsilon_tensors(op_type, dtype):
    # Tensors beat the attributes; the attributes here would give other numbers.
    rng = np.random.default_rng(8)
    attrs = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8,
             **({"with_decay": True} if op_type == "adamw" else {})}
    inputs = initial_state(op_type, {**attrs, "beta1": 0.5, "beta2": 0.8}, (5, 4), dtype, rng)
    inputs["Grad"] = rng.standard_normal((5, 4)).astype(dtype)
    inputs.update(Beta1Tensor=np.array([0.5], "float32"), Beta2Tensor=np.array([0.8], "float32"),
                  EpsilonTensor=np.array([1e-3], "float32"))
    expected = REFS[op_type](inputs, defaults(op_type, attrs))
    plain = REFS[op_type]({k: v for k, v in inputs.items() if "Tensor" not in k},
                          defaults(op_type, attrs))
    assert not np.allclose(expected["ParamOut"], plain["ParamOut"])
    check_op(op_type, inputs, expected, attrs=attrs)


@pytest.mark.parametrize("skip", [True, False])
def test_adam_skip_update(skip):
    rng = np.random.default_rng(9)
    attrs = {"amsgrad": True}
    inputs = initial_state("adam", attrs, (3, 2), "float64", rng)
    inputs["Grad"] = rng.standard_normal((3, 2))
    inputs["SkipUpdate"] = np.array([skip])
    expected = REFS["adam"](inputs, defaults("adam", attrs))
    if skip:      # every output keeps its input, the powers too
        assert all(np.array_equal(expected[s + "Out"], inputs[s])
                   for s in ("Param", "Moment1", "Moment2", "Beta1Pow", "Moment2Max"))
    check_op("adam", inputs, expected, attrs=attrs)


def test_adam_refuses_a_master_param():
    p = np.ones((2, 2))
    with pytest.raises(ValueError, match="adam: MasterParam .* is not supported"):
        k_adam.Adam(defaults("adam", {}), None)(p, p, np.array([0.1]), p, p, np.array([0.9]),
                                                np.array([0.99]), None, None, None, None, None,
                                                p)
