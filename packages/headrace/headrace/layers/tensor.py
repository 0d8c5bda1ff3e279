"""Tensor layers: constants, copies, global variables, parameters, casts and shape changes."""
import numpy as np

from .. import dtypes
from ..checks import check_bool, check_int, check_number, check_variable
from ..errors import LayerError
from ..framework import Variable
from ..framework.builder import dtype_enum
from ..initializer import _VALUE_ATTRS, Constant
from ..layer_helper import LayerHelper
from ..param_attr import ParamAttr
from .manip import shape_argument

__all__ = ["fill_constant", "fill_constant_batch_size_like", "zeros", "ones", "zeros_like",
           "assign", "sums", "create_tensor",
           "create_parameter", "create_global_var", "cast", "concat", "reshape", "transpose",
           "split", "unstack", "stack", "shape", "squeeze", "unsqueeze", "slice",
           "strided_slice",
           "gather", "gather_nd", "scatter", "where", "argmax", "argmin", "one_hot"]


def _err(fn, message):
    return LayerError(f"{fn}: {message}")


def _shape(fn, shape, allow_unknown=False):
    if not isinstance(shape, (list, tuple)):
        raise _err(fn, f"argument 'shape' must be a list of ints, got {shape!r}")
    out = []
    for d in shape:
        d = check_int(fn, "shape", d, minimum=-1 if allow_unknown else 0)
        out.append(d)
    return out


def _dtype(fn, dtype):
    try:
        return dtypes.canonical(dtype)
    except Exception:
        raise _err(fn, f"argument 'dtype' is not a dtype: {dtype!r}; valid: "
                       f"{', '.join(dtypes.DTYPES)}") from None


def fill_constant(shape, dtype, value, force_cpu=False, out=None):
    """A tensor of ``shape`` and ``dtype`` filled with ``value`` (``fill_constant``).
    ``shape``: ints, a 1-D int Variable, or a list mixing ints and one-element int Variables
    (known at run time); ``value``: a number, or a one-element Variable (cast to ``dtype``)."""
    helper = LayerHelper("fill_constant")
    inputs = {}
    shape = shape_argument("fill_constant", shape, inputs, "ShapeTensor", "ShapeTensorList")
    dtype = _dtype("fill_constant", dtype)
    if isinstance(value, Variable):
        inputs["ValueTensor"] = value if value.dtype == dtype else cast(value, dtype)
        value = 0.0
    else:
        value = check_number("fill_constant", "value", value)
    if out is None:
        out = helper.create_variable_for_type_inference(dtype)
    else:
        check_variable("fill_constant", "out", out)
    helper.append_op("fill_constant", inputs, {"Out": out},
                     {"shape": shape, "dtype": dtype_enum(dtype), "value": value,
                      "force_cpu": check_bool("fill_constant", "force_cpu", force_cpu)})
    out.stop_gradient = True
    return out


def fill_constant_batch_size_like(input, shape, dtype, value, input_dim_idx=0,
                                  output_dim_idx=0, force_cpu=False):
    """``shape`` filled with ``value``, whose dim ``output_dim_idx`` is ``input``'s dim
    ``input_dim_idx`` at run time (the number of sequences when ``input`` has LoD and the dim
    is 0): an RNN's zero initial state for any batch size."""
    fn = "fill_constant_batch_size_like"
    helper = LayerHelper(fn)
    check_variable(fn, "input", input)
    shape = _shape(fn, shape, allow_unknown=True)
    dtype = _dtype(fn, dtype)
    number = check_number(fn, "value", value)
    # As Paddle's layer: the value also goes as text, which the kernel prefers, so that an
    # int64 beyond 2**53 and a float64 such as 0.1 arrive exactly (the 'value' attribute is a
    # float32).
    if dtype == "bool" or dtype.startswith(("int", "uint")):
        if not np.isfinite(number):
            raise _err(fn, f"argument 'value' {number} cannot be stored in {dtype}")
        text = str(int(value))
    else:
        text = repr(number)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(fn, {"Input": input}, {"Out": out},
                     {"shape": shape, "dtype": dtype_enum(dtype), "value": number,
                      "str_value": text,
                      "input_dim_idx": check_int(fn, "input_dim_idx", input_dim_idx, minimum=0),
                      "output_dim_idx": check_int(fn, "output_dim_idx", output_dim_idx,
                                                  minimum=0),
                      "force_cpu": bool(force_cpu)})
    return out


