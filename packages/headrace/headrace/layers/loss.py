"""Loss layers: cross_entropy, softmax_with_cross_entropy, square_error_cost, mse.

They return per-example losses (take their ``mean`` for the scalar loss a backward pass needs),
except ``mse``, which is that mean already (seeds: ``cost = layer.mse(y, l)``).
"""
from ..checks import check_bool, check_int, check_variable
from ..layer_helper import LayerHelper
from .ops import mean

__all__ = ["cross_entropy", "softmax_with_cross_entropy", "square_error_cost", "mse",
           "mse_loss"]

_INT_LABELS = ("int64", "int32")


def cross_entropy(input, label, soft_label=False, ignore_index=-100):
    """-log(input[label]) per example for probabilities ``input`` [..., C] and int64 labels
    [..., 1] (``cross_entropy2``); with ``soft_label``, -sum(label * log(input)) for label
    distributions shaped like input (``cross_entropy``)."""
    helper = LayerHelper("cross_entropy")
    check_variable("cross_entropy", "input", input)
    soft_label = check_bool("cross_entropy", "soft_label", soft_label)
    check_variable("cross_entropy", "label", label,
                   (input.dtype,) if soft_label else _INT_LABELS)
    ignore_index = check_int("cross_entropy", "ignore_index", ignore_index)
    out = helper.create_variable_for_type_inference(input.dtype)
    if soft_label:
        helper.append_op("cross_entropy", {"X": input, "Label": label}, {"Y": out},
                         {"soft_label": True, "ignore_index": ignore_index})
        return out
    xshape = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    match_x = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    helper.append_op("cross_entropy2", {"X": input, "Label": label},
                     {"Y": out, "XShape": xshape, "MatchX": match_x},
                     {"ignore_index": ignore_index})
    return out


def softmax_with_cross_entropy(logits, label, soft_label=False, ignore_index=-100,
                               numeric_stable_mode=True, return_softmax=False, axis=-1):
    """Cross entropy of softmax(logits) against ``label``, computed stably in one op. Returns
    the loss (shape of logits with dim ``axis`` = 1), or (loss, softmax) with
    ``return_softmax``."""
    helper = LayerHelper("softmax_with_cross_entropy")
    check_variable("softmax_with_cross_entropy", "logits", logits)
    soft_label = check_bool("softmax_with_cross_entropy", "soft_label", soft_label)
    check_variable("softmax_with_cross_entropy", "label", label,
                   (logits.dtype,) if soft_label else _INT_LABELS)
    rank = len(logits.shape)
    axis = check_int("softmax_with_cross_entropy", "axis", axis, minimum=-max(rank, 1),
                     maximum=max(rank - 1, 0))
    softmax = helper.create_variable_for_type_inference(logits.dtype)
    loss = helper.create_variable_for_type_inference(logits.dtype)
    helper.append_op("softmax_with_cross_entropy", {"Logits": logits, "Label": label},
                     {"Softmax": softmax, "Loss": loss},
                     {"soft_label": soft_label,
                      "ignore_index": check_int("softmax_with_cross_entropy", "ignore_index",
                                                ignore_index),
                      "numeric_stable_mode": check_bool("softmax_with_cross_entropy",
                                                        "numeric_stable_mode",
                                                        numeric_stable_mode),
                      "axis": axis})
    if check_bool("softmax_with_cross_entropy", "return_softmax", return_softmax):
        return loss, softmax
    return loss


def square_error_cost(input, label):
    """(input - label) ** 2 elementwise (``elementwise_sub`` then ``square``)."""
    helper = LayerHelper("square_error_cost")
    check_variable("square_error_cost", "input", input)
    check_variable("square_error_cost", "label", label, (input.dtype,))
    minus = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("elementwise_sub", {"X": input, "Y": label}, {"Out": minus})
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("square", {"X": minus}, {"Out": out})
    return out


def mse(input, label):
    """The mean squared error, mean((input - label) ** 2) over every element: a 0-D loss
    (``square_error_cost`` then ``mean``). ``label`` has ``input``'s dtype and a
    shape ``elementwise_sub`` accepts."""
    check_variable("mse", "input", input)
    check_variable("mse", "label", label, (input.dtype,))
    return mean(square_error_cost(input, label))


mse_loss = mse  # Fluid's name
