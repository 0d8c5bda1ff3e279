"""Learning-rate schedules: a [1] float32 Variable recomputed on every run of the program.

Each schedule reads a persistable int64 step counter ``@LR_DECAY_COUNTER@`` (initialized in the
startup program to begin - 1 and advanced by an ``increment`` op put at the front of the main
program, so the first run sees step 0) and computes the rate from it with ordinary ops (scale,
elementwise ops, floor, cos, comparisons + cast instead of control flow). The ops carry
op_role LRSched, so ``clone(for_test=True)`` drops them and the backward pass ignores them.
Pass the result as an optimizer's ``learning_rate``.
"""
import functools
import math

from ..checks import check_bool, check_int, check_number
from ..errors import LayerError
from ..framework import Variable, default_main_program
from ..framework.program import OP_ROLE_LRSCHED
from ..initializer import Constant
from ..layer_helper import LayerHelper
from . import ops, tensor

__all__ = ["autoincreased_step_counter", "exponential_decay", "natural_exp_decay",
           "inverse_time_decay", "polynomial_decay", "piecewise_decay", "cosine_decay",
           "noam_decay", "linear_lr_warmup"]

LR_COUNTER_NAME = "@LR_DECAY_COUNTER@"


def autoincreased_step_counter(counter_name=None, begin=1, step=1):
    """A persistable int64 [1] counter, ``begin`` on the first run and advanced by ``step``
    at the start of every run. Asking again for the same name returns the same counter."""
    helper = LayerHelper("global_step_counter")
    name = counter_name or "@STEP_COUNTER@"
    begin = check_int("autoincreased_step_counter", "begin", begin)
    step = check_int("autoincreased_step_counter", "step", step)
    counter, fresh = helper.create_or_get_global_variable(
        name=name, dtype="int64", shape=[1], persistable=True, stop_gradient=True)
    if fresh:
        helper.set_variable_initializer(counter, Constant(float(begin - step)))
        helper.main_program.global_block().prepend_op(
            "increment", {"X": counter}, {"Out": counter}, {"step": float(step)})
    return counter


