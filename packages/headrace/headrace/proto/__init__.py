"""The generated protobuf module of proto/framework.proto (committed; see scripts/gen_proto.py)."""
