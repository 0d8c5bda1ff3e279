"""Random inputs to every op through the Executor: each case either runs and matches the NumPy
reference, or raises a headrace error. Nothing may crash the interpreter or give wrong numbers.

Cases start from each op's valid sample (reference/<module>.py SAMPLES) and perturb it: the
dtype of an input, a dim of an input, the memory layout (non-contiguous views, read-only
arrays), or an attribute value.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headrace.errors import HeadraceError
from headrace.ops import default_registry
from headrace.testing import load_references, run_op
from headrace.runtime import Tensor

REGISTRY = default_registry()
REFS, SAMPLES = load_references()
OPS = sorted(t for t in SAMPLES if t in REFS and t in REGISTRY)
DTYPES = ["float32", "float64", "int32", "int64", "bool"]


def _arrays(inputs):
    for slot, v in inputs.items():
        for i, a in enumerate(v if isinstance(v, list) else [v]):
            yield slot, i, a


def _replace(inputs, slot, i, new):
    v = inputs[slot]
    if isinstance(v, list):
        v = list(v)
        v[i] = new
        inputs[slot] = v
    else:
        inputs[slot] = new


def _data(a):
    return a.data if isinstance(a, Tensor) else a


def _rewrap(old, data):
    return Tensor(data, old.lod) if isinstance(old, Tensor) else data


def _perturb(draw, inputs, attrs, opdef):
    inputs = dict(inputs)
    attrs = dict(attrs)
    targets = [(s, i, a) for s, i, a in _arrays(inputs) if a is not None]
    kind = draw(st.sampled_from(["none", "dtype", "shape", "layout", "readonly", "attr"]))
    if kind in ("dtype", "shape", "layout", "readonly") and targets:
        slot, i, a = draw(st.sampled_from(targets))
        d = np.asarray(_data(a))
        if kind == "dtype":
            d = d.astype(draw(st.sampled_from(DTYPES)))
        elif kind == "shape" and d.ndim:
            axis = draw(st.integers(0, d.ndim - 1))
            n = draw(st.sampled_from([0, 1, d.shape[axis] + 1, max(d.shape[axis] - 1, 0)]))
            d = np.resize(d, d.shape[:axis] + (n,) + d.shape[axis + 1:])
        elif kind == "shape":
            d = d.reshape(1)
        elif kind == "layout" and d.ndim:
            big = np.repeat(d, 2, axis=-1)
            d = big[..., ::2]
        elif kind == "readonly":
            d = d.copy()
            d.flags.writeable = False
        _replace(inputs, slot, i, _rewrap(a, d))
    elif kind == "attr" and opdef.attrs:
        spec = draw(st.sampled_from(sorted(opdef.attrs.values(), key=lambda s: s.name)))
        attrs[spec.name] = draw(_attr_values(spec))
    return inputs, attrs, kind


def _attr_values(spec):
    if spec.choices:
        return st.sampled_from(list(spec.choices) + ["bogus"] if spec.type == "string"
                               else list(spec.choices))
    small = st.integers(-3, 5)
    return {
        "int": small, "long": small, "float": st.floats(-3, 3), "float64": st.floats(-3, 3),
        "bool": st.booleans(), "string": st.sampled_from(["", "bogus", "NCHW", "AVERAGE"]),
        "ints": st.lists(small, max_size=4), "longs": st.lists(small, max_size=4),
        "floats": st.lists(st.floats(-3, 3), max_size=4),
        "float64s": st.lists(st.floats(-3, 3), max_size=4),
        "bools": st.lists(st.booleans(), max_size=3),
        "strings": st.lists(st.sampled_from(["a", ""]), max_size=2),
    }.get(spec.type, st.just(spec.default))


def _filled(opdef, attrs):
    full = {a.name: a.default for a in opdef.attrs.values() if not a.required}
    full.update(attrs)
    return full


def _compare(op_type, got, expected, loose):
    for slot, exp in expected.items():
        if exp is None or slot not in got:
            continue  # e.g. random outputs, compared statistically in the op's own tests
        exps = exp if isinstance(exp, list) else [exp]
        for e, g in zip(exps, got[slot]):
            e = np.asarray(_data(e))
            g = np.asarray(g.numpy())
            assert g.shape == e.shape, f"{op_type}.{slot}: shape {g.shape} vs reference {e.shape}"
            if e.dtype.kind in "fc":
                tol = 1e-3 if loose else 1e-5
                np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64),
                                           rtol=tol, atol=tol, equal_nan=True,
                                           err_msg=f"{op_type}.{slot}")
            else:
                np.testing.assert_array_equal(g, e, err_msg=f"{op_type}.{slot}")


@pytest.mark.parametrize("op_type", OPS)
@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzz_op(op_type, data):
    opdef = REGISTRY.get(op_type)
    seed = data.draw(st.integers(0, 2**16))
    dtype = data.draw(st.sampled_from(["float32", "float64"]))
    inputs, attrs = SAMPLES[op_type](np.random.default_rng(seed), dtype)
    # Bind the outputs the reference computes for the valid sample: grad ops' outputs are all
    # optional, and an unbound output would never be computed.
    base = REFS[op_type]({s: v for s, v in inputs.items() if v is not None},
                         _filled(opdef, attrs))
    slots = list(base)
    counts = {s: len(v) for s, v in base.items() if isinstance(v, list)}
    inputs, attrs, kind = _perturb(data.draw, inputs, attrs, opdef)
    try:
        got = run_op(op_type, inputs, slots, attrs, output_counts=counts)
    except HeadraceError:
        return  # a clear refusal is a fine outcome for a perturbed case
    plain = {s: v for s, v in inputs.items() if v is not None}  # LoD inputs stay Tensors
    try:
        expected = REFS[op_type](plain, _filled(opdef, attrs))
    except Exception as e:  # headrace accepted what the reference rejects
        pytest.fail(f"{op_type} ran on a {kind}-perturbed case the reference rejects "
                    f"({type(e).__name__}: {e}); inputs "
                    f"{ {s: getattr(_data(v), 'shape', None) for s, v in inputs.items()} }, "
                    f"attrs {attrs}")
    _compare(op_type, got, expected, loose=kind == "dtype" or dtype == "float32")
