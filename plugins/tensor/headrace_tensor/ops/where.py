"""where: Out = X where Condition holds, else Y (Paddle's op: the three shapes are equal; the
layer broadcasts first). Its gradient routes Out@GRAD to X where Condition holds and to Y
elsewhere."""
from headrace.ops import In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq, merge_dim


def _infer_where(ctx):
    cond, x, y = ctx.input("Condition"), ctx.input("X"), ctx.input("Y")
    if cond.dtype is not None and cond.dtype != "bool":
        ctx.fail(f"input 'Condition' ({cond.name}) must be a bool tensor", expected="bool",
                 found=cond.dtype)
    shape = list(x.shape)
    for slot, meta in (("Condition", cond), ("Y", y)):
        if meta.rank != len(shape) or not all(dim_eq(a, b) for a, b in zip(meta.shape, shape)):
            ctx.fail(f"input '{slot}' ({meta.name}) must have the shape of X ({x.name})",
                     expected=f"shape {list(x.shape)}", found=f"shape {list(meta.shape)}")
        shape = [merge_dim(a, b) for a, b in zip(shape, meta.shape)]
    if x.dtype is not None and y.dtype is not None and x.dtype != y.dtype:
        ctx.fail(f"input 'Y' ({y.name}) must have X's dtype", expected=x.dtype, found=y.dtype)
    ctx.set_output("Out", shape, x.dtype, x.lod_level)


where = OpDef(
    "where",
    inputs=[In("Condition", "bool, the shape of X: where to take X", dtypes=("bool",)),
            In("X", "the values where Condition holds"),
            In("Y", "the values elsewhere, the shape and dtype of X")],
    outputs=[Out("Out", "numpy.where(Condition, X, Y)")],
    infer=_infer_where,
    doc="Out = X where Condition holds, else Y (elementwise; equal shapes).",
)

where_grad = grad_of(
    where, uses=["Condition", "X", "Y"], grads=["X", "Y"],
    doc="Gradient of where: X@GRAD = Out@GRAD where Condition holds (else 0), Y@GRAD = "
        "Out@GRAD elsewhere (else 0); X and Y are read for their shapes only.")

OPS = [where, where_grad]