def zeros(shape, dtype, force_cpu=False):
    """A tensor of zeros."""
    return fill_constant(shape, dtype, 0.0, force_cpu)


def ones(shape, dtype, force_cpu=False):
    """A tensor of ones."""
    return fill_constant(shape, dtype, 1.0, force_cpu)


def zeros_like(x, out=None):
    """Zeros shaped like ``x`` (``fill_zeros_like``)."""
    helper = LayerHelper("zeros_like")
    check_variable("zeros_like", "x", x)
    out = out if out is not None else helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("fill_zeros_like", {"X": x}, {"Out": out})
    out.stop_gradient = True
    return out


def assign(input, output=None):
    """Copy ``input`` (a Variable: ``assign``; a NumPy array or Python data: ``assign_value``)
    into ``output`` (a new variable by default)."""
    helper = LayerHelper("assign")
    if output is not None:
        check_variable("assign", "output", output)
    if isinstance(input, Variable):
        if output is None:
            output = helper.create_variable_for_type_inference(input.dtype)
        helper.append_op("assign", {"X": input}, {"Out": output})
        return output
    try:
        value = np.asarray(input)
    except Exception:
        value = None
    if value is None or value.dtype.kind not in "biuf" or value.size == 0:
        raise _err("assign", f"argument 'input' must be a Variable or non-empty numeric "
                             f"data, got {type(input).__name__}")
    if value.dtype == np.float64 and not isinstance(input, np.ndarray):
        value = value.astype(np.float32)  # Python floats: float32, as in Fluid
    dtype = dtypes.canonical(value.dtype)
    attr = _VALUE_ATTRS.get(dtype)
    if attr is None:
        raise _err("assign", f"arrays of dtype {dtype} are not supported; valid: "
                             f"{', '.join(_VALUE_ATTRS)}")
    if output is None:
        output = helper.create_variable_for_type_inference(dtype)
    helper.append_op("assign_value", {}, {"Out": output},
                     {"shape": list(value.shape), "dtype": dtype_enum(dtype),
                      attr: value.ravel().tolist()})
    return output


def sums(input, out=None):
    """The elementwise sum of a list of Variables (``sum``)."""
    helper = LayerHelper("sums", input=input)
    inputs = helper.multiple_input()
    out = out if out is not None else helper.create_variable_for_type_inference(inputs[0].dtype)
    helper.append_op("sum", {"X": inputs}, {"Out": out})
    return out


def create_tensor(dtype, name=None, persistable=False):
    """An empty variable of the current block, to be written by a later op."""
    helper = LayerHelper("create_tensor", name=name)
    return helper.create_variable(name=helper.name, dtype=_dtype("create_tensor", dtype),
                                  persistable=persistable)


def create_parameter(shape, dtype, name=None, attr=None, is_bias=False,
                     default_initializer=None):
    """A parameter (main program) with its initializer op (startup program)."""
    helper = LayerHelper("create_parameter", name=name)
    shape = _shape("create_parameter", shape)
    if attr is None:
        attr = ParamAttr(name=name)
    return helper.create_parameter(attr, shape, _dtype("create_parameter", dtype), is_bias,
                                   default_initializer)


