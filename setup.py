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
}

setup(
    name="headrace-all",
    version="0.1.0",
    description="headrace: the core and every first-party op plugin",
    packages=[],
    install_requires=[f"{name} @ file://{os.path.join(HERE, path)}" for name, path in PARTS.items()]
    # The demo's data set ships inside scikit-learn; tqdm draws its progress bar.
    + ["scikit-learn>=1.3", "tqdm>=4.60"],
)
