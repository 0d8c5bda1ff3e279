"""LayerHelper: the work layer functions share (seeds: python_api, "Layer Function").

A layer function makes a helper from its own arguments, passed by name,
``LayerHelper("fc", input=input, param_attr=param_attr, bias_attr=bias_attr, act=act,
name=name)``, and asks it for inputs, parameters (with default initializers, created in the
main program and, with their initializer op, in the startup program), temporaries, the bias and
the activation. Names: the helper is ``fc_0`` (a unique name per layer type); its parameters
``fc_0.w_0``, ``fc_0.b_0``; its temporaries ``fc_0.tmp_0``...

The argument checks live in :mod:`headrace.checks`, the op-building functions the helper shares
with optimizers, regularizers, clipping and the Variable operators in
:mod:`headrace.framework.builder`; both sit below this module in the import graph.
"""
import copy

from . import dtypes, unique_name
from .errors import LayerError
from .framework import Parameter, Variable, default_main_program, default_startup_program
from .framework.builder import tmp_var, unique_global_name
from .initializer import Constant, Xavier
from .param_attr import ParamAttr

__all__ = ["LayerHelper", "ACTIVATIONS"]

# Activation ops a layer's ``act`` may name (those registered in the running registry).
ACTIVATIONS = ("relu", "sigmoid", "tanh", "softmax", "leaky_relu", "elu", "gelu", "relu6",
               "softplus", "softsign", "swish", "silu", "hard_sigmoid", "exp", "log", "sqrt",
               "rsqrt", "square", "abs", "reciprocal", "sin", "cos", "ceil", "floor", "round")


def _copy_attr(attr):
    """``copy.copy(attr)`` of a ParamAttr: its fields into a new one, without copy's
    __reduce_ex__ round trip (every layer copies the one it made for each parameter)."""
    if type(attr) is not ParamAttr:   # a subclass may copy itself its own way
        return copy.copy(attr)
    new = ParamAttr.__new__(ParamAttr)
    new.__dict__.update(attr.__dict__)
    return new


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
        return unique_global_name(f"{self.name}.{suffix}", self.main_program.global_block(),
                                  self.startup_program.global_block())

    def create_parameter(self, attr, shape, dtype="float32", is_bias=False,
                         default_initializer=None):
        """A parameter in the main program's global block, with its twin and initializer op in
        the startup program's. ``attr`` False gives None (no parameter: ``bias_attr=False``).
        Default initializer: Constant(0) for biases, Xavier for weights."""
        if attr is False:
            return None
        made = ParamAttr._to_attr(attr)
        attr = _copy_attr(made) if made is attr else made   # the caller's is never changed
        shape = [int(d) for d in shape]
        if not shape or any(d <= 0 for d in shape):
            raise self.error(f"cannot create a parameter of shape {shape}: every dim must be "
                             f"known and positive (are the input's dims known?)")
        if attr.initializer is None:
            attr.initializer = default_initializer or (Constant(0.0) if is_bias else Xavier())
        if attr.name is None:
            attr.name = self._unique_param_name("b" if is_bias else "w")
        dtype = dtypes.canonical(dtype)
        # Block.create_parameter declares the startup twin and appends its initializer op.
        return self.main_program.global_block().create_parameter(shape=shape, dtype=dtype,
                                                                 **attr._to_kwargs())

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
