"""concat and split along one axis; each is the other's gradient."""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import GradOp, grad_of
from headrace.ops.shape import dim_eq, merge_dim, normalize_axis

from ._common import INT_INDEX_DTYPES, expect_one_element


def _non_negative(v):
    return "must be >= 0" if v < 0 else None


def _infer_concat(ctx):
    xs = ctx.inputs("X")
    first = xs[0]
    for x in xs[1:]:
        if x.dtype != first.dtype:
            ctx.fail(f"inputs 'X' must share one dtype; {x.name} differs from {first.name}",
                     expected=first.dtype, found=x.dtype)
        if x.rank != first.rank:
            ctx.fail(f"inputs 'X' must share one rank; {x.name} differs from {first.name}",
                     expected=f"rank {first.rank} (shape {list(first.shape)})",
                     found=f"rank {x.rank} (shape {list(x.shape)})")
    if first.rank == 0:
        ctx.fail(f"input 'X' ({first.name}) is 0-D; concat needs at least one dim",
                 expected="rank >= 1", found="shape []")
    if ctx.has_input("AxisTensor"):
        expect_one_element(ctx, ctx.input("AxisTensor"), "AxisTensor")
        # The axis is known only at run time: every dim may be the concatenated one.
        ctx.set_output("Out", [-1] * first.rank, first.dtype, first.lod_level)
        return
    axis = normalize_axis(ctx, ctx.attr("axis"), first.rank)
    out = list(first.shape)
    for x in xs[1:]:
        for i, d in enumerate(x.shape):
            if i == axis:
                out[i] = out[i] + d if out[i] >= 0 and d >= 0 else -1
            elif not dim_eq(out[i], d):
                ctx.fail(f"inputs 'X' differ in dim {i}, which is not the concat axis {axis}",
                         expected=f"dim {i} = {out[i]} ({first.name} {list(first.shape)})",
                         found=f"{d} ({x.name} {list(x.shape)})")
            else:
                out[i] = merge_dim(out[i], d)
    ctx.set_output("Out", out, first.dtype, first.lod_level)


concat = OpDef(
    "concat",
    inputs=[
        In("X", "the tensors to join; same rank and dtype, same dims except along axis",
           duplicable=True),
        In("AxisTensor", "one-element int tensor holding the axis (overrides 'axis')",
           optional=True, dtypes=INT_INDEX_DTYPES),
    ],
    outputs=[Out("Out", "the joined tensor; Out.dims[axis] = sum of the inputs' dims[axis]")],
    attrs=[Attr("axis", "int", 0, "the axis to join along (negative counts from the end)")],
    infer=_infer_concat,
    doc="Out = the inputs X joined along axis (numpy.concatenate). The gradient of each "
        "input is its slice of Out's gradient.",
)


