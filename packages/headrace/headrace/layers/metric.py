"""Metric layers: topk and accuracy (no gradients)."""
from ..checks import check_int, check_variable
from ..errors import LayerError
from ..layer_helper import LayerHelper

__all__ = ["topk", "accuracy"]


def topk(input, k, name=None):
    """(values, int64 indices) of the k largest entries along the last dim (``top_k``)."""
    helper = LayerHelper("top_k", name=name)
    check_variable("topk", "input", input)
    k = check_int("topk", "k", k, minimum=1)
    if input.shape and input.shape[-1] >= 0 and k > input.shape[-1]:
        raise LayerError(f"topk: argument 'k' ({k}) exceeds the last dim of input "
                         f"'{input.name}' (shape {list(input.shape)})")
    values = helper.create_variable_for_type_inference(input.dtype, stop_gradient=True)
    indices = helper.create_variable_for_type_inference("int64", stop_gradient=True)
    helper.append_op("top_k", {"X": input}, {"Out": values, "Indices": indices}, {"k": k})
    return values, indices


def accuracy(input, label, k=1, correct=None, total=None):
    """The fraction of rows whose int64 ``label`` [N, 1] is among the top ``k`` entries of
    ``input`` [N, C] (``top_k`` then ``accuracy``); a 0-D float32 Variable (Paddle 3)."""
    helper = LayerHelper("accuracy")
    check_variable("accuracy", "input", input)
    check_variable("accuracy", "label", label, ("int64", "int32"))
    values, indices = topk(input, k)
    acc = helper.create_variable_for_type_inference("float32", stop_gradient=True)
    correct = correct if correct is not None else \
        helper.create_variable_for_type_inference("int32", stop_gradient=True)
    total = total if total is not None else \
        helper.create_variable_for_type_inference("int32", stop_gradient=True)
    helper.append_op("accuracy", {"Out": values, "Indices": indices, "Label": label},
                     {"Accuracy": acc, "Correct": correct, "Total": total})
    return acc
