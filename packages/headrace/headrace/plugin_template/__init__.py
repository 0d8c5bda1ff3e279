"""``headrace new-plugin NAME``: write a working op plugin skeleton.

The skeleton is a separate distribution with one op family (``<pkg>_softplus``, a softplus
with a sharpness attribute, and its gradient), laid out as the first-party plugins are:
``ops/softplus.py`` (definition, shape rule, gradient maker), ``kernels/cpu/softplus.pyx``
(Cython), ``reference/softplus.py`` (NumPy oracle and sample), ``layers.py`` (a layer
function), ``tests/test_softplus.py``. Its kernels cimport only NumPy, so its isolated build
needs Cython and NumPy from the package index and nothing of headrace, which is on no index:
``pip install ./NAME`` works first time on any machine where headrace is installed.
"""
import keyword
import os
import re
import shutil
from importlib import resources

from ..errors import HeadraceError

__all__ = ["new_plugin", "template_files"]

# A distribution name that is also (after '-' -> '_') a Python package name: lowercase, so the
# name pip records is the name written.
_NAME = re.compile(r"^[a-z][a-z0-9_-]*[a-z0-9]$|^[a-z]$")


def _package_name(name):
    if not isinstance(name, str) or not _NAME.match(name) or "--" in name or "__" in name:
        raise HeadraceError(
            f"new-plugin: bad plugin name {name!r}\n  expected: lowercase letters, digits, '-' "
            f"or '_', starting with a letter (e.g. 'myops' or 'my-ops')\n  found:    {name!r}")
    pkg = name.replace("-", "_")
    if keyword.iskeyword(pkg) or pkg in ("headrace", "test", "tests") or \
            pkg.startswith("headrace_"):
        raise HeadraceError(f"new-plugin: {name!r} would shadow a module ({pkg}); choose "
                            f"another name")
    return pkg


def template_files():
    """``{relative path: text}`` of the skeleton with ``{{pkg}}`` placeholders in paths and
    texts (the files are stored as ``*.tmpl`` so that nothing imports or lints them here)."""
    root = resources.files(__name__).joinpath("files")
    out = {}

    def walk(node, prefix):
        for child in node.iterdir():
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            elif child.name.endswith(".tmpl"):
                out[rel[:-len(".tmpl")]] = child.read_text(encoding="utf-8")
    walk(root, "")
    return out


def new_plugin(name, directory="."):
    """Write the skeleton of plugin ``name`` into ``directory/name``; return that path.

    An existing path is never overwritten. Every file is written under a temporary name first
    and the finished tree renamed into place, so an interrupted run leaves nothing half made.
    """
    pkg = _package_name(name)
    target = os.path.join(directory, name)
    if os.path.lexists(target):
        raise HeadraceError(f"new-plugin: {target} already exists; choose another name or "
                            f"directory (nothing was written)")
    if not os.path.isdir(directory):
        raise HeadraceError(f"new-plugin: directory {directory} does not exist")
    values = {"{{dist}}": name, "{{pkg}}": pkg, "{{op}}": f"{pkg}_softplus"}
    staging = os.path.join(directory, f".{name}.new-plugin-{os.getpid()}")
    try:
        for rel, text in sorted(template_files().items()):
            for key, value in values.items():
                rel, text = rel.replace(key, value), text.replace(key, value)
            path = os.path.join(staging, *rel.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target

