"""LayerHelper: the work layer functions share (seeds: python_api, "Layer Function").

A layer function makes a helper from its own arguments, ``LayerHelper("fc", **locals())``, and
asks it for inputs, parameters (with default initializers, created in the main program and,
with their initializer op, in the startup program), temporaries, the bias and the activation.
Names: the helper is ``fc_0`` (a unique name per layer type); its parameters ``fc_0.w_0``,
``fc_0.b_0``; its temporaries ``fc_0.tmp_0``...

The module also holds the small argument checks and op-building functions that layers,
optimizers, regularizers and clipping share (:func:`check_*`, :func:`append_simple`,
:func:`constant`).
"""
import copy
import numbers

import numpy as np

from . import dtypes, unique_name
from .errors import LayerError
from .framework import Parameter, Variable, default_main_program, default_startup_program
from .initializer import Constant, Xavier
from .param_attr import ParamAttr

__all__ = ["LayerHelper", "ACTIVATIONS", "check_variable", "check_int", "check_number",
           "check_bool", "check_choice", "check_ints", "check_dtype", "append_simple",
           "constant", "tmp_var", "dtype_enum"]

# Activation ops a layer's ``act`` may name (those registered in the running registry).
ACTIVATIONS = ("relu", "sigmoid", "tanh", "softmax", "leaky_relu", "elu", "gelu", "relu6",
               "softplus", "softsign", "swish", "silu", "hard_sigmoid", "exp", "log", "sqrt",
               "rsqrt", "square", "abs", "reciprocal", "sin", "cos", "ceil", "floor", "round")


# -- argument checks (every message names the function and the argument) ------------------

def check_variable(fn, arg, value, dtypes_=None):
    if not isinstance(value, Variable):
        raise LayerError(f"{fn}: argument '{arg}' must be a Variable, got "
                         f"{type(value).__name__} {value!r}"[:300])
    if dtypes_ is not None:
        check_dtype(fn, arg, value, dtypes_)
    return value


def check_dtype(fn, arg, var, allowed):
    if var.dtype not in allowed:
        raise LayerError(f"{fn}: argument '{arg}' ({var.name}) must have dtype "
                         f"{' or '.join(allowed)}, found {var.dtype}")
    return var


def check_int(fn, arg, value, minimum=None, maximum=None):
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise LayerError(f"{fn}: argument '{arg}' must be an int, got "
                         f"{type(value).__name__} {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        bounds = " and ".join(b for b in (f">= {minimum}" if minimum is not None else "",
                                          f"<= {maximum}" if maximum is not None else "") if b)
        raise LayerError(f"{fn}: argument '{arg}' must be {bounds}, got {value}")
    return int(value)


def check_number(fn, arg, value, minimum=None, maximum=None, above=None):
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.number)):
        raise LayerError(f"{fn}: argument '{arg}' must be a number, got "
                         f"{type(value).__name__} {value!r}")
    value = float(value)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum) \
            or (above is not None and value <= above):
        bounds = [f">= {minimum}" if minimum is not None else "",
                  f"> {above}" if above is not None else "",
                  f"<= {maximum}" if maximum is not None else ""]
        raise LayerError(f"{fn}: argument '{arg}' must be {' and '.join(b for b in bounds if b)}"
                         f", got {value}")
    return value


def check_bool(fn, arg, value):
    if not isinstance(value, (bool, np.bool_)):
        raise LayerError(f"{fn}: argument '{arg}' must be a bool, got {type(value).__name__} "
                         f"{value!r}")
    return bool(value)


def check_choice(fn, arg, value, choices):
    if value not in choices:
        raise LayerError(f"{fn}: argument '{arg}' must be one of "
                         f"{', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def check_ints(fn, arg, value, n, minimum=None):
    """An int or a list of ``n`` ints -> a list of ``n`` ints."""
    if isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, bool):
        value = [int(value)] * n
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise LayerError(f"{fn}: argument '{arg}' must be an int or a list of {n} ints, got "
                         f"{value!r}")
    return [check_int(fn, arg, v, minimum) for v in value]


def dtype_enum(dtype):
    return int(dtypes.to_proto(dtype))


# -- op building in a given block ----------------------------------------------------------

def tmp_var(block, key, dtype, stop_gradient=False):
    """A new temporary of ``block`` named ``<key>_N`` (unique in the program)."""
    return block.create_var(name=block.program._unique_var_name(key), dtype=dtype,
                            stop_gradient=stop_gradient)


