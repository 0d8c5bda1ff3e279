"""slice and strided_slice: a box of Input cut out along some axes (Paddle's ops).

slice takes ``Input[starts[i]:ends[i]]`` along each ``axes[i]``; strided_slice adds a stride
(negative: backwards). Negative starts and ends count from the end and are clamped to the dim,
as Paddle does; a range that runs the wrong way (end before start for a positive step) is an
error, as in Paddle, not an empty slice. strided_slice keeps Paddle's reading of ``end = -1``
with a negative stride: up to and including element 0 (Python's ``x[s::-k]``).
``decrease_axis`` drops sliced axes of size 1 (``x[2]`` rather than ``x[2:3]``); dropping every
axis gives a 0-D tensor, as in Paddle 3.

starts/ends/strides may come from tensors at run time (one 1-D ``*Tensor``, or a list of
one-element ``*TensorList`` tensors; the former wins), and then the sliced dims are unknown
(-1) when the program is built, as are those whose ``infer_flags`` entry is -1.

The gradients (slice_grad, strided_slice_grad) put Out@GRAD back into zeros of Input's shape;
Input is read for its shape.
"""
from headrace.ops import Attr, In, OpDef, Out
from headrace.ops.grad import grad_of

from ._common import INT_INDEX_DTYPES, expect_one_element

_PARTS = ("starts", "ends", "strides")


def _tensor_inputs(parts):
    out = []
    for p in parts:
        name = p[0].upper() + p[1:]
        out.append(In(f"{name}Tensor", f"1-D int tensor holding '{p}' (overrides '{p}' and "
                      f"{name}TensorList)", optional=True, dtypes=INT_INDEX_DTYPES))
    for p in parts:
        name = p[0].upper() + p[1:]
        out.append(In(f"{name}TensorList", f"one-element int tensors, one per axis, holding "
                      f"'{p}' (overrides '{p}')", optional=True, duplicable=True,
                      dtypes=INT_INDEX_DTYPES))
    return out


def _slice_attrs(with_strides):
    attrs = [Attr("axes", "ints", doc="the axes to slice (negative: from the end)"),
             Attr("starts", "ints", [], "first index per axis (negative: from the end)"),
             Attr("ends", "ints", [], "end index (exclusive) per axis (negative: from the "
                  "end; clamped to the dim)")]
    if with_strides:
        attrs.append(Attr("strides", "ints", [], "step per axis (not 0; negative: "
                          "backwards)"))
    attrs += [Attr("infer_flags", "ints", [], "per axis, -1 where the slice is known only at "
                   "run time (its dim is -1 when the program is built)"),
              Attr("decrease_axis", "ints", [], "sliced axes of size 1 to drop from Out")]
    return attrs


def _from_tensors(ctx, part):
    """How many values of ``part`` a tensor input gives (-1 unknown), None without one."""
    name = part[0].upper() + part[1:]
    if ctx.has_input(f"{name}Tensor"):
        t = ctx.input(f"{name}Tensor")
        if t.rank != 1:
            ctx.fail(f"input '{name}Tensor' ({t.name}) must be 1-D", expected="rank 1",
                     found=f"shape {list(t.shape)}")
        return t.shape[0]
    if ctx.has_input(f"{name}TensorList"):
        metas = ctx.inputs(f"{name}TensorList")
        for m in metas:
            expect_one_element(ctx, m, f"{name}TensorList")
        return len(metas)
    return None


def _axes(ctx, rank):
    axes = list(ctx.attr("axes"))
    out = []
    for a in axes:
        if not -rank <= a < rank:
            ctx.fail(f"attribute 'axes' names a dim Input does not have (rank {rank})",
                     expected=f"axes in [{-rank}, {rank - 1}]", found=f"axes={axes}")
        out.append(a + rank if a < 0 else a)
    if len(set(out)) != len(out):
        ctx.fail("attribute 'axes' names a dim twice", expected="distinct axes",
                 found=f"axes={axes}")
    return out


def slice_count(n, start, end, step):
    """Paddle's normalization of one axis of size ``n`` (known): the number of elements taken,
    or a message saying why the range is refused."""
    if step == 0:
        return None, "a stride of 0"
    if n == 0:
        return 0, None
    start = max(start + n if start < 0 else start, 0)
    if step > 0:
        if end < 0:
            end += n
        start, end = min(start, n), min(max(end, 0), n)
        if end < start:
            return None, f"end {end} before start {start} (after counting negatives from " \
                         f"the end and clamping to {n}) for a positive step"
        return (end - start + step - 1) // step, None
    # (an end of -1 stays -1: through element 0)
    start, end = min(start, n - 1), min(end, n)
    if end < -1:
        end += n
    end = max(end, -1)
    if start < end:
        return None, f"start {start} before end {end} (after counting negatives from the " \
                     f"end and clamping to {n}) for a negative step"
    return (start - end - step - 1) // -step, None


