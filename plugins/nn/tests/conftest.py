"""Fixtures of the nn kernel tests: run an op against its NumPy reference, build kernels.

``check_ref(op_type, inputs, attrs)`` computes the reference on copies of the inputs and runs
the op through the Executor with :func:`headrace.testing.check_op`, except where check_op
cannot express the op:
- batch_norm updates Mean/Variance in place (MeanOut must be the Mean variable, and check_op
  names outputs itself), so it runs in a hand-built program with the running statistics as
  persistable variables of a Scope, and the in-place update is checked there.
"""
import copy

import numpy as np
import pytest

from headrace import Program
from headrace.ops import default_registry
from headrace.runtime import CPUPlace, Executor, Scope, Tensor
from headrace.testing import TOLERANCES, check_op
from headrace_nn.reference import all_references

REFERENCES = all_references()


def make_kernel(op_type, attrs=None, dtype="float32", info=None):
    """The CPU kernel object of ``op_type`` for ``attrs`` (defaults filled in)."""
    opdef = default_registry().get(op_type)
    full = {name: a.default for name, a in opdef.attrs.items()}
    full.update(attrs or {})
    return default_registry().kernel(op_type, "cpu", dtype).fn(full, info)




def _tolerance(expected, rtol, atol):
    arr = np.asarray(expected.numpy() if isinstance(expected, Tensor) else expected)
    r, a = TOLERANCES.get(arr.dtype.name, (0, 0))
    return (r if rtol is None else rtol), (a if atol is None else atol)


def assert_matches(got, expected, where, rtol=None, atol=None):
    r, a = _tolerance(expected, rtol, atol)
    exp = expected.numpy() if isinstance(expected, Tensor) else np.asarray(expected)
    res = got.numpy() if isinstance(got, Tensor) else np.asarray(got)
    assert res.dtype == exp.dtype, f"{where}: dtype {res.dtype}, expected {exp.dtype}"
    assert res.shape == exp.shape, f"{where}: shape {res.shape}, expected {exp.shape}"
    np.testing.assert_allclose(res, exp, rtol=r, atol=a, err_msg=where, equal_nan=True)
    if isinstance(expected, Tensor):
        assert got.lod == expected.lod, f"{where}: LoD {got.lod}, expected {expected.lod}"


STATS = ("Scale", "Bias", "Mean", "Variance")


def run_batch_norm(inputs, attrs):
    """Run batch_norm as the layer builds it; returns (outputs by slot, scope, the arrays
    given as Mean and Variance). Mean/Variance live in the scope (persistable)."""
    prog = Program()
    block = prog.global_block()
    x = inputs["X"]
    ins, feed = {}, {}
    ins["X"] = block.create_var(name="x", shape=x.shape, dtype=x.dtype.name)
    feed["x"] = x
    scope = Scope()
    for slot in STATS + ("MomentumTensor",):
        if inputs.get(slot) is None:
            continue
        v = inputs[slot]
        persist = slot in ("Mean", "Variance")
        ins[slot] = block.create_var(name=slot.lower(), shape=v.shape, dtype=v.dtype.name,
                                     persistable=persist)
        if persist:
            scope.set(slot.lower(), Tensor(v))
        else:
            feed[slot.lower()] = v
    outs = {"Y": "y", "MeanOut": "mean", "VarianceOut": "variance", "SavedMean": "saved_mean",
            "SavedVariance": "saved_variance"}
    block.append_op("batch_norm", ins, outs, attrs)
    names = list(outs.values())
    got = Executor(CPUPlace()).run(prog, feed=feed, fetch_list=names, scope=scope)
    return dict(zip(outs, got)), scope


def check_ref(op_type, inputs, attrs=None, rtol=None, atol=None, expected=None):
    """Compare the op with its reference (or ``expected``) on the CPU."""
    attrs = attrs or {}
    if expected is None:
        expected = REFERENCES[op_type](copy.deepcopy(inputs), attrs)
    if op_type == "batch_norm":
        given = (inputs["Mean"], inputs["Variance"])
        got, scope = run_batch_norm(inputs, attrs)
        for slot, exp in expected.items():
            assert_matches(got[slot], exp, f"batch_norm output {slot}", rtol, atol)
        # MeanOut/VarianceOut are the Mean/Variance variables: the scope holds the new values.
        for name, _arr in zip(("mean", "variance"), given):
            slot = "MeanOut" if name == "mean" else "VarianceOut"
            assert_matches(scope.find(name).data, expected[slot], f"scope '{name}'", rtol, atol)
        return got
    check_op(op_type, inputs, expected, attrs=attrs, rtol=rtol, atol=atol)
    return expected


@pytest.fixture
def check():
    """``check(op_type, inputs, attrs=None, rtol=None, atol=None, expected=None)``."""
    return check_ref


@pytest.fixture
def kernel():
    """``kernel(op_type, attrs=None, dtype='float32', info=None)``: a CPU kernel object."""
    return make_kernel


def make_variants(a):
    """The same values as a non-contiguous array and as a read-only one."""
    a = np.asarray(a)
    wide = np.zeros(a.shape + (2,), a.dtype)
    wide[..., 0] = a
    ro = a.copy()
    ro.flags.writeable = False
    return {"strided": wide[..., 0], "readonly": ro}


@pytest.fixture
def variants():
    """``variants(array)`` -> {"strided": non-contiguous copy, "readonly": read-only copy}."""
    return make_variants


def make_fused_conv_case(x, filt, attrs, extra, relu, rng):
    """``(args, want)`` for a conv2d kernel called as ``run(*args, relu=relu)``: args are
    [Input, Filter, Bias, ResidualData] with Bias and/or ResidualData drawn from ``rng`` when
    ``extra`` names them ("bias", "residual", "both"); want is fused_conv2d_add_act's
    reference of the same, in float64."""
    wide = {"Input": x.astype("float64"), "Filter": filt.astype("float64"), "Bias": None,
            "ResidualData": None}
    if extra in ("bias", "both"):
        wide["Bias"] = rng.standard_normal(filt.shape[0]).astype("float32")
    if extra in ("residual", "both"):
        # Output's shape, read off conv2d's reference (its geometry, not written again here).
        shape = REFERENCES["conv2d"]({"Input": x, "Filter": filt}, attrs)["Output"].shape
        wide["ResidualData"] = rng.standard_normal(shape).astype("float32")
    act = "relu" if relu else "identity"
    want = REFERENCES["fused_conv2d_add_act"](wide, dict(attrs, activation=act))["Output"]
    return [x, filt, wide["Bias"], wide["ResidualData"]], want


@pytest.fixture
def fused_conv_case():
    """``fused_conv_case(x, filt, attrs, extra, relu, rng)`` -> (kernel args, float64 want)."""
    return make_fused_conv_case


@pytest.fixture
def run_bn():
    """``run_bn(inputs, attrs)`` -> (outputs by slot, scope): batch_norm in a program whose
    Mean/Variance are persistable variables of the scope, updated in place."""
    return run_batch_norm
