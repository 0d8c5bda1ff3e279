"""Math layers: elementwise binary ops, activations, reductions, mean, mul, matmul, scale."""
from ..checks import check_bool, check_int, check_number, check_variable
from ..framework import Variable
from ..errors import LayerError
from ..layer_helper import LayerHelper

__all__ = [
    "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
    "elementwise_max", "elementwise_min", "elementwise_pow",
    "relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "square", "abs", "ceil", "floor",
    "round", "reciprocal", "sin", "cos", "softsign", "silu", "softplus", "leaky_relu", "relu6",
    "elu", "gelu", "swish", "hard_sigmoid",
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod",
    "mean", "mul", "matmul", "scale",
    "cumsum", "clip",
]


# -- elementwise binary --------------------------------------------------------------------

def _elementwise(op_type, x, y, axis, act, name):
    helper = LayerHelper(op_type, act=act, name=name)
    check_variable(op_type, "x", x)
    check_variable(op_type, "y", y)
    axis = check_int(op_type, "axis", axis, minimum=-1)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(op_type, {"X": x, "Y": y}, {"Out": out}, {"axis": axis})
    return helper.append_activation(out)


def elementwise_add(x, y, axis=-1, act=None, name=None):
    """x + y, broadcasting y into x from dim ``axis`` (-1: trailing dims, as NumPy)."""
    return _elementwise("elementwise_add", x, y, axis, act, name)


def elementwise_sub(x, y, axis=-1, act=None, name=None):
    """x - y (broadcast as in :func:`elementwise_add`)."""
    return _elementwise("elementwise_sub", x, y, axis, act, name)


def elementwise_mul(x, y, axis=-1, act=None, name=None):
    """x * y (broadcast as in :func:`elementwise_add`)."""
    return _elementwise("elementwise_mul", x, y, axis, act, name)


def elementwise_div(x, y, axis=-1, act=None, name=None):
    """x / y (broadcast as in :func:`elementwise_add`)."""
    return _elementwise("elementwise_div", x, y, axis, act, name)


def elementwise_max(x, y, axis=-1, act=None, name=None):
    """max(x, y) (broadcast as in :func:`elementwise_add`)."""
    return _elementwise("elementwise_max", x, y, axis, act, name)


def elementwise_min(x, y, axis=-1, act=None, name=None):
    """min(x, y) (broadcast as in :func:`elementwise_add`)."""
    return _elementwise("elementwise_min", x, y, axis, act, name)


def elementwise_pow(x, y, axis=-1, act=None, name=None):
    """x ** y (broadcast as in :func:`elementwise_add`)."""
    return _elementwise("elementwise_pow", x, y, axis, act, name)


# -- activations and other unary ops -------------------------------------------------------

def _unary(op_type, x, name, attrs=None):
    helper = LayerHelper(op_type, name=name)
    check_variable(op_type, "x", x)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op(op_type, {"X": x}, {"Out": out}, attrs or {})
    return out


def relu(x, name=None):
    """max(x, 0)."""
    return _unary("relu", x, name)


def sigmoid(x, name=None):
    """1 / (1 + exp(-x))."""
    return _unary("sigmoid", x, name)


def tanh(x, name=None):
    """tanh(x)."""
    return _unary("tanh", x, name)


def exp(x, name=None):
    """exp(x)."""
    return _unary("exp", x, name)


def log(x, name=None):
    """ln(x)."""
    return _unary("log", x, name)


def sqrt(x, name=None):
    """sqrt(x)."""
    return _unary("sqrt", x, name)


def rsqrt(x, name=None):
    """1 / sqrt(x)."""
    return _unary("rsqrt", x, name)


def square(x, name=None):
    """x * x."""
    return _unary("square", x, name)


def abs(x, name=None):  # noqa: A001 - Fluid's name
    """|x|."""
    return _unary("abs", x, name)


def ceil(x, name=None):
    """ceil(x)."""
    return _unary("ceil", x, name)


def floor(x, name=None):
    """floor(x)."""
    return _unary("floor", x, name)


def round(x, name=None):  # noqa: A001 - Fluid's name
    """x rounded half away from zero."""
    return _unary("round", x, name)


