"""Install headrace's parts (the core and the first-party plugins) into the running environment,
compiling them once per source tree: tox's environments share the wheels.

Every tox environment used to compile all the Cython extensions again, which was most of the CI's
time on a 2-core machine. The wheels are keyed by a hash of the parts' tracked sources and of what
the build links against (the Python and NumPy versions), so an environment with the same
interpreter and NumPy installs the first one's wheels, and any change to a source file rebuilds.

    python scripts/install_parts.py WHEEL_CACHE_DIR
"""
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PARTS = ["packages/headrace", "plugins/tensor", "plugins/math", "plugins/nn", "plugins/optim",
         "plugins/control", "plugins/distributed"]
# What a build reads; compiled outputs and caches beside the sources are not part of the key.
SOURCE_SUFFIXES = {".py", ".pyx", ".pxd", ".pxi", ".h", ".c", ".cc", ".cpp", ".toml", ".cfg",
                   ".in", ".txt", ".proto"}
SKIP_DIRS = {"build", "__pycache__", ".tox", ".eggs", "dist"}


def _sources(part):
    for dirpath, dirnames, filenames in os.walk(ROOT / part):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                             and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            path = pathlib.Path(dirpath, name)
            # A .c file next to a .pyx of the same stem is Cython's output, not a source.
            if path.suffix == ".c" and path.with_suffix(".pyx").exists():
                continue
            if path.suffix in SOURCE_SUFFIXES:
                yield path


def tree_key():
    import numpy
    digest = hashlib.sha256()
    digest.update(f"{sys.version}|{sysconfig.get_platform()}|numpy {numpy.__version__}".encode())
    for part in PARTS:
        for path in _sources(part):
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def build(cache):
    """The wheels for this tree, built into ``cache/<key>`` unless they are there already."""
    target = cache / tree_key()
    if target.is_dir():
        print(f"install_parts: reusing the compiled parts in {target}", flush=True)
        return target
    cache.mkdir(parents=True, exist_ok=True)
    # Built beside the target and renamed into place: an interrupted build leaves no half set.
    staging = pathlib.Path(tempfile.mkdtemp(prefix="building-", dir=cache))
    print(f"install_parts: compiling {len(PARTS)} parts into {target} ...", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                    "--no-deps", "-w", str(staging)] + [str(ROOT / p) for p in PARTS], check=True)
    try:
        staging.rename(target)
    except OSError:                       # another environment finished the same build first
        shutil.rmtree(staging)
    return target


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    wheels = sorted(str(w) for w in build(pathlib.Path(argv[1]).resolve()).glob("*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--force-reinstall",
                    "--no-deps"] + wheels, check=True)
    # The parts' own dependencies (protobuf, pluggy, ...), resolved as a plain install would.
    subprocess.run([sys.executable, "-m", "pip", "install", "-q"] + wheels, check=True)


if __name__ == "__main__":
    main(sys.argv)
