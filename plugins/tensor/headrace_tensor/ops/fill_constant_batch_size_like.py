"""fill_constant_batch_size_like: a constant whose batch dimension is another tensor's, known
only at run time (the zero initial state of an RNN's memory)."""
from headrace.ops import Attr, In, OpDef, Out

from ._common import dtype_attr, enum_name


def _infer(ctx):
    ref = ctx.input("Input")
    shape = list(ctx.attr("shape"))
    i, o = ctx.attr("input_dim_idx"), ctx.attr("output_dim_idx")
    if not 0 <= o < len(shape):
        ctx.fail("attribute 'output_dim_idx' must name a dim of attribute 'shape'",
                 expected=f"0 <= output_dim_idx < {len(shape)}", found=f"output_dim_idx = {o}")
    if not 0 <= i < len(ref.shape):
        ctx.fail(f"attribute 'input_dim_idx' must name a dim of input 'Input' ({ref.name})",
                 expected=f"0 <= input_dim_idx < {len(ref.shape)}",
                 found=f"input_dim_idx = {i}")
    # Only the batch dim is filled in at run time; any other -1 would fail every run.
    unknown = [k for k, d in enumerate(shape) if d < 0 and k != o]
    if unknown:
        ctx.fail("attribute 'shape' may be unknown (-1) only at output_dim_idx",
                 expected=f"dims >= 0 besides dim {o}", found=f"shape = {shape}")
    # With LoD and input_dim_idx 0 the batch is the number of sequences: unknown until run.
    shape[o] = -1 if (ref.lod_level and i == 0) else ref.shape[i]
    ctx.set_output("Out", shape, enum_name(ctx.attr("dtype")))


fill_constant_batch_size_like = OpDef(
    "fill_constant_batch_size_like",
    inputs=[In("Input", "the tensor whose dim input_dim_idx gives the batch size")],
    outputs=[Out("Out", "the filled tensor")],
    attrs=[
        Attr("shape", "ints", doc="shape of Out; its dim output_dim_idx is replaced"),
        dtype_attr("dtype", "float32", "element type of Out (VarType enum)"),
        Attr("value", "float", 0.0, "the fill value"),
        Attr("str_value", "string", "", "the fill value as text; overrides value when set"),
        Attr("input_dim_idx", "int", 0, "the dim of Input giving the batch size"),
        Attr("output_dim_idx", "int", 0, "the dim of Out that takes it"),
        Attr("force_cpu", "bool", False, "keep Out in host memory"),
    ],
    infer=_infer,
    differentiable=False,
    doc="Out = shape filled with value, Out.shape[output_dim_idx] = Input.shape["
        "input_dim_idx] (with LoD and input_dim_idx 0: Input's number of sequences).",
)

OPS = [fill_constant_batch_size_like]