def reciprocal(x, name=None):
    """1 / x."""
    return _unary("reciprocal", x, name)


def sin(x, name=None):
    """sin(x)."""
    return _unary("sin", x, name)


def cos(x, name=None):
    """cos(x)."""
    return _unary("cos", x, name)


def softsign(x, name=None):
    """x / (1 + |x|)."""
    return _unary("softsign", x, name)


def silu(x, name=None):
    """x * sigmoid(x)."""
    return _unary("silu", x, name)


def softplus(x, beta=1.0, threshold=20.0, name=None):
    """log(1 + exp(beta x)) / beta (x where beta x > threshold)."""
    return _unary("softplus", x, name,
                  {"beta": check_number("softplus", "beta", beta, above=0.0),
                   "threshold": check_number("softplus", "threshold", threshold)})


def leaky_relu(x, alpha=0.02, name=None):
    """x if x > 0 else alpha x."""
    return _unary("leaky_relu", x, name, {"alpha": check_number("leaky_relu", "alpha", alpha)})


def relu6(x, threshold=6.0, name=None):
    """min(max(x, 0), threshold)."""
    return _unary("relu6", x, name,
                  {"threshold": check_number("relu6", "threshold", threshold, minimum=0.0)})


def elu(x, alpha=1.0, name=None):
    """x if x > 0 else alpha (exp(x) - 1)."""
    return _unary("elu", x, name, {"alpha": check_number("elu", "alpha", alpha)})


def gelu(x, approximate=False, name=None):
    """x Phi(x) (the tanh approximation with ``approximate``)."""
    return _unary("gelu", x, name, {"approximate": check_bool("gelu", "approximate", approximate)})


def swish(x, beta=1.0, name=None):
    """x sigmoid(beta x)."""
    return _unary("swish", x, name, {"beta": check_number("swish", "beta", beta)})


def hard_sigmoid(x, slope=0.2, offset=0.5, name=None):
    """min(max(slope x + offset, 0), 1)."""
    return _unary("hard_sigmoid", x, name,
                  {"slope": check_number("hard_sigmoid", "slope", slope),
                   "offset": check_number("hard_sigmoid", "offset", offset)})


# -- reductions ----------------------------------------------------------------------------

def _reduce(op_type, input, dim, keep_dim, name):
    helper = LayerHelper(op_type, name=name)
    check_variable(op_type, "input", input)
    rank = len(input.shape)
    if dim is None:
        dims, reduce_all = [0], True
    else:
        dims = dim if isinstance(dim, (list, tuple)) else [dim]
        if not dims:
            raise LayerError(f"{op_type}: argument 'dim' must not be empty (None reduces all)")
        dims = [check_int(op_type, "dim", d, minimum=-rank, maximum=rank - 1) for d in dims]
        if len({d % rank for d in dims}) != len(dims):
            raise LayerError(f"{op_type}: argument 'dim' repeats a dimension: {list(dims)}")
        reduce_all = len(dims) == rank
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op(op_type, {"X": input}, {"Out": out},
                     {"dim": dims, "keep_dim": check_bool(op_type, "keep_dim", keep_dim),
                      "reduce_all": reduce_all})
    return out


def reduce_sum(input, dim=None, keep_dim=False, name=None):
    """Sum over ``dim`` (an int, a list, or None for every dim). Reducing every dim without
    ``keep_dim`` gives a 0-D Variable (shape [], as in Paddle 3)."""
    return _reduce("reduce_sum", input, dim, keep_dim, name)


def reduce_mean(input, dim=None, keep_dim=False, name=None):
    """Mean over ``dim``."""
    return _reduce("reduce_mean", input, dim, keep_dim, name)


def reduce_max(input, dim=None, keep_dim=False, name=None):
    """Maximum over ``dim``."""
    return _reduce("reduce_max", input, dim, keep_dim, name)


def reduce_min(input, dim=None, keep_dim=False, name=None):
    """Minimum over ``dim``."""
    return _reduce("reduce_min", input, dim, keep_dim, name)


