"""Optimizers: ``minimize(loss)`` = backward pass + clipping + regularization + update ops.

The learning rate is a persistable global variable ``learning_rate_0`` (filled by the startup
program) unless a schedule Variable (:mod:`headrace.layers.learning_rate_scheduler`) is given.
A parameter's ``ParamAttr(learning_rate=m)`` multiplies it (a ``scale`` op). Optimizer state
lives in persistable accumulators ``<param>_<name>_0`` (``fc_0.w_0_velocity_0``) initialized by
the startup program. Update ops (and clipping, regularization, Adam's beta-power ``scale``
ops) carry op_role optimize, so ``Program.clone(for_test=True)`` drops them.
"""
from .autodiff import append_backward
from .callsite import pinned
from .checks import check_bool, check_number
from .clip import BaseGradientClip, append_gradient_clip_ops
from .errors import LayerError
from .framework import Parameter, Variable, default_startup_program, program_guard
from .framework.builder import append_simple, unique_global_name
from .framework.gc_pause import pausing_gc
from .framework.program import OP_ROLE_LRSCHED, OP_ROLE_OPTIMIZE
from .initializer import Constant
from .regularizer import WeightDecayRegularizer, append_regularization_ops

__all__ = ["Optimizer", "SGD", "Momentum", "Adagrad", "Adam", "AdamW", "RMSProp",
           "SGDOptimizer", "MomentumOptimizer", "AdagradOptimizer", "AdamOptimizer",
           "RMSPropOptimizer"]


