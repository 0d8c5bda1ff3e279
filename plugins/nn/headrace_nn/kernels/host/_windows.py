"""Window attributes that conv2d and pool2d parse alike (their kernels' own checks: the
definitions check the same attributes when an op is appended, but a kernel can be made from
attributes that never went through a definition, e.g. a loaded program)."""
from ...ops._common import resolve_paddings

INT_MAX = 2147483647
# padding_algorithm -> the kernels' code for it.
ALGORITHMS = {"EXPLICIT": 0, "SAME": 1, "VALID": 2}
SAME, VALID = 1, 2


def four_paddings(paddings):
    """[top, bottom, left, right] from 2 (both sides) or 4 values, or None when they are not
    2 or 4 values >= 0 (the caller raises its op's error)."""
    pads = list(paddings)
    if len(pads) == 2:
        pads = [pads[0], pads[0], pads[1], pads[1]]
    if len(pads) != 4 or min(pads) < 0:
        return None
    return pads


def layout_and_algorithm(attrs, op):
    """(NHWC or not, padding_algorithm's code), refusing an unknown algorithm."""
    algo = attrs.get("padding_algorithm", "EXPLICIT")
    code = ALGORITHMS.get(algo, -1)
    if code < 0:
        raise ValueError(f"{op}: unknown padding_algorithm {algo!r}")
    return attrs.get("data_format", "NCHW") == "NHWC", code


def plane_paddings(pads, algo, H, W, sh, sw, kh, kw):
    """(top, bottom, left, right) for an H x W plane: ``pads`` as given (EXPLICIT), none
    (VALID), or SAME's out = ceil(in / stride) with the odd unit after (the shape rule's
    resolve_paddings)."""
    if algo == VALID:
        return 0, 0, 0, 0
    if algo == SAME:
        return tuple(resolve_paddings(pads, "SAME", [H, W], [sh, sw], [kh, kw]))
    return tuple(pads)
