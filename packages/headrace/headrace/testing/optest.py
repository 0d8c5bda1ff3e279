"""The OpTest harness: run one op through the Executor and compare with NumPy-computed outputs.

    from headrace.testing import check_op

    def test_scale():
        x = np.random.rand(3, 4).astype("float32")
        check_op("scale", {"X": x}, {"Out": 2 * x + 1}, attrs={"scale": 2.0, "bias": 1.0})

Inputs are arrays, ``Tensor(array, lod)`` for LoD inputs, or lists of them for duplicable
slots. Expected outputs likewise; a Tensor's LoD is compared too. Outputs not listed are run
but not compared (intermediate ones, say). The op runs on every place given (default:
:func:`available_places`): the CPU, and CUDA when a GPU or Numba's simulator is there and the op
has a CUDA kernel.
"""
import os

import numpy as np

from ..framework import Program
from ..ops.plugins import default_registry
from ..runtime import CPUPlace, CUDAPlace, Executor, Scope, Tensor

__all__ = ["check_op", "run_op", "available_places", "TOLERANCES"]

# (rtol, atol) per dtype: float32 sums reorder under BLAS and SIMD, float64 barely.
TOLERANCES = {"float16": (1e-2, 1e-3), "float32": (1e-5, 1e-6), "float64": (1e-10, 1e-12)}


def available_places(op_type=None, registry=None):
    """CPUPlace, plus CUDAPlace(0) when CUDA is usable (a GPU, or NUMBA_ENABLE_CUDASIM=1) and,
    if ``op_type`` is given, the op has a CUDA kernel."""
    places = [CPUPlace()]
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or os.environ.get("HEADRACE_TEST_GPU"):
        registry = registry or default_registry()
        if op_type is None or "cuda" in registry.kernels_for(op_type):
            places.append(CUDAPlace(0))
    return places


def _as_list(value):
    return value if isinstance(value, list) else [value]


def _split(value):
    if isinstance(value, Tensor):
        return np.asarray(value.numpy()), value.lod
    return np.asarray(value), []


# Outputs an op updates in place, bound to their input's variables as the layers bind them (the
# op's infer refuses anything else): run_op's ``same_var`` for these ops.
_RUNNING_STATS = {"MeanOut": "Mean", "VarianceOut": "Variance"}
IN_PLACE_OUTPUTS = {"batch_norm": _RUNNING_STATS, "sync_batch_norm": _RUNNING_STATS}


def run_op(op_type, inputs, output_slots=None, attrs=None, place=None, registry=None,
           output_counts=None, same_var=None):
    """Build a one-op program, run it, return ``{slot: [Tensor, ...]}`` for every bound output.

    ``output_counts``: variables per duplicable output slot (default 1).
    ``same_var``: ``{output slot: input slot}`` for outputs the op updates in place and so must
    be bound to the input's variables (batch_norm's MeanOut/VarianceOut).
    """
    prog = Program(registry=registry)
    block = prog.global_block()
    opdef = prog.registry.get(op_type)
    feed, ins = {}, {}
    for slot, value in inputs.items():
        if value is None:
            continue
        names = []
        for i, v in enumerate(_as_list(value)):
            arr, lod = _split(v)
            name = f"{slot.lower()}_{i}"
            block.create_var(name=name, shape=arr.shape, dtype=arr.dtype,
                             lod_level=len(lod), need_check_feed=True)
            feed[name] = Tensor(arr, lod)
            names.append(name)
        ins[slot] = names
    outs = {}
    for s in opdef.outputs:
        if s.optional and (output_slots is None or s.name not in output_slots):
            continue
        n = (output_counts or {}).get(s.name, 1)
        outs[s.name] = [f"{s.name.lower()}_out_{i}" for i in range(n)]
    for out_slot, in_slot in (same_var or {}).items():
        if out_slot in outs and in_slot in ins:
            outs[out_slot] = list(ins[in_slot])
    op = block.append_op(op_type, ins, outs, attrs or {})
    fetch = [(slot, n) for slot, names in op.outputs.items() for n in names]
    exe = Executor(place or CPUPlace())
    got = exe.run(prog, feed=feed, fetch_list=[n for _, n in fetch], scope=Scope(),
                  return_numpy=False)
    result = {}
    for (slot, _), t in zip(fetch, got):
        result.setdefault(slot, []).append(t)
    return result


def check_op(op_type, inputs, outputs, attrs=None, places=None, rtol=None, atol=None,
             registry=None, check_dtype=True):
    """Run ``op_type`` on each place and compare every output in ``outputs`` with tolerances
    per dtype (override with rtol/atol). Raises AssertionError naming op, place and slot."""
    counts = {s: len(v) for s, v in outputs.items() if isinstance(v, list)}
    for place in places or available_places(op_type, registry):
        got = run_op(op_type, inputs, list(outputs), attrs, place, registry, counts)
        for slot, expected in outputs.items():
            for i, (exp, res) in enumerate(zip(_as_list(expected), got[slot])):
                exp_arr, exp_lod = _split(exp)
                res_arr = np.asarray(res.numpy())
                where = f"{op_type} on {place!r}, output {slot}[{i}]"
                if check_dtype:
                    assert res_arr.dtype == exp_arr.dtype, \
                        f"{where}: dtype {res_arr.dtype}, expected {exp_arr.dtype}"
                assert res_arr.shape == exp_arr.shape, \
                    f"{where}: shape {res_arr.shape}, expected {exp_arr.shape}"
                r, a = TOLERANCES.get(exp_arr.dtype.name, (0, 0))
                np.testing.assert_allclose(res_arr, exp_arr, rtol=rtol if rtol is not None
                                           else r, atol=atol if atol is not None else a,
                                           err_msg=where, equal_nan=True)
                if isinstance(exp, Tensor):
                    assert res.lod == exp_lod, f"{where}: LoD {res.lod}, expected {exp_lod}"
