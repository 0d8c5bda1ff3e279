"""ParamAttr: how a layer creates one of its parameters (name, initializer, learning rate,
regularizer, trainable, gradient clipping)."""
from .clip import BaseGradientClip
from .errors import LayerError
from .initializer import Initializer
from .regularizer import WeightDecayRegularizer

__all__ = ["ParamAttr"]


class ParamAttr:
    """Attributes of a parameter a layer creates.

    name: the parameter's name (default: ``<layer>.w_N`` / ``<layer>.b_N``); two layers given
    the same name share the parameter. initializer: an :mod:`headrace.initializer` object (default:
    the layer's, Xavier for weights, Constant(0) for biases). learning_rate: a multiplier of the
    optimizer's learning rate for this parameter. regularizer: an :mod:`headrace.regularizer`
    object; it wins over the optimizer's. trainable: False keeps it fixed (no gradient, no update).
    gradient_clip: a :mod:`headrace.clip` object for this parameter's gradient.
    """

    def __init__(self, name=None, initializer=None, learning_rate=1.0, regularizer=None,
                 trainable=True, gradient_clip=None, do_model_average=False):
        if name is not None and (not isinstance(name, str) or not name):
            raise LayerError(f"ParamAttr: argument 'name' must be a non-empty str, got {name!r}")
        if initializer is not None and not isinstance(initializer, Initializer):
            raise LayerError(f"ParamAttr: argument 'initializer' must be a headrace.initializer "
                             f"object, got {type(initializer).__name__}")
        if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)) \
                or learning_rate < 0:
            raise LayerError(f"ParamAttr: argument 'learning_rate' must be a number >= 0, "
                             f"got {learning_rate!r}")
        if regularizer is not None and not isinstance(regularizer, WeightDecayRegularizer):
            raise LayerError(f"ParamAttr: argument 'regularizer' must be a headrace.regularizer "
                             f"object (L1Decay, L2Decay), got {type(regularizer).__name__}")
        if gradient_clip is not None and not isinstance(gradient_clip, BaseGradientClip):
            raise LayerError(f"ParamAttr: argument 'gradient_clip' must be a headrace.clip "
                             f"object, got {type(gradient_clip).__name__}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = float(learning_rate)
        self.regularizer = regularizer
        self.trainable = bool(trainable)
        self.gradient_clip = gradient_clip
        self.do_model_average = do_model_average

    def _set_default_initializer(self, initializer):
        if self.initializer is None:
            self.initializer = initializer

    @staticmethod
    def _to_attr(arg, what="param_attr"):
        """A ParamAttr (or False: no parameter) from what a layer's ``param_attr`` /
        ``bias_attr`` argument may be: None, a ParamAttr, a name, an initializer, a
        regularizer, a bool, or a list of those (one per input)."""
        if arg is None:
            return ParamAttr()
        if isinstance(arg, (list, tuple)):
            return [ParamAttr._to_attr(a, what) for a in arg]
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, bool):
            return ParamAttr() if arg else False
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if isinstance(arg, WeightDecayRegularizer):
            return ParamAttr(regularizer=arg)
        raise LayerError(f"argument '{what}' must be a ParamAttr, a name, an initializer, a "
                         f"regularizer, a bool or None, got {type(arg).__name__} {arg!r}")

    def _to_kwargs(self):
        """Keyword arguments of ``Block.create_parameter``."""
        return {"name": self.name, "trainable": self.trainable,
                "optimize_attr": {"learning_rate": self.learning_rate},
                "regularizer": self.regularizer, "gradient_clip": self.gradient_clip,
                "initializer": self.initializer}

    def __repr__(self):
        return (f"ParamAttr(name={self.name!r}, initializer={self.initializer!r}, "
                f"learning_rate={self.learning_rate}, regularizer={self.regularizer!r}, "
                f"trainable={self.trainable}, gradient_clip={self.gradient_clip!r})")
