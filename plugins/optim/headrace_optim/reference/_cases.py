"""The update ops over fresh variables and their initial states, shared by the optim plugin's
tests (the CPU kernels' and the CUDA kernels')."""
import numpy as np

import headrace

# op -> (state tensors shaped like Param, one-element states, required attributes)
OPTIMIZERS = {
    "sgd": ([], [], {}),
    "momentum": (["Velocity"], [], {"mu": 0.9}),
    "adam": (["Moment1", "Moment2"], ["Beta1Pow", "Beta2Pow"], {}),
    "adamw": (["Moment1", "Moment2"], ["Beta1Pow", "Beta2Pow"], {}),
    "adagrad": (["Moment"], [], {}),
    "rmsprop": (["MeanSquare", "Moment"], [], {}),
}
OPS = sorted(OPTIMIZERS)
STATES = [(op, s) for op in OPS for s in OPTIMIZERS[op][0]]


def build(op_type, shape=(4, 3), dtype="float32", specs=None, attrs=None, outputs=None):
    """An update op over fresh variables named after their slots, written in place."""
    dense, scalar, required = OPTIMIZERS[op_type]
    all_specs = {"Param": (shape, dtype), "Grad": (shape, dtype), "LearningRate": ([1], dtype)}
    all_specs.update({s: (shape, dtype) for s in dense})
    all_specs.update({s: ([1], dtype) for s in scalar})
    all_specs.update(specs or {})
    prog = headrace.Program()
    block = prog.global_block()
    inputs = {}
    for slot, spec in all_specs.items():
        kw = spec if isinstance(spec, dict) else dict(zip(("shape", "dtype"), spec))
        inputs[slot] = block.create_var(name=slot.lower(), **kw).name
    outs = {"ParamOut": "param", **{f"{s}Out": s.lower() for s in dense}}
    outs.update(outputs or {})
    op = block.append_op(op_type, inputs, outs, {**required, **(attrs or {})})
    return block, op


# op -> its state slots, in input order (the one-element and optional ones included)
STATE_SLOTS = {"sgd": [], "momentum": ["Velocity"], "adagrad": ["Moment"],
               "adam": ["Moment1", "Moment2", "Beta1Pow", "Beta2Pow", "Moment2Max"],
               "adamw": ["Moment1", "Moment2", "Beta1Pow", "Beta2Pow", "Moment2Max"],
               "rmsprop": ["MeanSquare", "MeanGrad", "Moment"]}
# Accumulated squares: never negative.
POSITIVE_STATES = {("adam", "Moment2"), ("adamw", "Moment2"), ("adam", "Moment2Max"),
                   ("adamw", "Moment2Max"), ("adagrad", "Moment"), ("rmsprop", "MeanSquare")}


def initial_state(op_type, attrs, shape, dtype, rng):
    """Param, LearningRate and the op's state tensors (valid values: positive squares)."""
    state = {"Param": rng.standard_normal(shape).astype(dtype),
             "LearningRate": np.array([0.05], dtype)}
    for s in STATE_SLOTS[op_type]:
        if s in ("Beta1Pow", "Beta2Pow"):
            beta = attrs.get("beta1" if s == "Beta1Pow" else "beta2", 0.9 if s == "Beta1Pow"
                             else 0.999)
            state[s] = np.array([np.float32(beta)], dtype)
        elif s == "MeanGrad" and not attrs.get("centered"):
            continue
        elif s == "Moment2Max" and not attrs.get("amsgrad"):
            continue
        elif (op_type, s) in POSITIVE_STATES:
            state[s] = rng.random(shape).astype(dtype) + 0.1
        else:
            state[s] = 0.1 * rng.standard_normal(shape).astype(dtype)
    return state
