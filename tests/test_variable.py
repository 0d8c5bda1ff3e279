"""Variable and Parameter: every setter writes the VarDesc, so desc and Python always agree."""
import numpy as np
import pytest

import headrace
from headrace import VariableError, dtypes
from headrace.proto import framework_pb2 as pb


def _fresh_desc(var):
    """The VarDesc as it is in the program's own ProgramDesc (not the Variable's reference)."""
    block_desc = var.block.program.desc.blocks[var.block.idx]
    return next(d for d in block_desc.vars if d.name == var.name)


@pytest.mark.parametrize("kind, field", [("lod_tensor", "lod_tensor"),
                                         ("lod_tensor_array", "tensor_array")])
def test_declaration_fills_the_desc(prog, kind, field):
    v = prog.global_block().create_var("v", shape=[None, 3, -7], dtype=np.float64, lod_level=2,
                                       persistable=True, stop_gradient=True, type=kind,
                                       need_check_feed=True)
    d = _fresh_desc(v)
    assert d.type.type == {"lod_tensor": pb.VarType.LOD_TENSOR,
                           "lod_tensor_array": pb.VarType.LOD_TENSOR_ARRAY}[kind]
    sub = getattr(d.type, field)
    assert list(sub.tensor.dims) == [-1, 3, -1] and sub.tensor.data_type == pb.VarType.FP64
    assert sub.lod_level == 2
    assert d.persistable and d.stop_gradient and d.need_check_feed and not d.is_parameter
    assert (v.shape, v.dtype, v.lod_level, v.ndim) == ((-1, 3, -1), "float64", 2, 3)


@pytest.mark.parametrize("attr, value, read", [
    ("shape", [4, None], lambda d: list(d.type.lod_tensor.tensor.dims) == [4, -1]),
    ("shape", (), lambda d: list(d.type.lod_tensor.tensor.dims) == []),
    ("dtype", "int64", lambda d: d.type.lod_tensor.tensor.data_type == pb.VarType.INT64),
    ("dtype", np.dtype("float16"), lambda d: d.type.lod_tensor.tensor.data_type == pb.VarType.FP16),
    ("dtype", pb.VarType.BOOL, lambda d: d.type.lod_tensor.tensor.data_type == pb.VarType.BOOL),
    ("lod_level", 3, lambda d: d.type.lod_tensor.lod_level == 3),
    ("persistable", True, lambda d: d.persistable),
    ("stop_gradient", True, lambda d: d.stop_gradient),
    ("need_check_feed", True, lambda d: d.need_check_feed),
])
def test_setters_write_the_desc(prog, attr, value, read, assert_consistent):
    v = prog.global_block().create_var("v", shape=[2, 3], dtype="float32")
    rev = prog.revision
    setattr(v, attr, value)
    assert read(_fresh_desc(v)) and read(v.desc)
    assert prog.revision > rev
    assert_consistent(prog)


@pytest.mark.parametrize("attr, value", [
    ("shape", None), ("shape", [2, "x"]), ("shape", [1 << 64]), ("dtype", "float128"),
    ("dtype", object()), ("lod_level", -1), ("lod_level", None), ("lod_level", 1.5),
])
def test_bad_setter_values_change_nothing(prog, attr, value):
    v = prog.global_block().create_var("v", shape=[2, 3], dtype="float32", lod_level=1)
    before = prog.serialize_to_string()
    with pytest.raises(VariableError):
        setattr(v, attr, value)
    assert prog.serialize_to_string() == before
    assert (v.shape, v.dtype, v.lod_level) == ((2, 3), "float32", 1)


@pytest.mark.parametrize("kind", ["feed_minibatch", "fetch_list", "step_scopes"])
@pytest.mark.parametrize("attr, value", [("shape", [1]), ("dtype", "float32"), ("lod_level", 1)])
def test_non_tensor_kinds_have_no_shape_dtype_or_lod(prog, kind, attr, value):
    v = prog.global_block().create_var("v", type=kind, persistable=True)
    assert (v.shape, v.dtype, v.lod_level) == ((), None, 0)
    before = prog.serialize_to_string()
    with pytest.raises(VariableError, match=f"kind {kind}"):
        setattr(v, attr, value)
    assert prog.serialize_to_string() == before


