"""Tensor manipulation layers whose shapes may be known only at run time: expand, expand_as,
pad, label_smooth, uniform_random, gaussian_random, and the shape arguments they share with
fill_constant (a list of ints, a 1-D int Variable, or a list mixing ints and one-element int
Variables, as Paddle's layers take them)."""
from .. import dtypes
from ..checks import check_int, check_number, check_variable
from ..errors import LayerError
from ..framework import Variable
from ..framework.builder import dtype_enum
from ..layer_helper import LayerHelper

__all__ = ["expand", "expand_as", "pad", "label_smooth", "uniform_random", "gaussian_random"]

_INTS = ("int32", "int64")


def _err(fn, message):
    return LayerError(f"{fn}: {message}")


def _int_constant(value):
    """A one-element int32 tensor holding ``value`` (Paddle's layers write the constant dims
    of a mixed shape list this way, with force_cpu)."""
    helper = LayerHelper("fill_constant")
    out = helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("fill_constant", {}, {"Out": out},
                     {"shape": [1], "dtype": dtype_enum("int32"), "value": float(value),
                      "force_cpu": True})
    return out


def shape_argument(fn, shape, inputs, tensor_slot, list_slot, minimum=0, arg="shape"):
    """The attribute value of a shape argument, binding the tensors it holds in ``inputs``.

    A 1-D int Variable goes to ``tensor_slot`` (the attribute is then empty); a list or tuple
    holding Variables goes to ``list_slot``, one one-element int tensor per entry (its ints
    as int32 constants), with -1 in the attribute where a Variable decides; a list of ints
    is the attribute itself (each checked >= ``minimum``).
    """
    if isinstance(shape, Variable):
        check_variable(fn, arg, shape, _INTS)
        if len(shape.shape) != 1:
            raise _err(fn, f"argument '{arg}' ({shape.name}) must be a 1-D int Variable, got "
                           f"shape {list(shape.shape)}")
        shape.stop_gradient = True
        inputs[tensor_slot] = shape
        return []
    if not isinstance(shape, (list, tuple)):
        raise _err(fn, f"argument '{arg}' must be a list of ints (or of ints and int "
                       f"Variables) or a 1-D int Variable, got {shape!r}")
    if not any(isinstance(d, Variable) for d in shape):
        return [check_int(fn, arg, d, minimum=minimum) for d in shape]
    tensors, attr = [], []
    for d in shape:
        if isinstance(d, Variable):
            check_variable(fn, arg, d, _INTS)
            if any(n not in (1, -1) for n in d.shape):
                raise _err(fn, f"the Variables in argument '{arg}' must hold one element; "
                               f"{d.name} has shape {list(d.shape)}")
            tensors.append(d)
            attr.append(-1)
        else:
            v = check_int(fn, arg, d, minimum=minimum)
            tensors.append(_int_constant(v))
            attr.append(v)
    inputs[list_slot] = tensors
    return attr


def _float_dtype(fn, dtype):
    try:
        dtype = dtypes.canonical(dtype)
    except Exception:
        raise _err(fn, f"argument 'dtype' is not a dtype: {dtype!r}") from None
    if dtype not in ("float32", "float64"):
        raise _err(fn, f"argument 'dtype' must be float32 or float64, got {dtype}")
    return dtype


def expand(x, shape, name=None):
    """``x`` broadcast (copied) to ``shape`` (``expand_v2``, paddle.expand): new leading dims
    are added, dims of 1 repeated, and -1 keeps a dim of ``x``. ``shape``: ints, a 1-D int
    Variable, or a list mixing ints and one-element int Variables (known at run time)."""
    helper = LayerHelper("expand", name=name)
    check_variable("expand", "x", x)
    inputs = {"X": x}
    attr = shape_argument("expand", shape, inputs, "Shape", "expand_shapes_tensor", minimum=-1)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("expand_v2", inputs, {"Out": out}, {"shape": attr})
    return out