def append_simple(block, op_type, inputs, attrs=None, dtype=None, key="tmp", out_slot="Out"):
    """Append a one-output op to ``block``; return its output (a new temporary)."""
    if dtype is None:
        first = next(iter(inputs.values()))
        dtype = (first[0] if isinstance(first, (list, tuple)) else first).dtype
    out = tmp_var(block, key, dtype)
    block.append_op(op_type, inputs, {out_slot: out}, attrs or {})
    return out


def constant(block, value, dtype="float32", shape=(1,), key="tmp"):
    """A ``fill_constant`` of ``shape`` and ``dtype`` in ``block``."""
    out = tmp_var(block, key, dtype, stop_gradient=True)
    block.append_op("fill_constant", {}, {"Out": out},
                    {"shape": list(shape), "dtype": dtype_enum(dtype), "value": float(value)})
    return out


# -- the helper ----------------------------------------------------------------------------

class LayerHelper:
    """Shared work of one layer call; ``kwargs`` are the layer's arguments (``input``,
    ``param_attr``, ``bias_attr``, ``act``, ``name``...)."""

    def __init__(self, layer_type, **kwargs):
        self.kwargs = kwargs
        self.layer_type = layer_type
        name = kwargs.get("name")
        if name is None:
            name = unique_name.generate(layer_type)
        elif not isinstance(name, str) or not name:
            raise LayerError(f"{layer_type}: argument 'name' must be a non-empty str, "
                             f"got {name!r}")
        self.kwargs["name"] = name
        self.bias = None  # the bias parameter append_bias_op created, if any

    @property
    def name(self):
        return self.kwargs["name"]

    @property
    def main_program(self):
        return default_main_program()

    @property
    def startup_program(self):
        return default_startup_program()

    def error(self, message):
        """A LayerError naming this layer."""
        return LayerError(f"{self.layer_type}: {message}")

    # -- inputs ----------------------------------------------------------------------------
    def multiple_input(self, input_param_name="input"):
        """The layer argument ``input_param_name``: a Variable or a list of them -> a list."""
        inputs = self.kwargs.get(input_param_name)
        if isinstance(inputs, Variable):
            return [inputs]
        if isinstance(inputs, (list, tuple)) and inputs and \
                all(isinstance(v, Variable) for v in inputs):
            return list(inputs)
        raise self.error(f"argument '{input_param_name}' must be a Variable or a non-empty list "
                         f"of Variables, got {type(inputs).__name__} {inputs!r}"[:300])

    def input(self, input_param_name="input"):
        """The layer argument ``input_param_name``, which must be one Variable."""
        value = self.kwargs.get(input_param_name)
        if not isinstance(value, Variable):
            raise self.error(f"argument '{input_param_name}' must be a Variable, got "
                             f"{type(value).__name__} {value!r}"[:300])
        return value

    def input_dtype(self, input_param_name="input"):
        """The common dtype of the inputs (an error when they differ)."""
        found = {v.dtype for v in self.multiple_input(input_param_name)}
        if len(found) != 1:
            raise self.error(f"the Variables of argument '{input_param_name}' must share one "
                             f"dtype, found {sorted(found)}")
        return found.pop()

    @property
    def param_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("param_attr"), "param_attr")

    @property
    def bias_attr(self):
        return ParamAttr._to_attr(self.kwargs.get("bias_attr"), "bias_attr")

    def multiple_param_attr(self, length):
        attrs = self.param_attr
        if not isinstance(attrs, list):
            attrs = [attrs]
        if len(attrs) == 1 and length != 1:
            attrs = [copy.copy(attrs[0]) for _ in range(length)]
        if len(attrs) != length:
            raise self.error(f"argument 'param_attr' has {len(attrs)} entries for {length} "
                             f"inputs; give one, or one per input")
        return attrs

    def iter_inputs_and_params(self, input_param_name="input"):
        inputs = self.multiple_input(input_param_name)
        yield from zip(inputs, self.multiple_param_attr(len(inputs)))

    # -- parameters ------------------------------------------------------------------------
    def _unique_param_name(self, suffix):
        main, startup = self.main_program.global_block(), self.startup_program.global_block()
        while True:
            name = unique_name.generate(f"{self.name}.{suffix}")
            if name not in main.vars and name not in startup.vars:
                return name

    def create_parameter(self, attr, shape, dtype="float32", is_bias=False,
                         default_initializer=None):
        """A parameter in the main program's global block, with its twin and initializer op in
        the startup program's. ``attr`` False gives None (no parameter: ``bias_attr=False``).
        Default initializer: Constant(0) for biases, Xavier for weights."""
        if attr is False:
            return None
        attr = copy.copy(ParamAttr._to_attr(attr))
        shape = [int(d) for d in shape]
        if not shape or any(d <= 0 for d in shape):
            raise self.error(f"cannot create a parameter of shape {shape}: every dim must be "
                             f"known and positive (are the input's dims known?)")
        if attr.initializer is None:
            attr.initializer = default_initializer or (Constant(0.0) if is_bias else Xavier())
        if attr.name is None:
            attr.name = self._unique_param_name("b" if is_bias else "w")
        dtype = dtypes.canonical(dtype)
        kwargs = attr._to_kwargs()
        sblock = self.startup_program.global_block()
        fresh = attr.name not in sblock.vars
        sparam = sblock.create_parameter(shape=shape, dtype=dtype, **kwargs)
        if fresh:
            attr.initializer(sparam, sblock)
        return self.main_program.global_block().create_parameter(shape=shape, dtype=dtype,
                                                                 **kwargs)

    def get_parameter(self, name):
        var = self.main_program.global_block().vars.get(name)
        if not isinstance(var, Parameter):
            raise self.error(f"no parameter named '{name}' in the main program")
        return var

    # -- variables -------------------------------------------------------------------------
    def create_variable_for_type_inference(self, dtype, stop_gradient=False):
        """A temporary ``<layer>.tmp_N`` of the current block; the op that writes it sets its
        shape (shape inference)."""
        return tmp_var(self.main_program.current_block(), f"{self.name}.tmp", dtype,
                       stop_gradient)

    create_tmp_variable = create_variable_for_type_inference

    def create_variable(self, **kwargs):
        """A variable of the current block (``Block.create_var`` arguments)."""
        if kwargs.get("name") is None:
            kwargs["name"] = self.main_program._unique_var_name(f"{self.name}.tmp")
        return self.main_program.current_block().create_var(**kwargs)

    def create_global_variable(self, persistable=False, **kwargs):
        """A variable of the main program's global block."""
        if kwargs.get("name") is None:
            kwargs["name"] = self.main_program._unique_var_name(f"{self.name}.global")
        return self.main_program.global_block().create_var(persistable=persistable, **kwargs)

    def create_or_get_global_variable(self, name, **kwargs):
        """(the global variable ``name``, whether it was created now)."""
        block = self.main_program.global_block()
        if name in block.vars:
            return block.vars[name], False
        return self.create_global_variable(name=name, **kwargs), True

    def set_variable_initializer(self, var, initializer):
        """Initialize ``var`` in the startup program (its twin is declared there)."""
        return initializer(var, self.startup_program.global_block())

    # -- ops -------------------------------------------------------------------------------
    def append_op(self, type, inputs=None, outputs=None, attrs=None):
        """Append an op to the main program's current block."""
        return self.main_program.current_block().append_op(type, inputs, outputs, attrs)

    def append_bias_op(self, input_var, dim_start=1, dim_end=None):
        """``input_var + b`` with ``b`` of shape ``input_var.shape[dim_start:dim_end]``
        (``elementwise_add`` at axis ``dim_start``), unless ``bias_attr`` is False."""
        bias_attr = self.bias_attr
        if bias_attr is False:
            return input_var
        size = list(input_var.shape[dim_start:dim_end])
        if any(d < 0 for d in size):
            raise self.error(f"the bias needs known dims {dim_start}:{dim_end} of "
                             f"'{input_var.name}', found shape {list(input_var.shape)}")
        self.bias = self.create_parameter(bias_attr, size, input_var.dtype, is_bias=True)
        out = self.create_variable_for_type_inference(input_var.dtype)
        self.append_op("elementwise_add", {"X": input_var, "Y": self.bias}, {"Out": out},
                       {"axis": dim_start})
        return out

    def append_activation(self, input_var):
        """``act(input_var)`` for the layer's ``act``: an op name ('relu') or a dict with
        'type' and the op's attributes ({'type': 'leaky_relu', 'alpha': 0.1})."""
        act = self.kwargs.get("act")
        if act is None:
            return input_var
        if isinstance(act, str):
            act = {"type": act}
        elif isinstance(act, dict) and isinstance(act.get("type"), str):
            act = dict(act)
        else:
            raise self.error(f"argument 'act' must be an activation name such as 'relu' or a "
                             f"dict with a 'type', got {act!r}")
        act_type = act.pop("type")
        registry = self.main_program.registry
        if act_type not in ACTIVATIONS or act_type not in registry:
            valid = [a for a in ACTIVATIONS if a in registry]
            raise self.error(f"argument 'act' names an unknown activation {act_type!r}; valid: "
                             f"{', '.join(valid)}")
        out = self.create_variable_for_type_inference(input_var.dtype)
        self.append_op(act_type, {"X": input_var}, {"Out": out}, act)
        return out