def test_selected_rows_has_shape_and_dtype_but_no_lod(prog):
    v = prog.global_block().create_var("v", shape=[10, 4], dtype="float32", type="selected_rows")
    d = _fresh_desc(v)
    assert list(d.type.selected_rows.dims) == [10, 4] and not d.type.HasField("lod_tensor")
    v.shape = [20, 4]
    assert list(_fresh_desc(v).type.selected_rows.dims) == [20, 4]
    with pytest.raises(VariableError, match="no LoD"):
        v.lod_level = 1


@pytest.mark.parametrize("spelling, name", [
    ("float32", "float32"), ("FP32", "float32"), ("float", "float32"), ("double", "float64"),
    (np.float16, "float16"), (np.dtype("int8"), "int8"), ("long", "int64"), ("bf16", "bfloat16"),
    (pb.VarType.INT32, "int32"), (np.int64(pb.VarType.UINT8), "uint8"), ("uint64", "size_t"),
])
def test_dtype_spellings(prog, spelling, name):
    assert dtypes.canonical(spelling) == name
    v = prog.global_block().create_var("v", shape=[1], dtype=spelling)
    assert v.dtype == name and dtypes.from_proto(v.desc.type.lod_tensor.tensor.data_type) == name


@pytest.mark.parametrize("bad", ["float13", "", None, 3.0, True, 16, object()])
def test_unknown_dtypes(bad):
    with pytest.raises(VariableError, match="unknown dtype"):
        dtypes.canonical(bad)


def test_meta_is_the_inference_view(prog):
    v = prog.global_block().create_var("v", shape=[-1, 2], dtype="int32", lod_level=1)
    m = v.meta()
    assert (m.name, m.shape, m.dtype, m.lod_level, m.kind, m.rank) == \
        ("v", (-1, 2), "int32", 1, "lod_tensor", 2)


# -- parameters -------------------------------------------------------------------------------

def test_parameter_flags_and_trainable(prog, assert_consistent):
    init = headrace.initializer.Constant(0.5)
    with headrace.program_guard(prog, headrace.Program()):  # the init op's startup program
        w = prog.global_block().create_parameter("w", shape=[2, 2], initializer=init)
    d = _fresh_desc(w)
    assert d.is_parameter and d.persistable and not d.stop_gradient
    assert w.is_parameter and w.persistable and w.trainable
    w.trainable = False
    assert _fresh_desc(w).stop_gradient and w.stop_gradient
    w.stop_gradient = False
    assert w.trainable
    assert w.python_state() == {"optimize_attr": {"learning_rate": 1.0}, "regularizer": None,
                                "gradient_clip": None, "initializer": init}
    assert_consistent(prog)


def test_parsed_parameter_keeps_its_desc_flags(prog):
    """Loading wraps a parameter's VarDesc as it is: no flag is rewritten or added."""
    w = prog.global_block().create_parameter("w", shape=[2])
    w.persistable = False   # unusual, but a loader must keep what the file says
    w.desc.ClearField("stop_gradient")
    data = prog.serialize_to_string()
    again = headrace.Program.parse_from_string(data, registry=prog.registry)
    assert again.serialize_to_string() == data
    w2 = again.global_block().var("w")
    assert isinstance(w2, headrace.Parameter) and not w2.persistable and w2.trainable
    assert not again.global_block().desc.vars[0].HasField("stop_gradient")


# -- text -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, text", [
    (dict(shape=[-1, 3], dtype="float32"), "v : float32[-1, 3]"),
    (dict(shape=[2], dtype="int64", lod_level=1, persistable=True),
     "v : int64[2] lod_level=1  [persistable]"),
    (dict(shape=[2], dtype="int64", type="lod_tensor_array"), "v : int64[2] (lod_tensor_array)"),
    (dict(type="feed_minibatch", persistable=True), "v : feed_minibatch  [persistable]"),
    (dict(shape=[1], need_check_feed=True, stop_gradient=True),
     "v : float32[1]  [stop_gradient, data]"),
])
def test_variable_to_string(prog, kwargs, text):
    v = prog.global_block().create_var("v", **kwargs)
    assert v.to_string() == text and text in repr(v)


def test_parameter_to_string(prog):
    w = prog.global_block().create_parameter("w", shape=[3])
    assert w.to_string() == "w : float32[3]  [parameter, persistable]"


def test_variables_are_hashable_graph_nodes(prog):
    g = prog.global_block()
    a, b = g.create_var("a", shape=[1]), g.create_var("b", shape=[1])
    assert len({a: 1, b: 2, g.var("a"): 3}) == 2
