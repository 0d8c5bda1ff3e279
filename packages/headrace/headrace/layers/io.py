"""Data layers: the variables a program is fed."""
from .. import dtypes
from ..checks import check_bool, check_int
from ..errors import LayerError
from ..framework.variable import KINDS
from ..layer_helper import LayerHelper

__all__ = ["data"]


def data(name, shape, dtype="float32", lod_level=0, append_batch_size=True, stop_gradient=True,
         type="lod_tensor"):
    """Declare a fed variable ``name`` in the main program's global block.

    shape: the dims of one example; a batch dim -1 is put in front, unless
    ``append_batch_size`` is False or ``shape`` already holds an unknown dim (-1 or None), as in
    ``data("img", shape=[-1, 1, 8, 8])``. Data variables are checked against what is fed
    (``need_check_feed``) and get no gradient (``stop_gradient``).
    """
    helper = LayerHelper("data", name=name)
    if not isinstance(name, str) or not name:
        raise LayerError(f"data: argument 'name' must be a non-empty str, got {name!r}")
    if not isinstance(shape, (list, tuple)):
        raise LayerError(f"data: argument 'shape' of '{name}' must be a list of ints, "
                         f"got {shape!r}")
    dims = []
    for d in shape:
        if d is None:
            d = -1
        d = check_int("data", "shape", d, minimum=-1)
        if d == 0:
            raise LayerError(f"data: argument 'shape' of '{name}' has a 0 dim: {list(shape)}")
        dims.append(d)
    if check_bool("data", "append_batch_size", append_batch_size) and -1 not in dims:
        dims = [-1] + dims
    try:
        dtype = dtypes.canonical(dtype)
    except Exception:
        raise LayerError(f"data: argument 'dtype' of '{name}' is not a dtype: {dtype!r}") \
            from None
    if type not in KINDS:
        raise LayerError(f"data: argument 'type' must be one of {', '.join(KINDS)}, "
                         f"got {type!r}")
    return helper.main_program.global_block().create_var(
        name=name, shape=dims, dtype=dtype,
        lod_level=check_int("data", "lod_level", lod_level, minimum=0),
        stop_gradient=check_bool("data", "stop_gradient", stop_gradient), type=type,
        need_check_feed=True)
