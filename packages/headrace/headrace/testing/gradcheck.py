"""Gradient checks: an op's backward ops against central finite differences, in float64.

    check_grad("mul", {"X": x, "Y": y}, wrt=["X", "Y"])

The analytic gradient of ``sum(Out * G)`` (G a fixed random upstream gradient) is computed by
the op's gradient maker and grad kernels through ``gradients``; the numeric one by running the
forward op with each checked element moved by ±eps.
"""
import numpy as np

from ..autodiff import gradients
from ..framework import Program
from ..runtime import CPUPlace, Executor, Scope, Tensor

__all__ = ["check_grad"]


def _as_list(v):
    return v if isinstance(v, list) else [v]


def _build(op_type, inputs, attrs, wrt, outputs, registry):
    prog = Program(registry=registry)
    block = prog.global_block()
    ins, feed, checked = {}, {}, []
    for slot, value in inputs.items():
        if value is None:
            continue
        names = []
        for i, v in enumerate(_as_list(value)):
            arr, lod = (np.asarray(v.data), v.lod) if isinstance(v, Tensor) else (np.asarray(v), [])
            name = f"{slot.lower()}_{i}"
            var = block.create_var(name=name, shape=arr.shape, dtype=arr.dtype,
                                   lod_level=len(lod), need_check_feed=True,
                                   stop_gradient=slot not in wrt)
            feed[name] = Tensor(arr, lod)
            names.append(name)
            if slot in wrt:
                checked.append((slot, i, var))
        ins[slot] = names
    opdef = prog.registry.get(op_type)
    outs = {s.name: [f"{s.name.lower()}_out"] for s in opdef.outputs
            if not s.optional or s.name in (outputs or ())}
    op = block.append_op(op_type, ins, outs, attrs or {})
    targets = [block.var(op.output(s)[0]) for s in (outputs or [
        s.name for s in opdef.outputs if not s.intermediate and op.output(s.name)])]
    return prog, block, feed, checked, targets


def check_grad(op_type, inputs, wrt, attrs=None, outputs=None, eps=1e-6, rtol=1e-5,
               atol=1e-7, registry=None, seed=0, place=None):
    """Compare the analytic and numeric gradients of ``op_type`` w.r.t. input slots ``wrt``.

    inputs: as for check_op; the checked ones must be float64. outputs: the output slots that
    form the scalar ``sum(Out * G)`` (default: every non-intermediate output).
    """
    place = place or CPUPlace()
    rng = np.random.default_rng(seed)
    prog, block, feed, checked, targets = _build(op_type, inputs, attrs, set(wrt), outputs,
                                                 registry)
    exe = Executor(place)
    # Upstream gradients: fixed random values shaped like the forward outputs.
    fwd_vals = exe.run(prog, feed=feed, fetch_list=targets, scope=Scope())
    g_vars, upstream = [], {}
    for t, val in zip(targets, fwd_vals):
        g = block.create_var(name=f"{t.name}_upstream", shape=val.shape, dtype=val.dtype,
                             need_check_feed=True, stop_gradient=True)
        g_vars.append(g)
        upstream[g.name] = rng.standard_normal(val.shape).astype(val.dtype)
    fwd_prog = prog.clone()
    grads = gradients(targets, [v for _, _, v in checked], target_gradients=g_vars)
    for (slot, i, _var), gv in zip(checked, grads):
        assert gv is not None, f"{op_type}: input {slot}[{i}] got no gradient"
    analytic = exe.run(prog, feed={**feed, **upstream}, fetch_list=grads, scope=Scope())

    def objective(fd):
        vals = exe.run(fwd_prog, feed=fd, fetch_list=[t.name for t in targets], scope=Scope())
        return sum(float(np.sum(v.astype(np.float64) * upstream[g.name]))
                   for v, g in zip(vals, g_vars))

    for (slot, i, var), got in zip(checked, analytic):
        base = feed[var.name]
        x = np.array(base.data, dtype=np.float64)
        assert x.dtype == np.float64 and base.data.dtype == np.float64, \
            f"{op_type}: gradient checks run in float64 (input {slot}[{i}] is {base.data.dtype})"
        numeric = np.zeros_like(x)
        flat, nflat = x.reshape(-1), numeric.reshape(-1)
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + eps
            plus = objective({**feed, var.name: Tensor(x.copy(), base.lod)})
            flat[k] = old - eps
            minus = objective({**feed, var.name: Tensor(x.copy(), base.lod)})
            flat[k] = old
            nflat[k] = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(
            got, numeric, rtol=rtol, atol=atol,
            err_msg=f"{op_type}: analytic vs numeric gradient of input {slot}[{i}]")
