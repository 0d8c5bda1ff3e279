"""Building ops into a block: the small helpers everything above the IR shares.

Layers (through LayerHelper), the Variable operators (``a + b``), optimizers, regularizers and
gradient clipping all append the same few shapes of op: a temporary written by one op, a
``fill_constant`` of a scalar, a persistable variable with a name unique across the main and
startup programs. They live here, next to the IR and below every one of those users in the
import graph, so none of them re-implements them or imports another to reach them.
"""
from .. import dtypes, unique_name

__all__ = ["dtype_enum", "unique_global_name", "tmp_var", "append_simple", "constant"]


def dtype_enum(dtype):
    """The ``VarType.Type`` number of ``dtype`` (the ``dtype`` attribute of fill_constant,
    cast...)."""
    return int(dtypes.to_proto(dtype))


def unique_global_name(key, *blocks):
    """``<key>_N`` from :mod:`headrace.unique_name`, skipping names any of ``blocks`` already
    holds (a parameter and its startup twin must not collide with a loaded program's)."""
    while True:
        name = unique_name.generate(key)
        if not any(name in block.vars for block in blocks):
            return name


def tmp_var(block, key="tmp", dtype="float32", stop_gradient=False, shape=None):
    """A new temporary of ``block`` named ``<key>_N`` (unique in the program); without a
    ``shape``, the op that writes it sets it (shape inference)."""
    return block.create_var(name=block.program._unique_var_name(key), dtype=dtype,
                            shape=shape, stop_gradient=stop_gradient)


def append_simple(block, op_type, inputs, attrs=None, dtype=None, key="tmp", out_slot="Out",
                  stop_gradient=False):
    """Append a one-output op to ``block``; return its output, a new temporary ``<key>_N`` of
    ``dtype`` (default: the dtype of the first input)."""
    if dtype is None:
        first = next(iter(inputs.values()))
        dtype = (first[0] if isinstance(first, (list, tuple)) else first).dtype
    out = tmp_var(block, key, dtype, stop_gradient)
    block.append_op(op_type, inputs, {out_slot: out}, attrs or {})
    return out


def constant(block, value, dtype="float32", shape=(1,), key="tmp"):
    """A ``fill_constant`` of ``value`` with ``shape`` and ``dtype`` in ``block`` (no
    gradient flows into a constant)."""
    out = tmp_var(block, key, dtype, stop_gradient=True)
    block.append_op("fill_constant", {}, {"Out": out},
                    {"shape": list(shape), "dtype": dtype_enum(dtype), "value": float(value)})
    return out
