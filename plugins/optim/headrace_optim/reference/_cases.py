"""The update ops over fresh variables, shared by the optim plugin's tests."""
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
