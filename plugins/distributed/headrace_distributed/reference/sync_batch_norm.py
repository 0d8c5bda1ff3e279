"""Reference of sync_batch_norm: batch_norm over the ranks' batches concatenated.

``sync_batch_norm_ranks`` takes every rank's X (and Y@GRAD) and returns each rank's outputs,
computed by headrace-nn's batch_norm reference on the concatenation, then cut back per rank;
Scale@GRAD/Bias@GRAD are each rank's own part (their sum over ranks is the whole batch's).
"""
import numpy as np

from headrace_nn.reference.batch_norm import batch_norm, batch_norm_grad, sample_batch_norm, \
    sample_batch_norm_grad


def _cut(full, sizes):
    return np.split(full, np.cumsum(sizes)[:-1], axis=0)


def sync_batch_norm_ranks(inputs, xs, attrs):
    out = batch_norm({**inputs, "X": np.concatenate(xs)}, attrs)
    ys = _cut(out["Y"], [len(x) for x in xs])
    return [{**out, "Y": y} for y in ys]


def sync_batch_norm_grad_ranks(inputs, xs, dys, attrs):
    full = batch_norm_grad({**inputs, "X": np.concatenate(xs), "Y@GRAD": np.concatenate(dys)},
                           attrs)
    dxs = _cut(full["X@GRAD"], [len(x) for x in xs])
    results = []
    for x, dy, dx in zip(xs, dys, dxs):
        own = batch_norm_grad({**inputs, "X": x, "Y@GRAD": dy}, attrs)
        results.append({"X@GRAD": dx, "Scale@GRAD": own["Scale@GRAD"],
                        "Bias@GRAD": own["Bias@GRAD"]})
    return results


REFERENCES = {"sync_batch_norm": batch_norm, "sync_batch_norm_grad": batch_norm_grad}
SAMPLES = {"sync_batch_norm": sample_batch_norm,
           "sync_batch_norm_grad": sample_batch_norm_grad}