class Optimizer:
    """Base class. Subclasses set ``type`` and implement ``_append_optimize_op`` (and
    ``_create_accumulators`` / ``_finish_update`` when they keep state)."""

    type = None

    def __init__(self, learning_rate, regularization=None, grad_clip=None, name=None):
        fn = type(self).__name__
        if isinstance(learning_rate, Variable):
            if tuple(learning_rate.shape) not in ((1,), ()):
                raise LayerError(f"{fn}: a learning_rate Variable must have shape [1] or [] "
                                 f"(0-D, as Paddle 3's), found {list(learning_rate.shape)}")
        else:
            learning_rate = check_number(fn, "learning_rate", learning_rate, minimum=0.0)
        if regularization is not None and not isinstance(regularization, WeightDecayRegularizer):
            raise LayerError(f"{fn}: argument 'regularization' must be an L1Decay or L2Decay, "
                             f"got {type(regularization).__name__}")
        if grad_clip is not None and not isinstance(grad_clip, BaseGradientClip):
            raise LayerError(f"{fn}: argument 'grad_clip' must be a GradientClipBy* object, "
                             f"got {type(grad_clip).__name__}")
        self._learning_rate = learning_rate
        self.regularization = regularization
        self._grad_clip = grad_clip
        self._name = name
        self._learning_rate_map = {}   # program -> learning-rate Variable
        self._accumulators = {}        # accumulator name -> {(program, param name): Variable}

    # -- the learning rate -----------------------------------------------------------------
    def _create_global_learning_rate(self, program, startup):
        if program in self._learning_rate_map:
            return
        lr = self._learning_rate
        if isinstance(lr, Variable):
            if lr.block.program is not program:
                raise LayerError(f"{type(self).__name__}: the learning_rate Variable "
                                 f"'{lr.name}' belongs to another program than the loss")
            self._learning_rate_map[program] = lr
            return
        gblock = program.global_block()
        name = unique_global_name("learning_rate", gblock, startup.global_block())
        var = gblock.create_var(name=name, shape=[1], dtype="float32", persistable=True,
                                stop_gradient=True)
        Constant(lr)(var, startup.global_block())
        self._learning_rate_map[program] = var

    def _global_learning_rate(self, program):
        return self._learning_rate_map.get(program)

    def _create_param_lr(self, param):
        """The learning rate of ``param``: the global one times its ParamAttr multiplier."""
        program = param.block.program
        lr = self._global_learning_rate(program)
        mult = param.optimize_attr.get("learning_rate", 1.0)
        if isinstance(mult, Variable):
            return mult
        if float(mult) == 1.0:
            return lr
        block = program.global_block()
        with program.op_role_guard(OP_ROLE_LRSCHED | OP_ROLE_OPTIMIZE):
            return append_simple(block, "scale", {"X": lr}, {"scale": float(mult)},
                                 key=f"{param.name}_learning_rate", stop_gradient=True)

    # -- accumulators ----------------------------------------------------------------------
    def _add_accumulator(self, name, param, dtype=None, fill_value=0.0, shape=None):
        """A persistable ``<param>_<name>_N`` in the main program, filled with ``fill_value``
        by the startup program (shape and dtype of the parameter by default)."""
        per_param = self._accumulators.setdefault(name, {})
        program = param.block.program
        if (program, param.name) in per_param:
            raise LayerError(f"{type(self).__name__}: accumulator '{name}' of parameter "
                             f"'{param.name}' already exists")
        gblock = program.global_block()
        sblock = self._startup.global_block()
        var_name = unique_global_name(f"{param.name}_{name}", gblock, sblock)
        var = gblock.create_var(name=var_name, shape=list(shape or param.shape),
                                dtype=dtype or param.dtype, persistable=True,
                                stop_gradient=True)
        Constant(float(fill_value))(var, sblock)
        per_param[(program, param.name)] = var
        return var

    def _get_accumulator(self, name, param):
        try:
            return self._accumulators[name][(param.block.program, param.name)]
        except KeyError:
            raise LayerError(f"{type(self).__name__}: no accumulator '{name}' for parameter "
                             f"'{param.name}'") from None

    # -- what subclasses provide -----------------------------------------------------------
    def _create_accumulators(self, block, parameters):
        pass

    def _append_optimize_op(self, block, param_and_grad):
        raise NotImplementedError

    def _finish_update(self, block, params_grads):
        return []

    # -- the passes ------------------------------------------------------------------------
    def backward(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Append the backward pass; ``[(param, grad)]`` of the trainable parameters."""
        if not isinstance(loss, Variable):
            raise LayerError(f"{type(self).__name__}.minimize: argument 'loss' must be a "
                             f"Variable, got {type(loss).__name__}")
        if parameter_list is not None:
            if not isinstance(parameter_list, (list, tuple, set)) or not all(
                    isinstance(p, (Parameter, str)) for p in parameter_list):
                raise LayerError(f"{type(self).__name__}.minimize: argument 'parameter_list' "
                                 f"must be a list of Parameters or parameter names")
        return append_backward(loss, parameter_list, no_grad_set)

    @pausing_gc
    def apply_gradients(self, params_grads, startup_program=None):
        """Clip, regularize and append the update ops for ``[(param, grad)]``; returns the
        update ops (Adam's beta-power ``scale`` ops included)."""
        params_grads = append_gradient_clip_ops(params_grads, self._grad_clip)
        params_grads = append_regularization_ops(params_grads, self.regularization)
        return self._create_optimization_pass(params_grads, startup_program)

    def _create_optimization_pass(self, params_grads, startup_program=None):
        if not params_grads:
            return []
        program = params_grads[0][0].block.program
        self._startup = startup_program or default_startup_program()
        block = program.global_block()
        with program_guard(program, self._startup), program.op_role_guard(OP_ROLE_OPTIMIZE), \
                pinned(self._own_code()):
            self._create_global_learning_rate(program, self._startup)
            self._create_accumulators(block, [p for p, g in params_grads
                                              if g is not None and p.trainable])
            ops = []
            for param, grad in params_grads:
                if grad is None or not param.trainable:
                    continue
                op = self._append_optimize_op(block, (param, grad))
                op.set_attr("op_role_var", [param.name, grad.name])
                ops.append(op)
            ops.extend(self._finish_update(block, params_grads))
        return ops

    _PASS_METHODS = ("_create_global_learning_rate", "_create_param_lr", "_add_accumulator",
                     "_create_accumulators", "_append_optimize_op", "_finish_update")

    def _own_code(self):
        """Whether the optimization pass runs only headrace's code (no user subclass's
        method): then every op it appends has the caller's source line (callsite.pinned)."""
        cls = type(self)
        return all(getattr(cls, m).__module__.startswith("headrace.")
                   for m in self._PASS_METHODS)

    @pausing_gc
    def minimize(self, loss, startup_program=None, parameter_list=None, no_grad_set=None):
        """Build training: backward pass, clipping, regularization and the update ops.

        Returns ``(optimize_ops, params_grads)``; the gradients are those of the backward pass
        (``param.grad``; regularization adds to them in place, clipping writes new variables
        that the update ops read). ``startup_program`` receives the learning rate
        and accumulator initializers (default: the default startup program).
        ``parameter_list`` limits training to those parameters; ``no_grad_set`` names
        variables whose gradients are not computed.
        """
        params_grads = self.backward(loss, startup_program, parameter_list, no_grad_set)
        if not params_grads:
            raise LayerError(f"{type(self).__name__}.minimize: no trainable parameter reaches "
                             f"the loss '{loss.name}'")
        return self.apply_gradients(params_grads, startup_program), params_grads

    def __repr__(self):
        return f"<{type(self).__name__} learning_rate={self._learning_rate!r}>"


class SGD(Optimizer):
    """param -= lr * grad (``sgd``)."""
    type = "sgd"

    def __init__(self, learning_rate, regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, regularization, grad_clip, name)

    def _append_optimize_op(self, block, param_and_grad):
        p, g = param_and_grad
        return block.append_op("sgd", {"Param": p, "Grad": g,
                                       "LearningRate": self._create_param_lr(p)},
                               {"ParamOut": p})


class Momentum(Optimizer):
    """v = momentum v + g; p -= lr v, or lr (g + momentum v) with ``use_nesterov``."""
    type = "momentum"
    _velocity = "velocity"

    def __init__(self, learning_rate, momentum, use_nesterov=False, regularization=None,
                 grad_clip=None, name=None):
        super().__init__(learning_rate, regularization, grad_clip, name)
        self._momentum = check_number("Momentum", "momentum", momentum, minimum=0.0)
        self._use_nesterov = check_bool("Momentum", "use_nesterov", use_nesterov)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._velocity, p)

    def _append_optimize_op(self, block, param_and_grad):
        p, g = param_and_grad
        v = self._get_accumulator(self._velocity, p)
        return block.append_op(
            "momentum",
            {"Param": p, "Grad": g, "Velocity": v, "LearningRate": self._create_param_lr(p)},
            {"ParamOut": p, "VelocityOut": v},
            {"mu": self._momentum, "use_nesterov": self._use_nesterov})


class Adagrad(Optimizer):
    """moment += g^2; p -= lr g / (sqrt(moment) + epsilon)."""
    type = "adagrad"
    _moment = "moment"

    def __init__(self, learning_rate, epsilon=1.0e-6, regularization=None, grad_clip=None,
                 name=None, initial_accumulator_value=0.0):
        super().__init__(learning_rate, regularization, grad_clip, name)
        self._epsilon = check_number("Adagrad", "epsilon", epsilon, minimum=0.0)
        self._initial = check_number("Adagrad", "initial_accumulator_value",
                                     initial_accumulator_value, minimum=0.0)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment, p, fill_value=self._initial)

    def _append_optimize_op(self, block, param_and_grad):
        p, g = param_and_grad
        m = self._get_accumulator(self._moment, p)
        return block.append_op(
            "adagrad",
            {"Param": p, "Grad": g, "Moment": m, "LearningRate": self._create_param_lr(p)},
            {"ParamOut": p, "MomentOut": m}, {"epsilon": self._epsilon})


