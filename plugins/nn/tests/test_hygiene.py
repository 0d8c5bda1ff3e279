"""Every nn op that needs a kernel has a CPU kernel, a reference and a sample, and each sample
runs through the op and matches its reference. Every differentiable nn op has a gradient maker
whose ops have CPU kernels and write exactly the wanted gradients of its float inputs."""
import importlib
import pkgutil

import numpy as np
import pytest

import headrace_nn.ops
import headrace_nn.reference
from headrace.ops import default_registry
from headrace.testing.plugin_dists import first_party_plugin
from headrace_nn.reference import all_references, all_samples

REGISTRY = default_registry()
NN_OPS = REGISTRY.ops_of(first_party_plugin("nn"))
NEED_KERNEL = [t for t in NN_OPS if not REGISTRY.get(t).no_kernel]
REFERENCES, SAMPLES = all_references(), all_samples()
INT_ONLY = {"sequence_mask", "sequence_enumerate"}


def _modules(package):
    return sorted(m.name for m in pkgutil.iter_modules(package.__path__)
                  if not m.name.startswith("_"))


def test_the_plugin_has_ops_that_need_kernels():
    assert len(NEED_KERNEL) == 68   # 37 forward ops, 31 gradient ops


@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_op_has_a_cpu_kernel_for_both_float_dtypes(op_type):
    dtypes = REGISTRY.kernels_for(op_type).get("cpu", ())
    # sequence_mask and sequence_enumerate read integers only: their kernels are for those.
    want = {"int32", "int64"} if op_type in INT_ONLY else {"float32", "float64"}
    assert want <= set(dtypes), f"{op_type}: cpu kernels for {dtypes}"


@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_op_has_a_reference_and_a_sample(op_type):
    assert callable(REFERENCES.get(op_type)), f"{op_type} has no REFERENCES entry"
    assert callable(SAMPLES.get(op_type)), f"{op_type} has no SAMPLES entry"


def test_references_name_only_nn_ops():
    assert set(REFERENCES) <= set(NN_OPS) and set(SAMPLES) <= set(NN_OPS)


def test_modules_mirror_the_definitions():
    # ops/<m>.py, kernels/cpu/<m>.pyx and reference/<m>.py share their module names.
    ops_modules = _modules(headrace_nn.ops)
    assert _modules(headrace_nn.reference) == ops_modules
    cpu = importlib.import_module("headrace_nn.kernels.cpu")
    assert _modules(cpu) == ops_modules
    for name in ops_modules:
        defined = {d.type for d in importlib.import_module(f"headrace_nn.ops.{name}").OPS}
        kernels = {k[0] for k in importlib.import_module(f"headrace_nn.kernels.cpu.{name}")
                   .KERNELS}
        refs = set(importlib.import_module(f"headrace_nn.reference.{name}").REFERENCES)
        assert kernels == refs == defined, name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_sample_matches_reference(check, op_type, dtype):
    inputs, attrs = SAMPLES[op_type](np.random.default_rng(0), dtype)
    check(op_type, inputs, attrs)


@pytest.mark.parametrize("op_type", NEED_KERNEL)
def test_samples_are_reproducible(op_type):
    a = SAMPLES[op_type](np.random.default_rng(5), "float64")
    b = SAMPLES[op_type](np.random.default_rng(5), "float64")
    assert a[1] == b[1]
    for slot in a[0]:
        xs, ys = a[0][slot], b[0][slot]
        # a duplicable slot (sequence_concat's X) holds a list
        for x, y in zip(*(v if isinstance(v, list) else [v] for v in (xs, ys))):
            np.testing.assert_array_equal(np.asarray(getattr(x, "data", x)),
                                          np.asarray(getattr(y, "data", y)))


# == gradients =================================================================================

from headrace import Program  # noqa: E402
from headrace.ops.grad import EMPTY, GradContext, grad_name  # noqa: E402
from headrace.runtime import Tensor  # noqa: E402

FORWARD = [t for t in NN_OPS if not t.endswith(("_grad", "_grad2"))]
# Ops whose gradient is the op itself on the output's gradient (Paddle's makers):
# test_sequence_reverse.py checks them.
SELF_GRADIENT = {"sequence_reverse"}
DIFFERENTIABLE = [t for t in FORWARD if REGISTRY.get(t).differentiable and
                  t not in SELF_GRADIENT]
# Paddle's names; cross_entropy2's gradient is cross_entropy_grad2.
GRAD_TYPE = {t: t + "_grad" for t in DIFFERENTIABLE}
GRAD_TYPE["cross_entropy2"] = "cross_entropy_grad2"
# Forward slots that are integer (labels, ids, seeds) or statistics: no gradient.
NO_GRAD_SLOTS = {"Label", "Ids", "Seed", "Mean", "Variance", "MomentumTensor",
                 "PadValue"}  # sequence_pad: Paddle gives the pad value no gradient