def _lr_schedule(fn):
    """Run a schedule builder with op_role LRSched in the default main program."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with default_main_program().op_role_guard(OP_ROLE_LRSCHED):
            return fn(*args, **kwargs)
    return wrapper


def _step(begin=0):
    """The decay step counter as float32."""
    return tensor.cast(autoincreased_step_counter(LR_COUNTER_NAME, begin, 1), "float32")


def _rate(fn, name, value):
    return check_number(fn, name, value, minimum=0.0)


def _decay_args(fn, learning_rate, decay_steps, decay_rate, staircase):
    """(lr, rate, step / decay_steps) checked for one of the three step-ratio schedules; the
    ratio is floored with ``staircase``."""
    lr = _rate(fn, "learning_rate", learning_rate)
    steps = check_number(fn, "decay_steps", decay_steps, above=0.0)
    rate = _rate(fn, "decay_rate", decay_rate)
    div = _step() / steps
    if check_bool(fn, "staircase", staircase):
        div = ops.floor(div)
    return lr, rate, div


@_lr_schedule
def exponential_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """lr * decay_rate ** (step / decay_steps) (the exponent floored with ``staircase``)."""
    lr, rate, div = _decay_args("exponential_decay", learning_rate, decay_steps, decay_rate,
                                staircase)
    return (rate ** div) * lr


@_lr_schedule
def natural_exp_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """lr * exp(-decay_rate * step / decay_steps)."""
    lr, rate, div = _decay_args("natural_exp_decay", learning_rate, decay_steps, decay_rate,
                                staircase)
    return ops.exp(div * -rate) * lr


@_lr_schedule
def inverse_time_decay(learning_rate, decay_steps, decay_rate, staircase=False):
    """lr / (1 + decay_rate * step / decay_steps)."""
    lr, rate, div = _decay_args("inverse_time_decay", learning_rate, decay_steps, decay_rate,
                                staircase)
    return lr / (div * rate + 1.0)


@_lr_schedule
def polynomial_decay(learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0,
                     cycle=False):
    """(lr - end) * (1 - step / decay_steps) ** power + end, step capped at decay_steps; with
    ``cycle`` decay_steps grows to the next multiple of itself past step instead."""
    lr = _rate("polynomial_decay", "learning_rate", learning_rate)
    steps = check_number("polynomial_decay", "decay_steps", decay_steps, above=0.0)
    end = _rate("polynomial_decay", "end_learning_rate", end_learning_rate)
    power = check_number("polynomial_decay", "power", power)
    step = _step()
    if check_bool("polynomial_decay", "cycle", cycle):
        # ceil(step / steps), at least 1 (step 0 is in the first cycle)
        div = ops.elementwise_max(ops.ceil(step / steps), tensor.fill_constant([1], "float32", 1))
        total = div * steps
    else:
        step = ops.elementwise_min(step, tensor.fill_constant([1], "float32", steps))
        total = tensor.fill_constant([1], "float32", steps)
    frac = 1.0 - step / total
    return (frac ** power) * (lr - end) + end


@_lr_schedule
def piecewise_decay(boundaries, values):
    """values[0] while step < boundaries[0], values[i] while boundaries[i-1] <= step <
    boundaries[i], values[-1] after the last boundary (sum of comparisons cast to float)."""
    if not isinstance(boundaries, (list, tuple)) or not isinstance(values, (list, tuple)) \
            or len(values) != len(boundaries) + 1:
        raise LayerError(f"piecewise_decay: argument 'values' must be a list with one more "
                         f"entry than 'boundaries', got values={values!r} for "
                         f"boundaries={boundaries!r}")
    bounds = [check_number("piecewise_decay", "boundaries", b) for b in boundaries]
    if any(b2 <= b1 for b1, b2 in zip(bounds, bounds[1:])):
        raise LayerError(f"piecewise_decay: argument 'boundaries' must increase, got {bounds}")
    vals = [check_number("piecewise_decay", "values", v) for v in values]
    step = _step()
    lr = tensor.fill_constant([1], "float32", vals[0])
    for b, before, after in zip(bounds, vals, vals[1:]):
        reached = tensor.cast(step >= b, "float32")
        lr = lr + reached * (after - before)
    return lr


@_lr_schedule
def cosine_decay(learning_rate, step_each_epoch, epochs):
    """lr * 0.5 * (cos(floor(step / step_each_epoch) * pi / epochs) + 1)."""
    lr = _rate("cosine_decay", "learning_rate", learning_rate)
    per_epoch = check_number("cosine_decay", "step_each_epoch", step_each_epoch, above=0.0)
    epochs = check_number("cosine_decay", "epochs", epochs, above=0.0)
    epoch = ops.floor(_step() / per_epoch)
    return (ops.cos(epoch * (math.pi / epochs)) + 1.0) * (lr * 0.5)


@_lr_schedule
def noam_decay(d_model, warmup_steps, learning_rate=1.0):
    """lr * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5), step from 1."""
    d_model = check_number("noam_decay", "d_model", d_model, above=0.0)
    warmup = check_number("noam_decay", "warmup_steps", warmup_steps, above=0.0)
    lr = _rate("noam_decay", "learning_rate", learning_rate)
    step = _step(begin=1)
    a = step ** -0.5
    b = step * (warmup ** -1.5)
    return ops.elementwise_min(a, b) * (lr * d_model ** -0.5)


@_lr_schedule
def linear_lr_warmup(learning_rate, warmup_steps, start_lr, end_lr):
    """start_lr + (end_lr - start_lr) * step / warmup_steps for step < warmup_steps, then
    ``learning_rate`` (a number or a schedule Variable)."""
    warmup = check_number("linear_lr_warmup", "warmup_steps", warmup_steps, above=0.0)
    start = check_number("linear_lr_warmup", "start_lr", start_lr)
    end = check_number("linear_lr_warmup", "end_lr", end_lr)
    if not isinstance(learning_rate, Variable):
        learning_rate = tensor.fill_constant([1], "float32",
                                             _rate("linear_lr_warmup", "learning_rate",
                                                   learning_rate))
    step = _step()
    warming = tensor.cast(step < warmup, "float32")
    warm_lr = step * ((end - start) / warmup) + start
    return warming * warm_lr + (1.0 - warming) * learning_rate