def create_global_var(shape, value, dtype, persistable=True, force_cpu=False, name=None):
    """A global variable of the main program (``global_var_N``), filled with ``value`` by the
    startup program.

    ``persistable`` defaults to True (Fluid's default is False): the executor keeps only
    persistable values between runs, so a non-persistable variable filled by the startup
    program would be gone when the main program runs.
    """
    helper = LayerHelper("global_var", name=name)
    shape = _shape("create_global_var", shape)
    if name is None:
        name = helper.name
        if name in helper.main_program.global_block().vars:
            name = helper.main_program._unique_var_name(name)
    var = helper.create_global_variable(name=name, shape=shape,
                                        dtype=_dtype("create_global_var", dtype),
                                        persistable=persistable, stop_gradient=True)
    helper.set_variable_initializer(var, Constant(check_number("create_global_var", "value",
                                                               value), force_cpu))
    return var


def cast(x, dtype):
    """``x`` converted to ``dtype`` (``cast``)."""
    helper = LayerHelper("cast")
    check_variable("cast", "x", x)
    dtype = _dtype("cast", dtype)
    out = helper.create_variable_for_type_inference(dtype)
    helper.append_op("cast", {"X": x}, {"Out": out},
                     {"in_dtype": dtype_enum(x.dtype), "out_dtype": dtype_enum(dtype)})
    return out


def concat(input, axis=0, name=None):
    """The Variables of ``input`` joined along ``axis`` (``concat``)."""
    helper = LayerHelper("concat", input=input, name=name)
    inputs = helper.multiple_input()
    axis = check_int("concat", "axis", axis)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op("concat", {"X": inputs}, {"Out": out}, {"axis": axis})
    return out


def reshape(x, shape, actual_shape=None, act=None, inplace=False, name=None):
    """``x`` with a new shape (``reshape2``): 0 copies x's dim at that index, one -1 is
    inferred. ``actual_shape`` (an int32 Variable) overrides ``shape`` at run time."""
    helper = LayerHelper("reshape2", act=act, name=name)
    check_variable("reshape", "x", x)
    shape = _shape("reshape", shape, allow_unknown=True)
    if shape.count(-1) > 1:
        raise _err("reshape", f"argument 'shape' may hold one -1 only, got {shape}")
    for i, d in enumerate(shape):
        if d == 0 and i >= len(x.shape):
            raise _err("reshape", f"argument 'shape' has 0 at index {i}, but x has only "
                                  f"{len(x.shape)} dims to copy from")
    inputs = {"X": x}
    if actual_shape is not None:
        inputs["Shape"] = check_variable("reshape", "actual_shape", actual_shape)
    out = helper.create_variable_for_type_inference(x.dtype)
    xshape = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op("reshape2", inputs, {"Out": out, "XShape": xshape}, {"shape": shape})
    return helper.append_activation(out)


def transpose(x, perm, name=None):
    """``x`` with its dims permuted by ``perm`` (``transpose2``)."""
    helper = LayerHelper("transpose", name=name)
    check_variable("transpose", "x", x)
    if not isinstance(perm, (list, tuple)) or \
            sorted(check_int("transpose", "perm", p) for p in perm) != list(range(len(x.shape))):
        raise _err("transpose", f"argument 'perm' must be a permutation of "
                                f"{list(range(len(x.shape)))} (x has {len(x.shape)} "
                                f"dims), got {perm!r}")
    out = helper.create_variable_for_type_inference(x.dtype)
    xshape = helper.create_variable_for_type_inference(x.dtype, stop_gradient=True)
    helper.append_op("transpose2", {"X": x}, {"Out": out, "XShape": xshape},
                     {"axis": [int(p) for p in perm]})
    return out