def _infer_slice(ctx, with_strides):
    x = ctx.input("Input")
    axes = _axes(ctx, x.rank)
    given = {}
    for part in _PARTS if with_strides else _PARTS[:2]:
        n_t = _from_tensors(ctx, part)
        values = list(ctx.attr(part))
        if n_t is None:
            if len(values) != len(axes):
                ctx.fail(f"attribute '{part}' must hold one value per entry of 'axes'",
                         expected=f"{len(axes)} values", found=f"{part}={values}")
            given[part] = values
        elif n_t >= 0 and n_t != len(axes):
            ctx.fail(f"the tensor input for '{part}' must hold one value per entry of 'axes'",
                     expected=f"{len(axes)} values", found=f"{n_t}")
    flags = list(ctx.attr("infer_flags"))
    if flags and len(flags) != len(axes):
        ctx.fail("attribute 'infer_flags' must be empty or hold one flag per entry of 'axes'",
                 expected=f"{len(axes)} flags", found=f"infer_flags={flags}")
    decrease = list(ctx.attr("decrease_axis"))
    dec = set()
    for d in decrease:
        if not -x.rank <= d < x.rank:
            ctx.fail(f"attribute 'decrease_axis' names a dim Input does not have (rank "
                     f"{x.rank})", expected=f"axes in [{-x.rank}, {x.rank - 1}]",
                     found=f"decrease_axis={decrease}")
        dec.add(d % x.rank)
    shape = list(x.shape)
    known = len(given) == (3 if with_strides else 2)
    for i, a in enumerate(axes):
        n = x.shape[a]
        if not known or (flags and flags[i] == -1):
            shape[a] = -1
            continue
        step = given["strides"][i] if with_strides else 1
        if step == 0:
            ctx.fail("attribute 'strides' holds a 0", expected="non-zero strides",
                     found=f"strides={given['strides']}")
        if n < 0:
            continue
        count, why = slice_count(n, given["starts"][i], given["ends"][i], step)
        if why is not None:
            ctx.fail(f"attributes 'starts'/'ends' give an invalid range along axis {a} of "
                     f"Input ({x.name}, shape {list(x.shape)}): {why}",
                     expected="end >= start for a positive step, start >= end for a "
                              "negative one",
                     found=f"starts={given['starts']}, ends={given['ends']}")
        shape[a] = count
    for a in sorted(dec):
        if shape[a] not in (1, -1):
            ctx.fail(f"attribute 'decrease_axis' drops axis {a}, whose slice has {shape[a]} "
                     f"elements", expected="decreased axes of size 1",
                     found=f"decrease_axis={decrease}, sliced shape {shape}")
    out = [d for k, d in enumerate(shape) if k not in dec]
    lod_level = x.lod_level if 0 not in axes else 0
    ctx.set_output("Out", out, x.dtype, lod_level)


slice = OpDef(  # (Paddle's op name; the builtin is not used here)
    "slice",
    inputs=[In("Input", "the tensor to slice")] + _tensor_inputs(_PARTS[:2]),
    outputs=[Out("Out", "the slice")],
    attrs=_slice_attrs(False),
    infer=lambda ctx: _infer_slice(ctx, False),
    doc="Out = Input[starts[i]:ends[i]] along each axes[i] (negative indices count from the "
        "end, and are clamped to the dim; an end before its start is an error), with the "
        "decrease_axis axes dropped. The gradient is slice_grad.",
)

strided_slice = OpDef(
    "strided_slice",
    inputs=[In("Input", "the tensor to slice")] + _tensor_inputs(_PARTS),
    outputs=[Out("Out", "the slice")],
    attrs=_slice_attrs(True),
    infer=lambda ctx: _infer_slice(ctx, True),
    doc="Out = Input[starts[i]:ends[i]:strides[i]] along each axes[i]; negative starts and "
        "ends count from the end, and with a negative stride an end of -1 means 'through "
        "element 0'. A range that runs against its stride is an error. decrease_axis drops "
        "axes of size 1. The gradient is strided_slice_grad.",
)


def _infer_slice_grad(ctx):
    x, dout = ctx.input("Input"), ctx.input("Out@GRAD")
    if x.dtype is not None and dout.dtype is not None and x.dtype != dout.dtype:
        ctx.fail(f"input 'Out@GRAD' ({dout.name}) must have the dtype of Input ({x.name})",
                 expected=x.dtype, found=dout.dtype)
    ctx.set_output("Input@GRAD", x.shape, x.dtype, x.lod_level)


_GRAD_DOC = ("Gradient of {op}: Input@GRAD = zeros of Input's shape with Out@GRAD written "
             "where the slice was taken (Input is read for its shape).")
# <op>_grad(Input, the start/end(/stride) tensors, Out@GRAD) -> Input@GRAD (Paddle's slots).
slice_grad = grad_of(slice, uses=["Input", "StartsTensor", "EndsTensor", "StartsTensorList",
                                  "EndsTensorList"], grads=["Input"], infer=_infer_slice_grad,
                     doc=_GRAD_DOC.format(op="slice"))
strided_slice_grad = grad_of(
    strided_slice, uses=["Input", "StartsTensor", "EndsTensor", "StridesTensor",
                         "StartsTensorList", "EndsTensorList", "StridesTensorList"],
    grads=["Input"], infer=_infer_slice_grad, doc=_GRAD_DOC.format(op="strided_slice"))

OPS = [slice, strided_slice, slice_grad, strided_slice_grad]
