"""batch_norm / batch_norm_grad on CUDAPlace (Numba's simulator without a GPU) against the CPU
kernel: training and test mode, use_global_stats, NCHW and NHWC, 2-D to 5-D, MomentumTensor,
float32 running statistics, channels longer than a block, and the refusals. Shapes stay tiny:
the simulator runs each thread in Python."""
import numpy as np
import pytest

import headrace as hr
from headrace.testing.parity import same_on_cpu_and_cuda

pytestmark = pytest.mark.cuda

CPU, GPU = hr.CPUPlace(), hr.CUDAPlace(0)
OUTS = ["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance"]
GRADS = ["X@GRAD", "Scale@GRAD", "Bias@GRAD"]


def _run_bn(op, inputs, slots, attrs, place):
    """One batch_norm built as the layer builds it: MeanOut/VarianceOut are the persistable
    Mean/Variance variables (so the kernel updates them in place); every output fetched."""
    prog = hr.Program()
    block = prog.global_block()
    scope, feed, ins = hr.Scope(), {}, {}
    for slot, v in inputs.items():
        name = slot.lower()
        stat = slot in ("Mean", "Variance")
        block.create_var(name=name, shape=v.shape, dtype=v.dtype, persistable=stat)
        if stat:
            scope.set(name, hr.Tensor(np.array(v, copy=True)))
        else:
            feed[name] = v
        ins[slot] = [name]
    outs = {s: [s.lower() + "_out"] for s in slots}
    outs["MeanOut"], outs["VarianceOut"] = ["mean"], ["variance"]
    block.append_op("batch_norm", ins, outs, attrs)
    fetch = [outs[s][0] for s in slots]
    got = hr.Executor(place).run(prog, feed=feed, fetch_list=fetch, scope=scope)
    return {s: [hr.Tensor(np.asarray(g))] for s, g in zip(slots, got)}


def _both(op, inputs, slots, attrs):
    return same_on_cpu_and_cuda(op, inputs, slots, attrs,
                                run=_run_bn if op == "batch_norm" else None)


def _inputs(shape, C, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return {"X": (rng.standard_normal(shape) * 2 + 5).astype(dtype),
            "Scale": rng.uniform(0.5, 1.5, C).astype(dtype),
            "Bias": rng.standard_normal(C).astype(dtype),
            "Mean": rng.standard_normal(C).astype(dtype),
            "Variance": rng.uniform(0.5, 2, C).astype(dtype)}


@pytest.mark.parametrize("shape,layout,mode,dtype", [
    ((2, 3, 5, 5), "NCHW", "train", "float32"), ((2, 3, 5, 5), "NCHW", "train", "float64"),
    ((2, 5, 5, 3), "NHWC", "train", "float32"), ((2, 5, 5, 3), "NHWC", "test", "float64"),
    ((4, 3), "NCHW", "train", "float32"), ((4, 3), "NHWC", "global", "float32"),
    ((2, 2, 2, 2, 2), "NCHW", "train", "float32"), ((2, 3, 5, 5), "NCHW", "global", "float64"),
    ((3, 2, 40), "NCHW", "train", "float32"),     # 120 values a channel: more than a block
    ((2, 3, 4, 4), "NCHW", "test", "float32")])
def test_batch_norm_like_the_cpu(shape, layout, mode, dtype):
    C = shape[-1] if layout == "NHWC" else shape[1]
    attrs = {"data_layout": layout, "momentum": 0.8, "epsilon": 1e-4,
             "is_test": mode == "test", "use_global_stats": mode == "global"}
    ins = _inputs(shape, C, dtype)
    fwd = _both("batch_norm", ins, OUTS, attrs)
    dy = np.random.default_rng(5).standard_normal(shape).astype(dtype)
    _both("batch_norm_grad", dict(ins, SavedMean=fwd["SavedMean"],
                                  SavedVariance=fwd["SavedVariance"], **{"Y@GRAD": dy}),
          GRADS, attrs)


def test_momentum_tensor():
    ins = _inputs((2, 3, 2, 2), 3, "float32", seed=1)
    ins["MomentumTensor"] = np.array([0.5], "float32")
    _both("batch_norm", ins, OUTS, {"momentum": 0.9})


def test_no_values_in_training_is_refused():
    ins = _inputs((0, 3, 2, 2), 3, "float32")
    for place in (CPU, GPU):
        with pytest.raises(Exception, match="no values"):
            _run_bn("batch_norm", ins, OUTS, {}, place)


def test_a_wrong_scale_is_refused():
    ins = _inputs((2, 3, 2), 3, "float32")
    ins["Scale"] = np.ones(4, "float32")
    for place in (CPU, GPU):
        with pytest.raises(Exception, match="Scale"):
            _run_bn("batch_norm", ins, OUTS, {}, place)