def split(input, num_or_sections, dim=-1, name=None):
    """``input`` cut along ``dim`` into ``num_or_sections`` equal pieces (an int) or pieces of
    the listed sizes (one may be -1). Returns a list of Variables."""
    helper = LayerHelper("split", name=name)
    check_variable("split", "input", input)
    rank = len(input.shape)
    dim = check_int("split", "dim", dim, minimum=-rank, maximum=rank - 1)
    dim = dim + rank if dim < 0 else dim
    if isinstance(num_or_sections, (list, tuple)):
        sections = [check_int("split", "num_or_sections", s, minimum=-1)
                    for s in num_or_sections]
        if not sections or sections.count(-1) > 1:
            raise _err("split", f"argument 'num_or_sections' must list piece sizes with "
                                f"at most one -1, got {num_or_sections!r}")
        num, n = 0, len(sections)
    else:
        num = check_int("split", "num_or_sections", num_or_sections, minimum=1)
        sections, n = [], num
    outs = [helper.create_variable_for_type_inference(input.dtype) for _ in range(n)]
    helper.append_op("split", {"X": input}, {"Out": outs},
                     {"num": num, "sections": sections, "axis": dim})
    return outs


def unstack(x, axis=0, num=None):
    """The slices of ``x`` along ``axis``, that axis removed (``unstack``): a list of
    ``num`` Variables (default: x's size along axis, which must then be known)."""
    helper = LayerHelper("unstack")
    check_variable("unstack", "x", x)
    rank = len(x.shape)
    axis = check_int("unstack", "axis", axis, minimum=-rank, maximum=rank - 1)
    size = x.shape[axis]
    num = size if num is None else check_int("unstack", "num", num, minimum=1)
    if num is None or num < 0:
        raise _err("unstack", f"x's size along axis {axis} is unknown ({list(x.shape)}): "
                              f"give num")
    outs = [helper.create_variable_for_type_inference(x.dtype) for _ in range(num)]
    helper.append_op("unstack", {"X": x}, {"Y": outs}, {"axis": axis, "num": num})
    return outs


def stack(x, axis=0, name=None):
    """The Variables of ``x`` (one shape) joined along a new dim ``axis`` (``stack``)."""
    helper = LayerHelper("stack", input=x, name=name)
    xs = helper.multiple_input()
    rank = len(xs[0].shape)
    axis = check_int("stack", "axis", axis, minimum=-rank - 1, maximum=rank)
    out = helper.create_variable_for_type_inference(helper.input_dtype())
    helper.append_op("stack", {"X": xs}, {"Y": out}, {"axis": axis})
    return out


def shape(input):
    """The shape of ``input`` at run time, as a 1-D int32 Variable (``shape``)."""
    helper = LayerHelper("shape")
    check_variable("shape", "input", input)
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("shape", {"Input": input}, {"Out": out}, {})
    return out


def _axes_of(fn, input, axes, extra=0):
    rank = len(input.shape) + extra
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        axes = [axes]
    if not isinstance(axes, (list, tuple)):
        raise _err(fn, f"argument 'axes' must be an int or a list of ints, got {axes!r}")
    return [check_int(fn, "axes", a, minimum=-rank, maximum=rank - 1) for a in axes]


def squeeze(input, axes, name=None):
    """``input`` with the listed dims of size 1 removed (all dims of size 1 for ``axes=[]``;
    a listed dim of another size stays, as in Paddle) (``squeeze2``)."""
    helper = LayerHelper("squeeze", name=name)
    check_variable("squeeze", "input", input)
    axes = _axes_of("squeeze", input, axes)
    out = helper.create_variable_for_type_inference(input.dtype)
    xshape = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op("squeeze2", {"X": input}, {"Out": out, "XShape": xshape}, {"axes": axes})
    return out


def unsqueeze(input, axes, name=None):
    """``input`` with dims of size 1 inserted at ``axes``, one after the other, each counted in
    the rank reached so far (``unsqueeze2``). ``axes`` may be an int Variable (1-D)."""
    helper = LayerHelper("unsqueeze", name=name)
    check_variable("unsqueeze", "input", input)
    inputs, attrs = {"X": input}, {"axes": []}
    if isinstance(axes, Variable):
        inputs["AxesTensor"] = _int_var("unsqueeze", "axes", axes)
    else:
        axes = _axes_of("unsqueeze", input, axes, extra=1)
        attrs["axes"] = axes
    out = helper.create_variable_for_type_inference(input.dtype)
    xshape = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op("unsqueeze2", inputs, {"Out": out, "XShape": xshape}, attrs)
    return out


