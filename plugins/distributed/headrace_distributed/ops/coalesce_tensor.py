"""coalesce_tensor: many tensors packed into one flat buffer (Paddle's op and attributes).

The data-parallel rewrite packs a bucket of gradients into one buffer so that a step makes one
collective call per bucket rather than one per parameter. In Paddle the Output variables then
share the FusedOutput's memory; headrace variables never alias one another, so the rewrite
unpacks the reduced buffer with ``split`` + ``reshape2`` (see ``headrace_distributed.transpiler``).
"""
from headrace.dtypes import from_proto
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.shape import numel

DTYPES = ("float32", "float64")
DEFAULT_ALIGN_BYTES = 256


def aligned_numel(n, itemsize, use_align, align_size):
    """Elements a tensor of ``n`` elements takes in the buffer (padded to the alignment)."""
    if not use_align:
        return n
    align = align_size if align_size > 0 else DEFAULT_ALIGN_BYTES
    step = max(1, align // itemsize)
    return -(-n // step) * step if n else 0


def _dtype_name(ctx):
    try:
        return from_proto(ctx.attr("dtype"))
    except (KeyError, ValueError):
        ctx.fail(f"attribute dtype={ctx.attr('dtype')} is not a VarType code",
                 expected="a VarType code (FP32 5, FP64 6)", found=ctx.attr("dtype"))


def _infer_coalesce(ctx):
    dtype = _dtype_name(ctx)
    metas = ctx.inputs("Input")
    ctx.expect(len(metas) == ctx.num_outputs("Output"),
               "Output must list one variable per Input variable",
               expected=f"{len(metas)} variables", found=f"{ctx.num_outputs('Output')}")
    total = 0
    for i, meta in enumerate(metas):
        ctx.expect(meta.dtype == dtype, f"Input #{i} '{meta.name}' must have the dtype "
                   f"attribute's type", expected=dtype, found=meta.dtype)
        ctx.set_output_like("Output", meta, index=i)
        n = numel(meta.shape)
        if total >= 0:
            total = -1 if n < 0 else total + aligned_numel(
                n, 4 if dtype == "float32" else 8, ctx.attr("use_align"), ctx.attr("align_size"))
    ctx.set_output("FusedOutput", [total], dtype)


coalesce_tensor = OpDef(
    "coalesce_tensor",
    inputs=[In("Input", "the tensors to pack, in order", duplicable=True, dtypes=DTYPES)],
    outputs=[Out("Output", "the tensors (Paddle: views of FusedOutput; here: Input's values, "
                 "or the constant with set_constant)", duplicable=True),
             Out("FusedOutput", "the flat buffer: each tensor's elements in order, each padded "
                 "to the alignment")],
    attrs=[
        Attr("copy_data", "bool", False, "copy Input's values into the buffer"),
        Attr("set_constant", "bool", False, "fill the buffer (and Output) with 'constant'"),
        Attr("persist_output", "bool", False, "Paddle's hint: the buffer outlives the step"),
        Attr("constant", "float", 0.0, "the fill value of set_constant"),
        Attr("dtype", "int", 5, "the VarType code of every tensor (FP32 5, FP64 6)"),
        Attr("use_align", "bool", True, "pad each tensor to the alignment"),
        Attr("align_size", "int", -1, "alignment in bytes (-1: 256)"),
        Attr("user_defined_size_of_dtype", "int", -1, "Paddle's override of the element size "
             "(must be -1 or the dtype's size here)"),
        Attr("concated_shapes", "ints", [], "Paddle's shapes without Input (unsupported: "
             "must be empty)"),
        Attr("concated_ranks", "ints", [], "Paddle's ranks without Input (must be empty)"),
    ],
    infer=_infer_coalesce,
    differentiable=False,
    doc="FusedOutput = the Input tensors flattened one after another (each padded to the "
        "alignment; padding zero), filled with 'constant' when set_constant, else copied when "
        "copy_data (else zero: headrace never leaves memory uninitialized).",
)

OPS = [coalesce_tensor]
