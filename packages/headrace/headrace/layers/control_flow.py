"""Control-flow building blocks: counters, comparisons, logical ops, tensor arrays."""
from ..checks import check_bool, check_number, check_variable
from ..framework import Variable
from ..framework.builder import constant
from ..layer_helper import LayerHelper

__all__ = ["increment", "less_than", "less_equal", "greater_than", "greater_equal", "equal",
           "not_equal", "logical_and", "logical_or", "logical_xor", "logical_not",
           "create_array", "array_write", "array_read"]


def increment(x, value=1.0, in_place=True):
    """x + value for a one-element x (a loop counter); in place by default."""
    helper = LayerHelper("increment")
    check_variable("increment", "x", x)
    out = x if check_bool("increment", "in_place", in_place) else \
        helper.create_variable_for_type_inference(x.dtype)
    helper.append_op("increment", {"X": x}, {"Out": out},
                     {"step": check_number("increment", "value", value)})
    return out


def _compare(op_type, x, y, force_cpu, cond):
    helper = LayerHelper(op_type)
    check_variable(op_type, "x", x)
    if not isinstance(y, Variable):
        y = constant(helper.main_program.current_block(), check_number(op_type, "y", y),
                     x.dtype, key=f"{helper.name}.tmp")
    if cond is None:
        cond = helper.create_variable_for_type_inference("bool", stop_gradient=True)
    else:
        check_variable(op_type, "cond", cond)
    attrs = {} if force_cpu is None else {"force_cpu": check_bool(op_type, "force_cpu",
                                                                  force_cpu)}
    helper.append_op(op_type, {"X": x, "Y": y}, {"Out": cond}, attrs)
    return cond


def less_than(x, y, force_cpu=None, cond=None):
    """x < y elementwise, bool (y may be a number)."""
    return _compare("less_than", x, y, force_cpu, cond)


def less_equal(x, y, force_cpu=None, cond=None):
    """x <= y elementwise, bool."""
    return _compare("less_equal", x, y, force_cpu, cond)


def greater_than(x, y, force_cpu=None, cond=None):
    """x > y elementwise, bool."""
    return _compare("greater_than", x, y, force_cpu, cond)


def greater_equal(x, y, force_cpu=None, cond=None):
    """x >= y elementwise, bool."""
    return _compare("greater_equal", x, y, force_cpu, cond)


def equal(x, y, force_cpu=None, cond=None):
    """x == y elementwise, bool (the Python ``==`` on Variables stays an identity test)."""
    return _compare("equal", x, y, force_cpu, cond)


def not_equal(x, y, force_cpu=None, cond=None):
    """x != y elementwise, bool."""
    return _compare("not_equal", x, y, force_cpu, cond)


def _logical(op_type, x, y=None, out=None, name=None):
    helper = LayerHelper(op_type, name=name)
    check_variable(op_type, "x", x, ("bool",))
    inputs = {"X": x}
    if y is not None or op_type != "logical_not":
        inputs["Y"] = check_variable(op_type, "y", y, ("bool",))
    out = out if out is not None else \
        helper.create_variable_for_type_inference("bool", stop_gradient=True)
    helper.append_op(op_type, inputs, {"Out": out})
    return out


def logical_and(x, y, out=None, name=None):
    """x and y elementwise over bool Variables."""
    return _logical("logical_and", x, y, out, name)


def logical_or(x, y, out=None, name=None):
    """x or y elementwise over bool Variables."""
    return _logical("logical_or", x, y, out, name)


def logical_xor(x, y, out=None, name=None):
    """x xor y elementwise over bool Variables."""
    return _logical("logical_xor", x, y, out, name)


def logical_not(x, out=None, name=None):
    """not x elementwise over a bool Variable."""
    return _logical("logical_not", x, None, out, name)


def create_array(dtype):
    """An empty tensor array (a LOD_TENSOR_ARRAY variable)."""
    helper = LayerHelper("array")
    return helper.create_variable(name=f"{helper.name}.out", type="lod_tensor_array",
                                  dtype=dtype)


def array_write(x, i, array=None):
    """array[i] = x (``write_to_array``); i is an int64 [1] Variable. A new array when
    ``array`` is None. Returns the array."""
    helper = LayerHelper("array_write")
    check_variable("array_write", "x", x)
    check_variable("array_write", "i", i, ("int64",))
    if array is None:
        array = create_array(x.dtype)
    elif not isinstance(array, Variable) or array.kind != "lod_tensor_array":
        raise helper.error(f"argument 'array' must be a tensor array Variable, got {array!r}")
    helper.append_op("write_to_array", {"X": x, "I": i}, {"Out": array})
    return array


def array_read(array, i):
    """array[i] (``read_from_array``); i is an int64 [1] Variable."""
    helper = LayerHelper("array_read")
    if not isinstance(array, Variable) or array.kind != "lod_tensor_array":
        raise helper.error(f"argument 'array' must be a tensor array Variable, got {array!r}")
    check_variable("array_read", "i", i, ("int64",))
    out = helper.create_variable_for_type_inference(array.dtype)
    helper.append_op("read_from_array", {"X": array, "I": i}, {"Out": out})
    return out