def _slice_part(fn, arg, value, n, inputs, slot, flags):
    """The attribute value of starts/ends/strides: ints as given; an int Variable goes to
    ``<slot>Tensor``, a list holding Variables to ``<slot>TensorList`` (its ints as
    fill_constant), and their entries are -1 in the attribute and in ``flags``."""
    if isinstance(value, Variable):
        inputs[f"{slot}Tensor"] = _int_var(fn, arg, value)
        flags[:] = [-1] * n
        return [-1] * n
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise _err(fn, f"argument '{arg}' must be a list of {n} ints or int Variables (one per "
                       f"axis), or a 1-D int Variable, got {value!r}")
    if not any(isinstance(v, Variable) for v in value):
        return [check_int(fn, arg, v) for v in value]
    inputs[f"{slot}TensorList"] = [
        _int_var(fn, arg, v) if isinstance(v, Variable) else
        fill_constant([1], "int64", check_int(fn, arg, v)) for v in value]
    for i, v in enumerate(value):
        flags[i] = -1 if isinstance(v, Variable) else flags[i]
    return [-1 if isinstance(v, Variable) else int(v) for v in value]


def _slice(op, input, axes, starts, ends, strides):
    helper = LayerHelper(op)
    check_variable(op, "input", input)
    if not isinstance(axes, (list, tuple)):
        raise _err(op, f"argument 'axes' must be a list of ints, got {axes!r}")
    rank = len(input.shape)
    axes = [check_int(op, "axes", a, minimum=-rank, maximum=rank - 1) for a in axes]
    inputs, flags = {"Input": input}, [1] * len(axes)
    attrs = {"axes": axes, "decrease_axis": [],
             "starts": _slice_part(op, "starts", starts, len(axes), inputs, "Starts", flags),
             "ends": _slice_part(op, "ends", ends, len(axes), inputs, "Ends", flags)}
    if strides is not None:
        attrs["strides"] = _slice_part(op, "strides", strides, len(axes), inputs, "Strides",
                                       flags)
    attrs["infer_flags"] = flags
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(op, inputs, {"Out": out}, attrs)
    return out


def slice(input, axes, starts, ends):  # (Fluid's name; the builtin is unused here)
    """``input[starts[i]:ends[i]]`` along each ``axes[i]`` (``slice``): negative indices count
    from the end and are clamped to the dim, as in Paddle; an end before its start is an
    error. starts/ends may be int Variables (known at run time)."""
    return _slice("slice", input, axes, starts, ends, None)


def strided_slice(input, axes, starts, ends, strides):
    """``input[starts[i]:ends[i]:strides[i]]`` along each ``axes[i]`` (``strided_slice``);
    with a negative stride an end of -1 means through element 0, as in Paddle."""
    return _slice("strided_slice", input, axes, starts, ends, strides)


# -- selection by indices --------------------------------------------------------------------

def _int_var(fn, arg, v):
    return check_variable(fn, arg, v, ("int32", "int64"))


def gather(input, index, overwrite=True, axis=0, name=None):
    """The slices of ``input`` along ``axis`` at ``index`` (an int32/int64 Variable of shape
    [N], [N, 1] or []), stacked in index order (``gather``). ``axis`` may be an int Variable
    holding it. The gradient adds the slices' gradients back at their indices (repeated
    indices accumulate, whatever ``overwrite``, Fluid 1.x's flag, says)."""
    helper = LayerHelper("gather", name=name)
    check_variable("gather", "input", input)
    inputs = {"X": input, "Index": _int_var("gather", "index", index)}
    attrs = {"overwrite": check_bool("gather", "overwrite", overwrite)}
    if isinstance(axis, Variable):
        inputs["Axis"] = _int_var("gather", "axis", axis)
    else:
        rank = len(input.shape)
        attrs["axis"] = check_int("gather", "axis", axis, minimum=-rank, maximum=rank - 1)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("gather", inputs, {"Out": out}, attrs)
    return out


