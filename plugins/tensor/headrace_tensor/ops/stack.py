"""stack: tensors of one shape joined along a new axis (the inverse of unstack). Its gradient,
stack_grad, cuts Y@GRAD back into the inputs' gradients, as unstack does."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of
from headrace.ops.shape import dim_eq, merge_dim


def _infer_stack(ctx):
    xs = ctx.inputs("X")
    if not xs:
        ctx.fail("input 'X' must hold at least one tensor", expected=">= 1 variables",
                 found="0")
    rank = xs[0].rank
    axis = ctx.attr("axis")
    if not -rank - 1 <= axis <= rank:
        ctx.fail(f"attribute 'axis' must name a dim of Y (rank {rank + 1})",
                 expected=f"{-rank - 1} <= axis <= {rank}", found=f"axis = {axis}")
    axis = axis + rank + 1 if axis < 0 else axis
    shape = list(xs[0].shape)
    for x in xs[1:]:
        if x.rank != rank or not all(dim_eq(a, b) for a, b in zip(x.shape, shape)):
            ctx.fail(f"the inputs 'X' must have one shape, but {x.name} has another",
                     expected=f"shape {shape} (as {xs[0].name})", found=f"{list(x.shape)}")
        if x.dtype is not None and xs[0].dtype is not None and x.dtype != xs[0].dtype:
            ctx.fail(f"the inputs 'X' must have one dtype, but {x.name} has another",
                     expected=xs[0].dtype, found=x.dtype)
        shape = [merge_dim(a, b) for a, b in zip(shape, x.shape)]
    shape.insert(axis, len(xs))
    ctx.set_output("Y", shape, xs[0].dtype)


stack = OpDef(
    "stack",
    inputs=[In("X", "the tensors to stack, all of one shape and dtype", duplicable=True)],
    outputs=[Out("Y", "their stack: X's shape with len(X) inserted at axis")],
    attrs=[Attr("axis", "int", 0, "where the new dim goes in Y (negative: from the end of "
                "Y's dims)")],
    infer=_infer_stack,
    doc="Y = numpy.stack(X, axis). The gradient is stack_grad, which cuts Y@GRAD into the "
        "inputs' gradients.",
)


def _infer_stack_grad(ctx):
    dy = ctx.input("Y@GRAD")
    if dy.rank == 0:
        ctx.fail(f"input 'Y@GRAD' ({dy.name}) must have the new axis", expected="rank >= 1",
                 found="shape []")
    axis = ctx.attr("axis")
    if not -dy.rank <= axis < dy.rank:
        ctx.fail(f"attribute 'axis' must name a dim of Y@GRAD (rank {dy.rank})",
                 expected=f"{-dy.rank} <= axis < {dy.rank}", found=f"axis = {axis}")
    axis %= dy.rank
    n = ctx.num_outputs("X@GRAD")
    if n and dy.shape[axis] >= 0 and n != dy.shape[axis]:
        ctx.fail(f"output 'X@GRAD' must hold one variable per slice of Y@GRAD along axis {axis}",
                 expected=f"{dy.shape[axis]} variables (@EMPTY@ where none is wanted)",
                 found=f"{n}")
    shape = [d for k, d in enumerate(dy.shape) if k != axis]
    for i in range(n):
        ctx.set_output("X@GRAD", shape, dy.dtype, index=i)


# stack_grad(Y@GRAD) -> X@GRAD (Paddle's): the slices of Y@GRAD along axis.
stack_grad = grad_of(stack, uses=[], grads=["X"], infer=_infer_stack_grad,
                     doc="Gradient of stack: X@GRAD[i] = Y@GRAD[..., i, ...] along axis "
                         "(numpy.take); @EMPTY@ entries are skipped.")

OPS = [stack, stack_grad]
