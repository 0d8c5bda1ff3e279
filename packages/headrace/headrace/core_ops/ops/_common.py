"""Helpers the core's op modules share: dtype groups and enum attributes, kind checks, shapes
given by tensors (fill_constant's ShapeTensor / ShapeTensorList).

A private module (leading underscore): ``register_ops_package`` skips it. headrace-tensor's
``_common`` re-exports the ones its ops share (the random ops take fill_constant's shape
inputs).
"""
from headrace import dtypes as dt
from headrace.ops import REQUIRED, Attr, In
from headrace.ops.shape import numel

__all__ = ["NUMERIC", "ELEMENT_DTYPES", "NUMERIC_DTYPES", "INT_INDEX_DTYPES", "TENSOR_KINDS",
           "dtype_attr", "enum_name", "label", "expect_kind", "expect_one_element",
           "shape_tensor_inputs", "shape_from_inputs"]

# The dtypes sum takes (bfloat16 has no NumPy dtype, so no CPU kernel could take it).
NUMERIC = ("float16", "float32", "float64", "int32", "int64")
# size_t is a wire enum value but no element type an op produces.
ELEMENT_DTYPES = tuple(n for n in dt.DTYPES if n != "size_t")
NUMERIC_DTYPES = tuple(n for n in ELEMENT_DTYPES if n != "bool")
INT_INDEX_DTYPES = ("int32", "int64")
TENSOR_KINDS = ("lod_tensor", "lod_tensor_array", "selected_rows")


def _listing(names):
    return ", ".join(f"{dt.to_proto(n)} ({n})" for n in sorted(names, key=dt.to_proto))


def dtype_attr(name="dtype", default=None, doc="element type (VarType enum)", allowed=None):
    """An int attribute holding a VarType element-type enum (``default`` a dtype name, None:
    required); a bad value lists the valid ones."""
    allowed = tuple(allowed or ELEMENT_DTYPES)
    valid = {dt.to_proto(n) for n in allowed}

    def check(v):
        if v not in valid:
            return f"is not a valid element type; valid: {_listing(allowed)}"
        return None
    return Attr(name, "int", REQUIRED if default is None else dt.to_proto(default), doc,
                check=check)


def enum_name(value):
    """The canonical dtype name of an (already checked) enum attribute value."""
    return dt.from_proto(value)


def label(meta, slot):
    """How an error names an input: its slot and variable, ``X (fc_0.tmp_0)``."""
    return f"{slot} ({meta.name})"


def expect_kind(ctx, meta, kinds, slot):
    """Fail unless the variable is of one of ``kinds``."""
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if meta.kind not in kinds:
        ctx.fail(f"input '{slot}' ({meta.name}) is a {meta.kind} variable",
                 expected=" or ".join(kinds), found=meta.kind)


def expect_one_element(ctx, meta, slot):
    """Fail unless ``meta`` holds one element (unknown dims pass)."""
    n = numel(meta.shape)
    if n not in (1, -1):
        ctx.fail(f"input '{slot}' ({meta.name}) must hold exactly one element",
                 expected="shape [1] or []", found=f"shape {list(meta.shape)}")


def shape_tensor_inputs():
    """Paddle's optional shape-from-tensor inputs of fill_constant (and the random ops)."""
    return [
        In("ShapeTensor", "1-D int tensor holding the output shape (overrides 'shape')",
           optional=True, dtypes=INT_INDEX_DTYPES),
        In("ShapeTensorList", "one-element int tensors, one per output dim (overrides 'shape')",
           optional=True, duplicable=True, dtypes=INT_INDEX_DTYPES),
    ]


def _with_attr_hint(ctx, attr, rank, source):
    """Dims of a rank-``rank`` shape given by tensors: the attribute's known dims (Paddle's
    layers write the constant dims there and -1 where a tensor decides), otherwise -1."""
    if not attr:
        return [-1] * rank
    if len(attr) != rank:
        ctx.fail(f"attribute 'shape' and input '{source}' disagree on the output rank",
                 expected=f"{rank} dims in 'shape' (or an empty 'shape')",
                 found=f"shape={attr}")
    return [d if d >= 0 else -1 for d in attr]


def shape_from_inputs(ctx, attr_name="shape"):
    """The output shape of fill_constant (and of uniform_random / gaussian_random).

    ShapeTensor beats ShapeTensorList beats the attribute, as in Paddle. Values inside shape
    tensors are unknown at build time, so those dims are -1 unless the attribute gives them.
    """
    attr = list(ctx.attr(attr_name))
    if ctx.has_input("ShapeTensor"):
        t = ctx.input("ShapeTensor")
        if t.rank != 1:
            ctx.fail(f"input 'ShapeTensor' ({t.name}) must be 1-D",
                     expected="rank 1", found=f"shape {list(t.shape)}")
        if t.shape[0] < 0:
            if not attr:
                ctx.fail(f"the length of input 'ShapeTensor' ({t.name}) is unknown, so the "
                         f"output rank is unknown",
                         expected="ShapeTensor of known length, or 'shape' with one entry per "
                                  "dim (-1 where the tensor decides)",
                         found=f"ShapeTensor shape {list(t.shape)}, shape={attr}")
            return [d if d >= 0 else -1 for d in attr]
        return _with_attr_hint(ctx, attr, t.shape[0], "ShapeTensor")
    if ctx.has_input("ShapeTensorList"):
        metas = ctx.inputs("ShapeTensorList")
        for m in metas:
            expect_one_element(ctx, m, "ShapeTensorList")
        return _with_attr_hint(ctx, attr, len(metas), "ShapeTensorList")
    bad = [d for d in attr if d < 0]
    if bad:
        ctx.fail(f"attribute '{attr_name}' has negative dims and no shape tensor gives them",
                 expected="dims >= 0", found=f"{attr_name}={attr}")
    return attr
