"""Evaluation ops: top_k and accuracy (no gradient)."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import dim_eq, expect_rank, merge_dim

from ._common import FLOATS, at_least, describe, expect_same_dims


def _infer_top_k(ctx):
    x = ctx.input("X")
    k = ctx.attr("k")
    if x.rank < 1:
        ctx.fail(f"{describe('X', x)} must have a last dim to select from",
                 expected="rank >= 1", found=f"shape {list(x.shape)}")
    if ctx.has_input("K"):
        k = -1  # the K tensor's value is known only when the op runs
    elif x.shape[-1] >= 0 and x.shape[-1] < k:
        ctx.fail(f"{describe('X', x)} has {x.shape[-1]} values in its last dim, fewer than k",
                 expected=f"last dim >= k = {k}", found=f"X{list(x.shape)}")
    shape = list(x.shape[:-1]) + [k]
    ctx.set_output("Out", shape, x.dtype, x.lod_level)
    ctx.set_output("Indices", shape, "int64", x.lod_level)


def _infer_accuracy(ctx):
    out, idx, label = ctx.input("Out"), ctx.input("Indices"), ctx.input("Label")
    expect_rank(ctx, out, 2, "Out")
    expect_rank(ctx, idx, 2, "Indices")
    expect_rank(ctx, label, 2, "Label")
    # Out and Indices are the two results of one top_k: same [N, k].
    expect_same_dims(ctx, out, idx, "Out", "Indices", (0, 1), "the top-k shape")
    if not dim_eq(label.shape[1], 1):
        ctx.fail(f"{describe('Label', label)} must hold one class id per row",
                 expected="Label shape [N, 1]", found=f"Label{list(label.shape)}")
    n = merge_dim(out.shape[0], idx.shape[0])
    if not dim_eq(n, label.shape[0]):
        ctx.fail(f"{describe('Out', out)} has {n} rows but {describe('Label', label)} has "
                 f"{label.shape[0]}", expected=f"Label shape [{n}, 1]",
                 found=f"Label{list(label.shape)}")
    # 0-D, as Paddle 3 declares them (Fluid wrote [1]: the same one number).
    ctx.set_output("Accuracy", [], "float32")
    ctx.set_output("Correct", [], "int32")
    ctx.set_output("Total", [], "int32")


top_k = OpDef(
    "top_k",
    inputs=[In("X", "input; the last dim is searched",
               dtypes=FLOATS + ("int32", "int64")),
            In("K", "int32 [1]: k at run time, overriding the attribute", optional=True,
               dtypes=("int32",))],
    outputs=[Out("Out", "the k largest values of each row, descending; X.dims[:-1] + [k]"),
             Out("Indices", "int64 positions of Out in X's last dim", dtypes=("int64",))],
    attrs=[Attr("k", "int", 1, "how many values to keep", check=at_least(1))],
    infer=_infer_top_k,
    differentiable=False,
    doc="Out, Indices = the k largest entries of X along its last dim (descending; ties keep "
        "the lower index first). With input K the last output dim is unknown at build time. "
        "No gradient: op-conventions list top_k among the ops without one, and its use here "
        "is evaluation (into accuracy). Paddle does register top_k_grad (Out@GRAD scattered "
        "to Indices); it would be a small scatter kernel if a model ever needs it.",
)

accuracy = OpDef(
    "accuracy",
    inputs=[In("Out", "top-k values [N, k] (only the shape is used)", dtypes=FLOATS),
            In("Indices", "int64 top-k class ids [N, k]", dtypes=("int64",)),
            In("Label", "int64 true class ids [N, 1]", dtypes=("int64",))],
    outputs=[Out("Accuracy", "float32 0-D: Correct / Total", dtypes=("float32",)),
             Out("Correct", "int32 0-D: rows whose label is among their k ids",
                 dtypes=("int32",)),
             Out("Total", "int32 0-D: N", dtypes=("int32",))],
    infer=_infer_accuracy,
    differentiable=False,
    doc="Top-k accuracy: a row is correct when Label[i] is in Indices[i, :].",
)

OPS = [top_k, accuracy]
