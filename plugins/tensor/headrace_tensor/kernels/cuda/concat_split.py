"""concat and split (and concat_grad) on CUDA. Seen from the axis, a contiguous array is
``outer`` rows of ``dim * inner`` elements; each input of concat fills one run of each output
row, and each piece of split takes one run of each input row. Each run is one launch of the
shared strided copy (one thread per element of the piece, coalesced along the run): O(#pieces)
launches per op, never per row. split returns new arrays (its pieces are separate variables).

Exception to "values stay on the device": AxisTensor / SectionsTensorList are shape metadata,
read on the host as the CPU kernel reads them.
"""
from headrace.kernels.cuda_launch import device_empty
from headrace.kernels.cuda_strided import strided_copy

from ..host.concat_split import split_sizes
from ._common import ALL_DTYPES, GRAD_DTYPES, dense, ints_of_list, norm_axis, one_int, prod


def scatter(a, shape, ax, sizes, wanted):
    """The pieces of ``a`` (dims ``shape``) along ``ax`` with the given sizes, as new device
    arrays; None for a piece whose ``wanted`` entry is false."""
    outer, inner, dim = prod(shape[:ax]), prod(shape[ax + 1:]), shape[ax]
    outs, start = [], 0
    for s, w in zip(sizes, wanted):
        if not w:
            outs.append(None)
        else:
            out = device_empty(shape[:ax] + (s,) + shape[ax + 1:], a.dtype)
            strided_copy(a, out, (outer, s * inner), (dim * inner, 1), (s * inner, 1),
                         src_offset=start * inner)
            outs.append(out)
        start += s
    return outs


def axis_sizes(arrays, ref_shape, ref_dtype, ax, op, ref):
    """Each array's size along ``ax``, after checking that it is a device array of dtype
    ``ref_dtype`` and that its other dims are those of ``ref_shape`` (``ref`` names the
    reference in the errors: X[0] for concat, Out@GRAD for concat_grad)."""
    rank, sizes = len(ref_shape), []
    fits = "which differs from X[0]'s" if ref == "X[0]" else f"which does not fit {ref}'s"
    for i, x in enumerate(arrays):
        a = dense(x, op, f"X[{i}]")
        s = tuple(a.shape)
        if a.dtype != ref_dtype:
            raise TypeError(f"{op}: X[{i}] is {a.dtype} but {ref} is {ref_dtype}")
        if len(s) != rank or s[:ax] != ref_shape[:ax] or s[ax + 1:] != ref_shape[ax + 1:]:
            raise ValueError(f"{op}: X[{i}] has shape {list(s)}, {fits} "
                             f"{list(ref_shape)} outside axis {ax}")
        sizes.append(s[ax])
    return sizes


class Concat:
    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]

    def __call__(self, xs, axis_tensor=None):
        if not isinstance(xs, list) or not xs:
            raise ValueError("concat: X must be a non-empty list of tensors")
        arrays = [dense(x, "concat", f"X[{i}]") for i, x in enumerate(xs)]
        first = arrays[0]
        fshape = tuple(first.shape)
        rank = len(fshape)
        if rank == 0:
            raise ValueError("concat: X[0] is 0-D; concat needs at least one dim")
        axis = one_int(axis_tensor, "concat", "AxisTensor") if axis_tensor is not None \
            else self.axis
        ax = norm_axis(axis, rank, "concat")
        total = sum(axis_sizes(arrays, fshape, first.dtype, ax, "concat", "X[0]"))
        out = device_empty(fshape[:ax] + (total,) + fshape[ax + 1:], first.dtype)
        outer, inner, start = prod(fshape[:ax]), prod(fshape[ax + 1:]), 0
        for a in arrays:
            s = a.shape[ax]
            strided_copy(a, out, (outer, s * inner), (s * inner, 1), (total * inner, 1),
                         dst_offset=start * inner)
            start += s
        return (out,)


class Split:
    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]
        self.num = attrs["num"]
        self.sections = tuple(int(s) for s in attrs["sections"])
        if (self.num > 0) == bool(self.sections) or self.num < 0:
            raise ValueError(f"split: give exactly one of num (> 0) and sections; got "
                             f"num={self.num}, sections={list(self.sections)}")
        self.n_out = info.n_outputs("Out") if info is not None else None

    def __call__(self, x, axis_tensor=None, sections_list=None):
        a = dense(x, "split", "X")
        shape = tuple(a.shape)
        if not shape:
            raise ValueError("split: X is 0-D; split needs at least one dim")
        axis = one_int(axis_tensor, "split", "AxisTensor") if axis_tensor is not None \
            else self.axis
        ax = norm_axis(axis, len(shape), "split")
        sections = self.sections
        if sections_list:
            sections = tuple(ints_of_list(sections_list, "split", "SectionsTensorList"))
        sizes = split_sizes(self.num, shape[ax], sections)
        if self.n_out is not None and len(sizes) != self.n_out:
            raise ValueError(f"split: {len(sizes)} pieces for {self.n_out} output variables")
        return (scatter(a, shape, ax, sizes, [True] * len(sizes)),)


class ConcatGrad:
    """concat_grad: (X, AxisTensor, Out@GRAD) -> (X@GRAD,). X@GRAD[i] = the slice of Out@GRAD
    along axis that X[i] filled; X is read for its shapes only; unwanted entries are None."""

    def __init__(self, attrs, info=None):
        self.axis = attrs["axis"]
        self.wanted = info.wanted("X@GRAD") if info is not None else None

    def __call__(self, xs, axis_tensor, dout):
        op = "concat_grad"
        if not isinstance(xs, list) or not xs:
            raise ValueError(f"{op}: X must be a non-empty list of tensors")
        g = dense(dout, op, "Out@GRAD")
        if str(g.dtype) not in GRAD_DTYPES:
            raise TypeError(f"{op}: Out@GRAD has dtype {g.dtype}; supported: "
                            f"{', '.join(GRAD_DTYPES)}")
        gshape = tuple(g.shape)
        rank = len(gshape)
        if rank == 0:
            raise ValueError(f"{op}: Out@GRAD is 0-D; concat needs at least one dim")
        axis = one_int(axis_tensor, op, "AxisTensor") if axis_tensor is not None else self.axis
        ax = norm_axis(axis, rank, op)
        n = len(xs)
        wanted = [True] * n if self.wanted is None else self.wanted
        if self.wanted is not None and len(wanted) not in (0, n):
            raise ValueError(f"{op}: {len(wanted)} X@GRAD variables for {n} inputs X")
        sizes = axis_sizes(xs, gshape, g.dtype, ax, op, "Out@GRAD")
        total = sum(sizes)
        if total != gshape[ax]:
            raise ValueError(f"{op}: the inputs X hold {total} entries along axis {ax}, "
                             f"but Out@GRAD has {gshape[ax]} (shape {list(gshape)})")
        if not wanted:
            return ([],)
        return (scatter(g, gshape, ax, sizes, list(wanted)),)


KERNELS = [("concat", Concat, ALL_DTYPES), ("split", Split, ALL_DTYPES),
           ("concat_grad", ConcatGrad, GRAD_DTYPES)]
