"""Debugging layers: ``Print`` (Paddle's ``fluid.layers.Print``)."""
from ..checks import check_bool, check_int, check_variable
from ..errors import LayerError
from ..layer_helper import LayerHelper

__all__ = ["Print"]

_PHASES = ("forward", "backward", "both")


def Print(input, first_n=-1, message=None, summarize=20, print_tensor_name=True,
          print_tensor_type=True, print_tensor_shape=True, print_tensor_layout=True,
          print_tensor_lod=True, print_phase="both"):
    """Print ``input`` to stdout each time the program computes it, and return it passed
    through (use the returned Variable downstream: the gradient reaching it is what prints in
    the backward pass).

    first_n: print only the first ``first_n`` runs (-1: every run); message: printed before
    the tensor; summarize: how many values (-1: all); print_tensor_*: which lines to print
    (layout: accepted for Paddle's signature, headrace tensors have none); print_phase:
    ``"forward"`` (the value), ``"backward"`` (its gradient) or ``"both"``. The text is
    Paddle's (``Variable: name``, then ``- message``, ``- lod``, ``- place``, ``- shape``,
    ``- dtype``, ``- data``)."""
    check_variable("Print", "input", input)
    if message is not None and not isinstance(message, str):
        raise LayerError(f"Print: argument 'message' must be a str or None, got "
                         f"{type(message).__name__}")
    first_n = check_int("Print", "first_n", first_n)
    summarize = check_int("Print", "summarize", summarize)
    if summarize < -1:
        raise LayerError(f"Print: argument 'summarize' must be -1 (all values) or a count "
                         f">= 0, got {summarize}")
    if not isinstance(print_phase, str) or print_phase.lower() not in _PHASES:
        raise LayerError(f"Print: argument 'print_phase' must be one of {list(_PHASES)}, "
                         f"got {print_phase!r}")
    flags = {f"print_tensor_{k}": check_bool("Print", f"print_tensor_{k}", v)
             for k, v in (("name", print_tensor_name), ("type", print_tensor_type),
                          ("shape", print_tensor_shape), ("layout", print_tensor_layout),
                          ("lod", print_tensor_lod))}
    helper = LayerHelper("print")
    out = helper.create_variable_for_type_inference(input.dtype)
    helper.append_op("print", {"In": input}, {"Out": out},
                     {"first_n": first_n, "message": message or "", "summarize": summarize,
                      "print_phase": print_phase.upper(), **flags})
    return out
