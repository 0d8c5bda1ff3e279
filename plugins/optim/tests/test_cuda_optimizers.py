"""The update ops on CUDAPlace (Numba's simulator without a GPU) against the CPU kernels over
several steps, state persistable and updated in place (the scope keeps the very device arrays
it started with), LearningRate and the beta powers read on the device; adam's powers advanced
on the device; SkipUpdate and the CPU kernel's errors. Shapes stay tiny."""
import numpy as np
import pytest

import headrace as hr
from headrace.runtime import Executor, Scope, Tensor
from headrace_optim.reference._cases import initial_state

pytestmark = pytest.mark.cuda

CASES = [
    ("sgd", {}),
    ("momentum", {"mu": 0.9}),
    ("momentum", {"mu": 0.8, "use_nesterov": True}),
    ("momentum", {"mu": 0.9, "rescale_grad": 0.25, "regularization_method": "l2_decay",
                  "regularization_coeff": 0.05}),
    ("adam", {}),
    ("adam", {"beta1": 0.5, "beta2": 0.9, "epsilon": 1e-4}),
    ("adam", {"use_global_beta_pow": True}),
    ("adam", {"amsgrad": True}),
    ("adamw", {"amsgrad": True, "coeff": 0.05, "with_decay": True}),
    ("adamw", {"coeff": 0.05, "lr_ratio": 0.5, "with_decay": True, "beta1": 0.5}),
    ("adagrad", {"epsilon": 1e-6}),
    ("rmsprop", {"decay": 0.9, "epsilon": 1e-6}),
    ("rmsprop", {"decay": 0.8, "epsilon": 1e-6, "momentum": 0.5}),
    ("rmsprop", {"decay": 0.9, "epsilon": 1e-6, "momentum": 0.3, "centered": True}),
]
IDS = [f"{op}-{i}" for i, (op, _) in enumerate(CASES)]


def step_program(op_type, attrs, state, dtype, extra=None):
    """One update op over persistable variables bound in place, the gradient fed per step."""
    prog = hr.Program()
    block = prog.global_block()
    inputs, outputs = {}, {}
    for slot, value in state.items():
        block.create_var(name=slot.lower(), shape=value.shape, dtype=str(value.dtype),
                         persistable=True)
        inputs[slot] = slot.lower()
        if slot not in ("LearningRate", "SkipUpdate"):
            outputs[f"{slot}Out"] = slot.lower()
    block.create_var(name="grad", shape=state["Param"].shape, dtype=dtype)
    inputs["Grad"] = "grad"
    block.append_op(op_type, inputs, outputs, attrs)
    return prog


def run_steps(place, op_type, attrs, state, grads, dtype):
    prog = step_program(op_type, attrs, state, dtype)
    scope = Scope()
    for slot, value in state.items():
        scope.set(slot.lower(), Tensor(value.copy()))
    exe = Executor(place)
    first = None
    for grad in grads:
        exe.run(prog, feed={"grad": grad}, fetch_list=[], scope=scope)
        now = {s: scope.find(s.lower()).data for s in state}
        if first is None:
            first = now
        else:   # updated in place: the scope keeps the arrays of the first step
            for s in state:
                assert now[s] is first[s], s
    return {s: np.asarray(hr.Tensor(scope.find(s.lower()).data).numpy()
                          if not isinstance(first[s], np.ndarray) else first[s])
            for s in state}


@pytest.mark.parametrize("op_type, attrs", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_in_place_steps_match_the_cpu(op_type, attrs, dtype):
    rng = np.random.default_rng(3)
    state = initial_state(op_type, attrs, (4, 3), dtype, rng)
    grads = [rng.standard_normal((4, 3)).astype(dtype) for _ in range(3)]
    cpu = run_steps(hr.CPUPlace(), op_type, attrs, state, grads, dtype)
    gpu = run_steps(hr.CUDAPlace(0), op_type, attrs, state, grads, dtype)
    tol = 2e-5 if dtype == "float32" else 1e-10
    for slot in state:
        np.testing.assert_allclose(gpu[slot], cpu[slot], rtol=tol, atol=tol, err_msg=slot)
        assert gpu[slot].dtype == cpu[slot].dtype


def _adam_once(place, extra, attrs=None, outputs=None):
    rng = np.random.default_rng(0)
    state = initial_state("adam", {}, (3, 2), "float32", rng)
    inputs = {**state, "Grad": rng.standard_normal((3, 2)).astype("float32"), **extra}
    from headrace.testing import run_op
    out = run_op("adam", inputs, outputs or ["ParamOut", "Moment1Out", "Moment2Out",
                                             "Beta1PowOut", "Beta2PowOut"],
                 attrs or {}, place)
    return {k: np.asarray(v[0].numpy()) for k, v in out.items()}


@pytest.mark.parametrize("extra", [
    {"SkipUpdate": np.array([True])}, {"SkipUpdate": np.array([False])},
    {"Beta1Tensor": np.array([0.6], "float32"), "Beta2Tensor": np.array([0.95], "float32"),
     "EpsilonTensor": np.array([1e-3], "float32")}], ids=["skip", "noskip", "tensors"])
def test_adam_device_scalars_match_the_cpu(extra):
    cpu = _adam_once(hr.CPUPlace(), extra)
    gpu = _adam_once(hr.CUDAPlace(0), extra)
    for k in cpu:
        np.testing.assert_allclose(gpu[k], cpu[k], rtol=2e-6, err_msg=k)


@pytest.mark.parametrize("extra,match", [
    ({"Beta1Pow": np.array([1.0], "float32")}, "Beta1Pow"),
    ({"Beta1Tensor": np.array([1.5], "float32")}, "beta1")])
def test_adam_bad_device_values_raise_as_the_cpu(extra, match):
    for place in (hr.CPUPlace(), hr.CUDAPlace(0)):
        with pytest.raises(Exception, match=match):
            _adam_once(place, extra)


def test_errors_name_the_slot_as_the_cpu():
    from numba import cuda

    from headrace_optim.kernels.cuda.sgd import SGD
    p = cuda.to_device(np.zeros((2, 2), "float32"))
    with pytest.raises(ValueError, match="Grad"):
        SGD({})(p, cuda.to_device(np.zeros((2, 3), "float32")),
                cuda.to_device(np.ones(1, "float32")))
    with pytest.raises(ValueError, match="LearningRate"):
        SGD({})(p, p, cuda.to_device(np.ones(2, "float32")))