class Adam(Optimizer):
    """Adam (Kingma & Ba). The bias corrections use the accumulators beta1_pow_acc and
    beta2_pow_acc ([1], starting at beta1 and beta2), advanced by ``scale`` ops after the
    ``adam`` ops."""
    type = "adam"
    _moment1, _moment2 = "moment1", "moment2"
    _beta1_pow, _beta2_pow = "beta1_pow_acc", "beta2_pow_acc"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 regularization=None, grad_clip=None, name=None, lazy_mode=False):
        super().__init__(learning_rate, regularization, grad_clip, name)
        self._beta1 = check_number("Adam", "beta1", beta1, minimum=0.0, maximum=1.0)
        self._beta2 = check_number("Adam", "beta2", beta2, minimum=0.0, maximum=1.0)
        if self._beta1 == 1.0 or self._beta2 == 1.0:
            raise LayerError("Adam: arguments 'beta1' and 'beta2' must be < 1")
        self._epsilon = check_number("Adam", "epsilon", epsilon, minimum=0.0)
        self._lazy_mode = check_bool("Adam", "lazy_mode", lazy_mode)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._moment1, p)
            self._add_accumulator(self._moment2, p)
            self._add_accumulator(self._beta1_pow, p, fill_value=self._beta1, shape=[1])
            self._add_accumulator(self._beta2_pow, p, fill_value=self._beta2, shape=[1])

    def _append_optimize_op(self, block, param_and_grad):
        p, g = param_and_grad
        m1, m2 = self._get_accumulator(self._moment1, p), self._get_accumulator(self._moment2, p)
        return block.append_op(
            self.type,
            {"Param": p, "Grad": g, "LearningRate": self._create_param_lr(p),
             "Moment1": m1, "Moment2": m2,
             "Beta1Pow": self._get_accumulator(self._beta1_pow, p),
             "Beta2Pow": self._get_accumulator(self._beta2_pow, p)},
            {"ParamOut": p, "Moment1Out": m1, "Moment2Out": m2},
            {"beta1": self._beta1, "beta2": self._beta2, "epsilon": self._epsilon,
             "lazy_mode": self._lazy_mode, **self._decay_attrs()})

    def _decay_attrs(self):
        return {}

    def _finish_update(self, block, params_grads):
        ops = []
        for p, g in params_grads:
            if g is None or not p.trainable:
                continue
            for acc, beta in ((self._beta1_pow, self._beta1), (self._beta2_pow, self._beta2)):
                var = self._get_accumulator(acc, p)
                ops.append(block.append_op("scale", {"X": var}, {"Out": var},
                                           {"scale": beta, "op_role_var": [p.name, g.name]}))
        return ops


