"""sync_batch_norm: batch_norm whose batch statistics span every rank (Paddle's op).

The slots, attributes and shape rules are batch_norm's (headrace-nn), so the data-parallel
rewrite turns a batch_norm into a sync_batch_norm by changing its type only. Statistics are
reduced over ring 0 (every rank), as Paddle's op does.
"""
from headrace.ops import OpDef
from headrace.ops.grad import GradOp
from headrace_nn.ops.batch_norm import batch_norm, batch_norm_grad



def _like(base, op_type, doc):
    def infer(ctx):
        # batch_norm's rule: the statistics are per channel whichever ranks contribute.
        base.infer(ctx)
    return OpDef(op_type, inputs=base.inputs, outputs=base.outputs,
                 attrs=list(base.attrs.values()), infer=infer,
                 differentiable=base.differentiable, doc=doc)


sync_batch_norm = _like(
    batch_norm, "sync_batch_norm",
    "batch_norm with the batch mean and variance of every rank's X together (two all-reduces "
    "of per-channel sums: the count and sum, then the sum of squared deviations); the running "
    "statistics, Y and the saved statistics as batch_norm over the concatenated batch. With "
    "global statistics (is_test, use_global_stats) nothing is communicated.")

sync_batch_norm_grad = _like(
    batch_norm_grad, "sync_batch_norm_grad",
    "Gradient of sync_batch_norm: X@GRAD uses sum(Y@GRAD) and sum(Y@GRAD * xhat) over every "
    "rank (one all-reduce); Scale@GRAD and Bias@GRAD are this rank's sums (the data-parallel "
    "gradient all-reduce adds the ranks' parts, as for any parameter).")


def _sync_batch_norm_grad(ctx):
    # batch_norm's maker with the type changed: the same inputs feed the same formulas.
    return [GradOp("sync_batch_norm_grad", g.inputs, g.outputs, g.attrs)
            for g in batch_norm.grad(ctx)]


sync_batch_norm.grad = _sync_batch_norm_grad

OPS = [sync_batch_norm, sync_batch_norm_grad]
