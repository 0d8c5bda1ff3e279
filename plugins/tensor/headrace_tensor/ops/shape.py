"""shape: the dims of a tensor at run time, as a 1-D int32 tensor (Paddle's op). It reads only
its input's shape, and has no gradient."""
from headrace.ops import In, OpDef, Out


def _infer_shape(ctx):
    x = ctx.input("Input")
    ctx.set_output("Out", [x.rank], "int32")


shape = OpDef(
    "shape",
    inputs=[In("Input", "the tensor whose shape is read (its data is not)")],
    outputs=[Out("Out", "int32 [rank]: Input's dims", dtypes=("int32",))],
    infer=_infer_shape,
    differentiable=False,
    doc="Out = Input.shape as int32, known when the op runs (so -1 dims of the program are "
        "filled in). No gradient.",
)

OPS = [shape]
