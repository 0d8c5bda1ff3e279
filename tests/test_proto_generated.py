"""The committed framework_pb2.py is what the pinned protoc makes of proto/framework.proto, and
its messages carry the wire numbers and types of the reference (ir-wire-format.md)."""
import importlib.util
from pathlib import Path

import pytest
from google.protobuf.descriptor import FieldDescriptor as FD

from headrace.proto import framework_pb2 as pb

ROOT = Path(__file__).resolve().parent.parent
COMMITTED = ROOT / "packages" / "headrace" / "headrace" / "proto" / "framework_pb2.py"


def _gen_proto():
    spec = importlib.util.spec_from_file_location("gen_proto_under_test",
                                                  ROOT / "scripts" / "gen_proto.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_module_is_up_to_date(tmp_path):
    gen = _gen_proto()
    assert Path(gen.PROTO_DIR) == ROOT / "proto" and Path(gen.TARGET_DIR) == COMMITTED.parent
    try:
        out = Path(gen.generate(str(tmp_path / "out")))
    except SystemExit as e:  # the pinned grpcio-tools is missing
        pytest.fail(str(e))
    assert out == tmp_path / "out" / "framework_pb2.py"
    assert out.read_bytes() == COMMITTED.read_bytes(), \
        "framework_pb2.py is stale: run `python scripts/gen_proto.py`"


def test_generated_code_does_not_depend_on_the_checkout_path():
    text = COMMITTED.read_text()
    assert "# source: framework.proto\n" in text and str(ROOT) not in text


T = {"int32": FD.TYPE_INT32, "int64": FD.TYPE_INT64, "float": FD.TYPE_FLOAT,
     "double": FD.TYPE_DOUBLE, "string": FD.TYPE_STRING, "bool": FD.TYPE_BOOL,
     "enum": FD.TYPE_ENUM, "message": FD.TYPE_MESSAGE}

# message: "field=number:type" ("*" for repeated), from the reference.
REFERENCE = {
    "ProgramDesc": "blocks=1:message* version=4:message op_version_map=5:message",
    "Version": "version=1:int64",
    "OpVersion": "version=1:int32",
    "OpVersionMap": "pair=1:message*",
    "OpVersionMap.OpVersionPair": "op_name=1:string op_version=2:message",
    "BlockDesc": "idx=1:int32 parent_idx=2:int32 vars=3:message* ops=4:message* "
                 "forward_block_idx=5:int32",
    "OpDesc": "inputs=1:message* outputs=2:message* type=3:string attrs=4:message* "
              "is_target=5:bool",
    "OpDesc.Var": "parameter=1:string arguments=2:string*",
    "OpDesc.Attr": "name=1:string type=2:enum i=3:int32 f=4:float s=5:string ints=6:int32* "
                   "floats=7:float* strings=8:string* b=10:bool bools=11:bool* "
                   "block_idx=12:int32 l=13:int64 blocks_idx=14:int32* longs=15:int64* "
                   "float64s=16:double* var_name=17:string vars_name=18:string* "
                   "float64=19:double",
    "VarDesc": "name=1:string type=2:message persistable=3:bool need_check_feed=4:bool "
               "is_parameter=5:bool stop_gradient=6:bool attrs=7:message*",
    "VarDesc.Attr": "name=1:string type=2:enum i=3:int32 s=4:string ints=5:int32*",
    "VarType": "type=1:enum selected_rows=2:message lod_tensor=3:message "
               "tensor_array=4:message reader=5:message tuple=7:message string=8:message "
               "strings=9:message vocab=10:message sparse_coo=11:message sparse_csr=12:message",
    "VarType.TensorDesc": "data_type=1:enum dims=2:int64*",
    "VarType.LoDTensorDesc": "tensor=1:message lod_level=2:int32",
    "VarType.LoDTensorArrayDesc": "tensor=1:message lod_level=2:int32",
    "VarType.ReaderDesc": "lod_tensor=1:message*",
    "VarType.Tuple": "element_type=1:enum*",
}
FIELDS = [(msg, *spec.replace("=", ":").split(":"))
          for msg, specs in REFERENCE.items() for spec in specs.split()]


def _message(path):
    obj = pb
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj.DESCRIPTOR


@pytest.mark.parametrize("message, name, number, type_", FIELDS,
                         ids=[f"{m}.{n}" for m, n, _, _ in FIELDS])
def test_field_numbers_and_types(message, name, number, type_):
    field = _message(message).fields_by_name[name]
    repeated = type_.endswith("*")
    assert field.number == int(number)
    assert field.type == T[type_.rstrip("*")]
    assert field.is_repeated == repeated and not field.is_required
    if repeated and field.type != FD.TYPE_MESSAGE and field.type != FD.TYPE_STRING:
        assert not field.is_packed  # proto2: written unpacked, as Paddle writes them


@pytest.mark.parametrize("message", list(REFERENCE))
def test_no_undocumented_fields(message):
    declared = {f.name for f in _message(message).fields}
    assert declared == {spec.split("=")[0] for spec in REFERENCE[message].split()}


@pytest.mark.parametrize("path, number", [
    ("OpDesc.Attr.float64", 19), ("VarDesc.stop_gradient", 6), ("BlockDesc.forward_block_idx", 5),
    ("ProgramDesc.version", 4)])
def test_the_numbers_everyone_checks(path, number):
    message, name = path.rsplit(".", 1)
    assert _message(message).fields_by_name[name].number == number


def test_reserved_and_defaults():
    assert {2, 3}.isdisjoint(_message("ProgramDesc").fields_by_number)
    assert 9 not in _message("OpDesc.Attr").fields_by_number
    assert {20, 21}.isdisjoint(_message("OpDesc.Attr").fields_by_number)  # kept as unknown
    assert pb.BlockDesc().forward_block_idx == -1
    assert pb.VarType.LoDTensorDesc().lod_level == 0
    assert pb.VarType.TensorDesc(dims=[1, -1]).SerializeToString() == \
        b"\x10\x01\x10" + b"\xff" * 9 + b"\x01"


VAR_TYPES = dict(BOOL=0, INT16=1, INT32=2, INT64=3, FP16=4, FP32=5, FP64=6, LOD_TENSOR=7,
                 SELECTED_ROWS=8, FEED_MINIBATCH=9, FETCH_LIST=10, STEP_SCOPES=11,
                 LOD_RANK_TABLE=12, LOD_TENSOR_ARRAY=13, PLACE_LIST=14, READER=15, RAW=17,
                 TUPLE=18, SIZE_T=19, UINT8=20, INT8=21, BF16=22, COMPLEX64=23, COMPLEX128=24,
                 STRING=25, STRINGS=26, VOCAB=27, FEED_LIST=28, PSTRING=29, SPARSE_COO=30,
                 SPARSE_CSR=31)
ATTR_TYPES = dict(INT=0, FLOAT=1, STRING=2, INTS=3, FLOATS=4, STRINGS=5, BOOLEAN=6, BOOLEANS=7,
                  BLOCK=8, LONG=9, BLOCKS=10, LONGS=11, FLOAT64S=12, VAR=13, VARS=14, FLOAT64=15,
                  SCALAR=16, SCALARS=17)


@pytest.mark.parametrize("enum, table", [(pb.VarType.Type, VAR_TYPES), (pb.AttrType, ATTR_TYPES)],
                         ids=["VarType.Type", "AttrType"])
def test_enum_values(enum, table):
    assert dict(enum.items()) == table
    assert pb.VarType.FP32 == 5 and pb.FLOAT64 == 15


def test_attr_codec_uses_the_matching_value_fields():
    """Each headrace attr type writes the value field the reference pairs with its AttrType."""
    from headrace.ops.attrs import ATTR_TYPES as CODEC
    field_of = {"INT": "i", "FLOAT": "f", "STRING": "s", "INTS": "ints", "FLOATS": "floats",
                "STRINGS": "strings", "BOOLEAN": "b", "BOOLEANS": "bools", "BLOCK": "block_idx",
                "LONG": "l", "BLOCKS": "blocks_idx", "LONGS": "longs", "FLOAT64S": "float64s",
                "VAR": "var_name", "VARS": "vars_name", "FLOAT64": "float64"}
    assert len(CODEC) == len(field_of)
    by_enum = {ATTR_TYPES[k]: v for k, v in field_of.items()}
    for name, (enum, field) in CODEC.items():
        assert by_enum[enum] == field, name