def gather_nd(input, index, name=None):
    """``input[index[..., 0], ..., index[..., k-1]]`` for each row of ``index``'s last dim:
    shape ``index.shape[:-1] + input.shape[k:]`` (``gather_nd``)."""
    helper = LayerHelper("gather_nd", name=name)
    check_variable("gather_nd", "input", input)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("gather_nd", {"X": input, "Index": _int_var("gather_nd", "index", index)},
                     {"Out": out}, {})
    return out


def scatter(input, index, updates, name=None, overwrite=True):
    """``input`` with its rows at ``index`` replaced by the rows of ``updates``
    (``overwrite``: the last of repeated indices wins) or set to the sum of the updates naming
    them (``scatter``)."""
    helper = LayerHelper("scatter", name=name)
    check_variable("scatter", "input", input)
    check_variable("scatter", "updates", updates)
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("scatter", {"X": input, "Ids": _int_var("scatter", "index", index),
                                 "Updates": updates}, {"Out": out},
                     {"overwrite": check_bool("scatter", "overwrite", overwrite)})
    return out


def where(condition, x, y, name=None):
    """``x`` where the bool ``condition`` holds, else ``y``, elementwise (``where``; the three
    have one shape)."""
    helper = LayerHelper("where", name=name)
    check_variable("where", "condition", condition, ("bool",))
    check_variable("where", "x", x)
    check_variable("where", "y", y)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("where", {"Condition": condition, "X": x, "Y": y}, {"Out": out}, {})
    return out


def _arg(op_type, fn, x, axis, keepdim, dtype, name):
    helper = LayerHelper(op_type, name=name)
    check_variable(fn, "x", x)
    dtype = _dtype(fn, dtype)
    if dtype not in ("int32", "int64"):
        raise _err(fn, f"argument 'dtype' must be int32 or int64, got {dtype}")
    attrs = {"keepdims": check_bool(fn, "keepdim", keepdim), "dtype": dtype_enum(dtype),
             "flatten": axis is None, "axis": 0}
    if axis is not None:
        rank = len(x.shape)
        attrs["axis"] = check_int(fn, "axis", axis, minimum=-rank, maximum=rank - 1)
    out = helper.create_variable_for_type_inference(dtype, stop_gradient=True)
    helper.append_op(op_type, {"X": x}, {"Out": out}, attrs)
    return out


def argmax(x, axis=0, keepdim=False, dtype="int64", name=None):
    """The index of the largest entry along ``axis`` (None: of the flattened ``x``), the first
    one on ties (``arg_max``); no gradient."""
    return _arg("arg_max", "argmax", x, axis, keepdim, dtype, name)


def argmin(x, axis=0, keepdim=False, dtype="int64", name=None):
    """The index of the smallest entry along ``axis`` (None: of the flattened ``x``), the
    first one on ties (``arg_min``); no gradient."""
    return _arg("arg_min", "argmin", x, axis, keepdim, dtype, name)


def one_hot(input, depth, allow_out_of_range=False, dtype="float32", name=None):
    """One-hot rows of length ``depth`` (an int or an int Variable) for the int ids of
    ``input``: shape ``input.shape + [depth]`` (``one_hot_v2``); no gradient."""
    helper = LayerHelper("one_hot_v2", name=name)
    _int_var("one_hot", "input", input)
    inputs, attrs = {"X": input}, {
        "allow_out_of_range": check_bool("one_hot", "allow_out_of_range", allow_out_of_range),
        "dtype": dtype_enum(_dtype("one_hot", dtype))}
    if isinstance(depth, Variable):
        inputs["depth_tensor"] = _int_var("one_hot", "depth", depth)
    else:
        attrs["depth"] = check_int("one_hot", "depth", depth, minimum=1)
    out = helper.create_variable_for_type_inference(_dtype("one_hot", dtype),
                                                    stop_gradient=True)
    helper.append_op("one_hot_v2", inputs, {"Out": out}, attrs)
    return out