def reduce_prod(input, dim=None, keep_dim=False, name=None):
    """Product over ``dim``."""
    return _reduce("reduce_prod", input, dim, keep_dim, name)


# -- products, mean, scale -----------------------------------------------------------------

def mean(x, name=None):
    """The mean of all elements, a 0-D Variable (shape [], as in Paddle 3) (``mean``)."""
    return _unary("mean", x, name)


def mul(x, y, x_num_col_dims=1, y_num_col_dims=1, name=None):
    """Matrix product of x flattened at ``x_num_col_dims`` and y at ``y_num_col_dims``."""
    helper = LayerHelper("mul", name=name)
    check_variable("mul", "x", x)
    check_variable("mul", "y", y)
    attrs = {"x_num_col_dims": check_int("mul", "x_num_col_dims", x_num_col_dims, 1,
                                         max(len(x.shape) - 1, 1)),
             "y_num_col_dims": check_int("mul", "y_num_col_dims", y_num_col_dims, 1,
                                         max(len(y.shape) - 1, 1))}
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("mul", {"X": x, "Y": y}, {"Out": out}, attrs)
    return out


def matmul(x, y, transpose_x=False, transpose_y=False, alpha=1.0, name=None):
    """alpha * op(x) @ op(y), NumPy matmul with optional transposes of the last two dims."""
    helper = LayerHelper("matmul", name=name)
    check_variable("matmul", "x", x)
    check_variable("matmul", "y", y)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("matmul", {"X": x, "Y": y}, {"Out": out},
                     {"transpose_X": check_bool("matmul", "transpose_x", transpose_x),
                      "transpose_Y": check_bool("matmul", "transpose_y", transpose_y),
                      "alpha": check_number("matmul", "alpha", alpha)})
    return out


def scale(x, scale=1.0, bias=0.0, bias_after_scale=True, act=None, name=None):
    """scale * x + bias (``bias_after_scale``) or scale * (x + bias)."""
    helper = LayerHelper("scale", act=act, name=name)
    check_variable("scale", "x", x)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("scale", {"X": x}, {"Out": out},
                     {"scale": check_number("scale", "scale", scale),
                      "bias": check_number("scale", "bias", bias),
                      "bias_after_scale": check_bool("scale", "bias_after_scale",
                                                     bias_after_scale)})
    return helper.append_activation(out)


# -- running sums, clipping ----------------------------------------------------------------

def cumsum(x, axis=None, exclusive=False, reverse=False, name=None):
    """Running sums of ``x`` along ``axis`` (None: over the flattened ``x``, a 1-D result);
    ``exclusive`` leaves each element out of its own sum, ``reverse`` sums from the end
    (``cumsum``). The gradient is the running sum of the output's gradient the other way."""
    helper = LayerHelper("cumsum", name=name)
    check_variable("cumsum", "x", x)
    attrs = {"flatten": axis is None, "axis": -1,
             "exclusive": check_bool("cumsum", "exclusive", exclusive),
             "reverse": check_bool("cumsum", "reverse", reverse)}
    if axis is not None:
        rank = max(len(x.shape), 1)
        attrs["axis"] = check_int("cumsum", "axis", axis, minimum=-rank, maximum=rank - 1)
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("cumsum", {"X": x}, {"Out": out}, attrs)
    return out


def clip(x, min, max, name=None):  # noqa: A002 - Fluid's argument names
    """``x`` limited to [min, max] (``clip``); each bound a number or a one-element Variable
    of x's dtype. The gradient passes where min < x < max."""
    helper = LayerHelper("clip", name=name)
    check_variable("clip", "x", x)
    inputs, attrs = {"X": x}, {}
    for arg, slot, value in (("min", "Min", min), ("max", "Max", max)):
        if isinstance(value, Variable):
            inputs[slot] = check_variable("clip", arg, value, (x.dtype,))
        else:
            attrs[arg] = check_number("clip", arg, value)
    if "min" in attrs and "max" in attrs and attrs["min"] > attrs["max"]:
        raise LayerError(f"clip: argument 'min' ({attrs['min']}) exceeds 'max' "
                         f"({attrs['max']})")
    out = helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("clip", inputs, {"Out": out}, attrs)
    return out
