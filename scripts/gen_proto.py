"""Regenerate headrace's committed protobuf module from proto/framework.proto.

The compiler is pinned (grpcio-tools ships protoc) so the committed file is reproducible; the test
tests/test_proto_generated.py regenerates into a temporary folder and fails when the committed
module is stale. Usage: ``python scripts/gen_proto.py [OUTDIR]``.
"""
import os
import shutil
import subprocess
import sys
import tempfile

PINNED_GRPCIO_TOOLS = "1.85.1"  # bundles libprotoc 35.1 -> gencode for protobuf runtime >= 7.35.1
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_DIR = os.path.join(ROOT, "proto")
TARGET_DIR = os.path.join(ROOT, "packages", "headrace", "headrace", "proto")


def generate(outdir):
    """Write framework_pb2.py into ``outdir``; return its path."""
    try:
        from importlib.metadata import version
        found = version("grpcio-tools")
    except Exception:
        found = None
    if found != PINNED_GRPCIO_TOOLS:
        raise SystemExit(
            f"gen_proto: needs grpcio-tools=={PINNED_GRPCIO_TOOLS} (the pinned protoc), "
            f"found {found}; "
            f"run: pip install grpcio-tools=={PINNED_GRPCIO_TOOLS}")
    with tempfile.TemporaryDirectory() as tmp:
        # Compile from a copy so the generated file's recorded source path is always
        # "framework.proto", whatever the checkout's location.
        shutil.copy(os.path.join(PROTO_DIR, "framework.proto"), tmp)
        subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", tmp,
                        f"--python_out={tmp}", os.path.join(tmp, "framework.proto")], check=True)
        os.makedirs(outdir, exist_ok=True)
        dst = os.path.join(outdir, "framework_pb2.py")
        shutil.copy(os.path.join(tmp, "framework_pb2.py"), dst)
    return dst


if __name__ == "__main__":
    print(generate(sys.argv[1] if len(sys.argv) > 1 else TARGET_DIR))