def test_which_nn_ops_are_differentiable():
    # fused_conv2d_add_act: an inference op made by the passes, as Paddle's has no gradient.
    assert sorted(DIFFERENTIABLE) == sorted(set(FORWARD) - {"top_k", "accuracy", "sequence_mask",
                                                            "sequence_enumerate",
                                                            "fused_conv2d_add_act"} -
                                            SELF_GRADIENT)
    assert set(NN_OPS) == set(FORWARD) | set(GRAD_TYPE.values())
    for t in GRAD_TYPE.values():
        assert not REGISTRY.get(t).differentiable, t


def _forward_from_sample(op_type, seed=0):
    """The op built from its float64 sample (batch_norm as its layer builds it: MeanOut and
    VarianceOut are the Mean and Variance variables)."""
    inputs, attrs = SAMPLES[op_type](np.random.default_rng(seed), "float64")
    prog = Program()
    block = prog.global_block()
    ins = {}
    for slot, value in inputs.items():
        if value is None:
            continue
        ins[slot] = []
        # a duplicable slot (sequence_concat's X) holds a list
        for i, v in enumerate(value if isinstance(value, list) else [value]):
            arr = np.asarray(v.data if isinstance(v, Tensor) else v)
            lod = len(v.lod) if isinstance(v, Tensor) else 0
            ins[slot].append(block.create_var(name=f"{slot.lower()}_{i}", shape=arr.shape,
                                              dtype=arr.dtype.name, lod_level=lod))
    opdef = REGISTRY.get(op_type)
    outs = {s.name: [f"{s.name.lower()}_out"] for s in opdef.outputs if not s.optional}
    if op_type == "batch_norm":
        outs.update(MeanOut=["mean_0"], VarianceOut=["variance_0"])
    return prog, block.append_op(op_type, ins, outs, attrs)


@pytest.mark.parametrize("op_type", DIFFERENTIABLE)
def test_differentiable_op_has_a_gradient_maker_with_cpu_kernels(op_type):
    opdef = REGISTRY.get(op_type)
    assert opdef.grad is not None, f"{op_type}: differentiable but no gradient maker"
    grad_def = REGISTRY.get(GRAD_TYPE[op_type])
    assert not set(NO_GRAD_SLOTS) & {s.name[:-len("@GRAD")] for s in grad_def.outputs}
    for dtype in ("float32", "float64"):
        REGISTRY.kernel(grad_def.type, "cpu", dtype)  # raises KernelNotFoundError otherwise
    prog, op = _forward_from_sample(op_type)
    block = prog.global_block()
    floats = {n for s, names in op.inputs.items() if s not in NO_GRAD_SLOTS for n in names
              if block.var(n).dtype == "float64"}
    ctx = GradContext(op, floats, {grad_name(n) for n in op.output_arg_names})
    specs = opdef.grad(ctx)
    assert [s.type for s in specs] == [grad_def.type]
    spec = specs[0]
    written = {n for names in spec.outputs.values() for n in names if n != EMPTY}
    assert written == {grad_name(n) for n in floats}, op_type
    read = {n for names in spec.inputs.values() for n in names}
    # forward variables and the gradients of the forward's outputs, nothing else
    assert read <= set(op.input_arg_names) | set(op.output_arg_names) | \
        {grad_name(n) for n in op.output_arg_names}
    # the grad op validates and infers its outputs (shapes like the forward inputs)
    for names in spec.outputs.values():
        for n in names:
            fwd = block.var(n[:-len("@GRAD")])
            block.create_var(name=n, shape=fwd.shape, dtype=fwd.dtype, lod_level=fwd.lod_level)
    for names in spec.inputs.values():
        for n in names:
            if block.find_var(n) is None:
                fwd = block.var(n[:-len("@GRAD")])
                block.create_var(name=n, shape=fwd.shape, dtype=fwd.dtype)
    gop = block.append_op(spec.type, spec.inputs, spec.outputs, spec.attrs)
    for names in gop.outputs.values():
        for n in names:
            fwd = block.var(n[:-len("@GRAD")])
            assert tuple(block.var(n).shape) == tuple(fwd.shape), n


@pytest.mark.parametrize("op_type", DIFFERENTIABLE)
def test_gradient_maker_writes_nothing_when_no_gradient_is_wanted(op_type):
    prog, op = _forward_from_sample(op_type)
    ctx = GradContext(op, set(), {grad_name(n) for n in op.output_arg_names})
    assert REGISTRY.get(op_type).grad(ctx) == []


@pytest.mark.parametrize("op_type", DIFFERENTIABLE)
def test_each_gradient_alone_is_written_alone(op_type):
    prog, op = _forward_from_sample(op_type)
    block = prog.global_block()
    for slot, names in op.inputs.items():
        if slot in NO_GRAD_SLOTS or block.var(names[0]).dtype != "float64":
            continue
        ctx = GradContext(op, set(names), {grad_name(n) for n in op.output_arg_names})
        (spec,) = REGISTRY.get(op_type).grad(ctx)
        assert {s: v for s, v in spec.outputs.items() if any(n != EMPTY for n in v)} == \
            {grad_name(slot): [grad_name(n) for n in names]}