def _split_sizes(ctx, dim, num, sections, n_out, x):
    """The size of every piece along the split axis (-1 where unknown)."""
    if num > 0:
        if n_out != num:
            ctx.fail("output slot 'Out' must hold 'num' variables",
                     expected=f"{num} variables", found=f"{n_out}")
        if dim >= 0 and dim % num:
            ctx.fail(f"input 'X' ({x.name}) cannot be split equally into {num} pieces",
                     expected=f"a split axis size divisible by num={num}",
                     found=f"size {dim} (shape {list(x.shape)})")
        return [dim // num if dim >= 0 else -1] * num
    if n_out != len(sections):
        ctx.fail("output slot 'Out' must hold one variable per section",
                 expected=f"{len(sections)} variables (sections={sections})", found=f"{n_out}")
    if any(s < -1 for s in sections) or sections.count(-1) > 1:
        ctx.fail("attribute 'sections' holds sizes >= 0 and at most one -1",
                 expected="sizes >= 0, one -1 at most", found=f"sections={sections}")
    if ctx.has_input("SectionsTensorList"):
        # Tensors decide at run time; Paddle writes -1 for those and the constants here.
        return [s if s >= 0 else -1 for s in sections]
    known = sum(s for s in sections if s >= 0)
    if dim < 0:
        return list(sections)
    if -1 in sections:
        if known > dim:
            ctx.fail(f"attribute 'sections' asks for more than input 'X' ({x.name}) holds",
                     expected=f"known sections summing to at most {dim}",
                     found=f"sections={sections} (sum {known})")
        return [s if s >= 0 else dim - known for s in sections]
    if known != dim:
        ctx.fail(f"attribute 'sections' must sum to the split axis size of input 'X' ({x.name})",
                 expected=f"sum {dim} (shape {list(x.shape)})",
                 found=f"sections={sections} (sum {known})")
    return list(sections)


def _infer_split(ctx):
    x = ctx.input("X")
    num, sections = ctx.attr("num"), list(ctx.attr("sections"))
    if (num > 0) == bool(sections):
        ctx.fail("give exactly one of 'num' (equal pieces) and 'sections' (piece sizes)",
                 expected="num > 0 or sections non-empty, not both",
                 found=f"num={num}, sections={sections}")
    if x.rank == 0:
        ctx.fail(f"input 'X' ({x.name}) is 0-D; split needs at least one dim",
                 expected="rank >= 1", found="shape []")
    if ctx.has_input("SectionsTensorList"):
        metas = ctx.inputs("SectionsTensorList")
        for m in metas:
            expect_one_element(ctx, m, "SectionsTensorList")
        n_tensors = len(metas)
        if n_tensors != len(sections):
            ctx.fail("input 'SectionsTensorList' must hold one tensor per section",
                     expected=f"{len(sections)} tensors", found=f"{n_tensors}")
    n_out = ctx.num_outputs("Out")
    if ctx.has_input("AxisTensor"):
        expect_one_element(ctx, ctx.input("AxisTensor"), "AxisTensor")
        _split_sizes(ctx, -1, num, sections, n_out, x)  # checks the counts only
        for i in range(n_out):
            ctx.set_output("Out", [-1] * x.rank, x.dtype, x.lod_level, index=i)
        return
    axis = normalize_axis(ctx, ctx.attr("axis"), x.rank)
    sizes = _split_sizes(ctx, x.shape[axis], num, sections, n_out, x)
    # Paddle keeps X's LoD on the pieces only when rows are not split.
    lod_level = x.lod_level if axis != 0 else 0
    for i, size in enumerate(sizes):
        out = list(x.shape)
        out[axis] = size
        ctx.set_output("Out", out, x.dtype, lod_level, index=i)


split = OpDef(
    "split",
    inputs=[
        In("X", "the tensor to split"),
        In("AxisTensor", "one-element int tensor holding the axis (overrides 'axis')",
           optional=True, dtypes=INT_INDEX_DTYPES),
        In("SectionsTensorList", "one-element int tensors giving the section sizes "
           "(override 'sections')", optional=True, duplicable=True, dtypes=INT_INDEX_DTYPES),
    ],
    outputs=[Out("Out", "the pieces, in order", duplicable=True)],
    attrs=[
        Attr("axis", "int", 0, "the axis to split (negative counts from the end)"),
        Attr("num", "int", 0, "number of equal pieces (0: use sections)", check=_non_negative),
        Attr("sections", "ints", [], "size of each piece; one -1 takes the rest"),
    ],
    infer=_infer_split,
    doc="Out = the pieces of X along axis: num equal pieces, or pieces of the sizes in "
        "sections. The gradient is concat of the pieces' gradients.",
)


def _infer_concat_grad(ctx):
    # X@GRAD[i] takes the shape of X[i] (X is read for its shapes only), the dtype and LoD
    # level of X[i]; Out@GRAD must look like Out: X's rank and dtype.
    xs, dout = ctx.inputs("X"), ctx.input("Out@GRAD")
    if ctx.has_input("AxisTensor"):
        expect_one_element(ctx, ctx.input("AxisTensor"), "AxisTensor")
    n = ctx.num_outputs("X@GRAD")
    if n and n != len(xs):
        ctx.fail("output slot 'X@GRAD' must hold one variable per input 'X' (@EMPTY@ where a "
                 "gradient is not wanted)", expected=f"{len(xs)} variables", found=f"{n}")
    for i, x in enumerate(xs):
        if dout.rank != x.rank:
            ctx.fail(f"input 'Out@GRAD' ({dout.name}) must have the rank of the inputs 'X'",
                     expected=f"rank {x.rank} ({x.name} {list(x.shape)})",
                     found=f"rank {dout.rank} (shape {list(dout.shape)})")
        if x.dtype is not None and dout.dtype is not None and x.dtype != dout.dtype:
            ctx.fail(f"input 'Out@GRAD' ({dout.name}) must have the dtype of the inputs 'X'",
                     expected=f"{x.dtype} ({x.name})", found=dout.dtype)
        if i < n:
            ctx.set_output_like("X@GRAD", x, index=i)


# concat_grad(X, AxisTensor, Out@GRAD) -> X@GRAD (Paddle's): each X@GRAD[i] is the slice of
# Out@GRAD that X[i] filled. X is read for its shapes at run time, which a split with sections
# fixed when the program is built could not do when a dim is unknown (-1) then.
concat_grad = grad_of(
    concat, uses=["X", "AxisTensor"], grads=["X"], infer=_infer_concat_grad,
    doc="Gradient of concat: X@GRAD[i] = the slice of Out@GRAD along axis that X[i] filled "
        "(X is read for its shapes only); @EMPTY@ entries are skipped.")


def _split_grad(ctx):
    # The pieces tile X along axis, so X@GRAD is the pieces' gradients joined again: a concat
    # (gradients of pieces that do not reach the loss are zero-filled by the backward pass).
    if not ctx.wants("X"):
        return []
    ins = {"X": ctx.output_grad("Out")}
    if ctx.input("AxisTensor"):
        ins["AxisTensor"] = ctx.input("AxisTensor")
    return [GradOp("concat", ins, {"Out": ctx.input_grad("X")}, {"axis": ctx.attrs["axis"]})]


split.grad = _split_grad

OPS = [concat, split, concat_grad]
