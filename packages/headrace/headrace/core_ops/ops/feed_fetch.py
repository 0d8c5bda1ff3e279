"""feed and fetch: the executor's entry and exit points (it interprets them; no kernels).

A program saved for inference starts with ``feed`` ops reading the ``feed`` holder variable
(kind FEED_MINIBATCH) and ends with ``fetch`` ops writing the ``fetch`` holder (kind FETCH_LIST);
``col`` says which slot of the holder each op uses.
"""
from headrace.ops import Attr, In, OpDef, Out

from ._common import TENSOR_KINDS, expect_kind


def _col_check(v):
    return "must be >= 0" if v < 0 else None


def _infer_feed(ctx):
    expect_kind(ctx, ctx.input("X"), "feed_minibatch", "X")
    # Out keeps the shape its declaration gives (the data layer's [-1, ...]); the fed
    # tensor's real shape is checked against it at run time.


def _infer_fetch(ctx):
    x = ctx.input("X")
    expect_kind(ctx, x, TENSOR_KINDS, "X")
    ctx.set_output("Out", (), None, kind="fetch_list")


feed = OpDef(
    "feed",
    inputs=[In("X", "the feed holder variable (kind feed_minibatch), usually named 'feed'")],
    outputs=[Out("Out", "the variable that receives the col-th fed tensor (data and LoD)")],
    attrs=[Attr("col", "int", doc="which fed tensor of the holder", check=_col_check)],
    infer=_infer_feed,
    differentiable=False,
    no_kernel=True,
    doc="Out = the col-th tensor of the feed holder X; interpreted by the executor.",
)

fetch = OpDef(
    "fetch",
    inputs=[In("X", "the tensor (or tensor array) to fetch")],
    outputs=[Out("Out", "the fetch holder variable (kind fetch_list), usually named 'fetch'")],
    attrs=[Attr("col", "int", doc="which slot of the holder receives X", check=_col_check)],
    infer=_infer_fetch,
    differentiable=False,
    no_kernel=True,
    doc="The col-th slot of the fetch holder Out = a host copy of X; interpreted by the "
        "executor.",
)

OPS = [feed, fetch]