class AdamW(Adam):
    """Adam with decoupled weight decay (Paddle's AdamW, the ``adamw`` op): each step first
    decays every parameter to p - learning_rate * weight_decay * p, then takes Adam's step.
    The decay replaces a regularizer (as in Paddle, where weight_decay is the coefficient)."""
    type = "adamw"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 weight_decay=0.01, grad_clip=None, name=None, lazy_mode=False):
        super().__init__(learning_rate, beta1, beta2, epsilon, None, grad_clip, name, lazy_mode)
        self._coeff = check_number("AdamW", "weight_decay", weight_decay, minimum=0.0)

    def _decay_attrs(self):
        return {"coeff": self._coeff, "with_decay": True}


class RMSProp(Optimizer):
    """mean_square = rho ms + (1 - rho) g^2; moment = momentum moment + lr g / sqrt(ms
    (- mean_grad^2 when centered) + epsilon); p -= moment."""
    type = "rmsprop"
    _momentum_acc, _mean_square, _mean_grad = "momentum", "mean_square", "mean_grad"

    def __init__(self, learning_rate, rho=0.95, epsilon=1.0e-6, momentum=0.0, centered=False,
                 regularization=None, grad_clip=None, name=None):
        super().__init__(learning_rate, regularization, grad_clip, name)
        self._rho = check_number("RMSProp", "rho", rho, minimum=0.0, maximum=1.0)
        self._epsilon = check_number("RMSProp", "epsilon", epsilon, minimum=0.0)
        self._momentum = check_number("RMSProp", "momentum", momentum, minimum=0.0)
        self._centered = check_bool("RMSProp", "centered", centered)

    def _create_accumulators(self, block, parameters):
        for p in parameters:
            self._add_accumulator(self._momentum_acc, p)
            self._add_accumulator(self._mean_square, p)
            self._add_accumulator(self._mean_grad, p)

    def _append_optimize_op(self, block, param_and_grad):
        p, g = param_and_grad
        mom = self._get_accumulator(self._momentum_acc, p)
        ms = self._get_accumulator(self._mean_square, p)
        mg = self._get_accumulator(self._mean_grad, p)
        return block.append_op(
            "rmsprop",
            {"Param": p, "Grad": g, "Moment": mom, "MeanSquare": ms, "MeanGrad": mg,
             "LearningRate": self._create_param_lr(p)},
            {"ParamOut": p, "MomentOut": mom, "MeanSquareOut": ms, "MeanGradOut": mg},
            {"epsilon": self._epsilon, "decay": self._rho, "momentum": self._momentum,
             "centered": self._centered})


# Fluid's long names.
SGDOptimizer = SGD
MomentumOptimizer = Momentum
AdagradOptimizer = Adagrad
AdamOptimizer = Adam
RMSPropOptimizer = RMSProp