def expand_as(x, y, name=None):
    """``x`` broadcast (copied) to the shape of ``y`` (``expand_as_v2``, paddle.expand_as);
    only ``y``'s shape is read, and it gets no gradient."""
    helper = LayerHelper("expand_as", name=name)
    check_variable("expand_as", "x", x)
    check_variable("expand_as", "y", y)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("expand_as_v2", {"X": x, "Y": y}, {"Out": out},
                     {"target_shape": [int(d) for d in y.shape]})
    return out


def pad(x, paddings, pad_value=0.0, name=None):
    """``x`` inside a border of ``pad_value`` (``pad``, Fluid's layer): ``paddings`` holds
    ``[before_0, after_0, before_1, after_1, ...]``, two counts >= 0 per dim of ``x``."""
    helper = LayerHelper("pad", name=name)
    check_variable("pad", "x", x)
    rank = len(x.shape)
    if not isinstance(paddings, (list, tuple)) or len(paddings) != 2 * rank:
        raise _err("pad", f"argument 'paddings' must be a list of {2 * rank} ints (before and "
                          f"after each dim of x, shape {list(x.shape)}), got {paddings!r}")
    paddings = [check_int("pad", "paddings", p, minimum=0) for p in paddings]
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("pad", {"X": x}, {"Out": out},
                     {"paddings": paddings,
                      "pad_value": check_number("pad", "pad_value", pad_value)})
    return out


def label_smooth(label, prior_dist=None, epsilon=0.1, dtype="float32", name=None):
    """Smoothed one-hot labels (``label_smooth``, Fluid's layer): ``(1 - epsilon) * label +
    epsilon * prior_dist`` along the last dim, the prior uniform when not given;
    0 <= epsilon <= 1. The result has label's dtype."""
    fn = "label_smooth"
    helper = LayerHelper(fn, name=name)
    check_variable(fn, "label", label, ("float32", "float64"))
    epsilon = check_number(fn, "epsilon", epsilon, minimum=0.0, maximum=1.0)
    # (checked only: as in Paddle, where the op's type inference overrides the declared
    # dtype, Out takes label's dtype)
    _float_dtype(fn, dtype)
    inputs = {"X": label}
    if prior_dist is not None:
        inputs["PriorDist"] = check_variable(fn, "prior_dist", prior_dist, (label.dtype,))
    out = helper.create_variable_for_type_inference(label.dtype)
    helper.append_op(fn, inputs, {"Out": out}, {"epsilon": epsilon})
    return out


def _random(fn, op, shape, dtype, seed, attrs, name):
    helper = LayerHelper(fn, name=name)
    inputs = {}
    attrs = dict(attrs, shape=shape_argument(fn, shape, inputs, "ShapeTensor",
                                             "ShapeTensorList"),
                 seed=check_int(fn, "seed", seed, minimum=0),
                 dtype=dtype_enum(_float_dtype(fn, dtype)))
    out = helper.create_variable_for_type_inference(dtypes.canonical(dtype),
                                                    stop_gradient=True)
    helper.append_op(op, inputs, {"Out": out}, attrs)
    return out


def uniform_random(shape, dtype="float32", min=-1.0, max=1.0, seed=0, name=None):
    """Samples of U[min, max) (``uniform_random``); ``shape`` as for expand, without -1;
    seed 0: the program's random_seed, or a fresh one."""
    lo = check_number("uniform_random", "min", min)
    hi = check_number("uniform_random", "max", max, above=lo)
    return _random("uniform_random", "uniform_random", shape, dtype, seed,
                   {"min": lo, "max": hi}, name)


def gaussian_random(shape, mean=0.0, std=1.0, seed=0, dtype="float32", name=None):
    """Samples of N(mean, std^2) (``gaussian_random``); ``shape`` as for uniform_random."""
    return _random("gaussian_random", "gaussian_random", shape, dtype, seed,
                   {"mean": check_number("gaussian_random", "mean", mean),
                    "std": check_number("gaussian_random", "std", std, minimum=0.0)}, name)
