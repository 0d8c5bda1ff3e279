"""`pip install .` here installs headrace whole: the core and every first-party op plugin, as one
distribution named ``headrace`` compiled in one build.

Each part (packages/headrace, plugins/<family>) is also a distribution of its own, installable
alone (tox and requirements-dev.txt install them so). This one used to depend on them by local
``file://`` paths, which put this machine's paths into its metadata and had pip build each part
in an isolated environment of its own (NumPy, SciPy and Cython installed seven times) one after
another. Now it reads every part's pyproject.toml (packages, package data, entry points,
dependencies, Cython modules) and builds all of them at once: one build environment, one pool of
compiler jobs, one shared Cython runtime (headrace._cyutility). Its metadata names only
dependencies from package indexes.
"""
import os
import re
import runpy

from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))
os.chdir(HERE)
CORE = "packages/headrace"
PARTS = [CORE, "plugins/tensor", "plugins/math", "plugins/nn", "plugins/optim", "plugins/control",
         # Installs without MPI (its ops list, programs rewrite); the extra below brings MPI.
         "plugins/distributed"]
build = runpy.run_path(os.path.join(CORE, "headrace", "build.py"))
METAS = {part: build["read_pyproject"](part) for part in PARTS}
PART_NAMES = {meta["project"]["name"] for meta in METAS.values()}


def _name(requirement):
    return re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9._-]+", requirement).group(0)).lower()


def _merge(requirements, into):
    """Requirements not on a part, each project once (the first spelling wins)."""
    names = {_name(r) for r in into}
    for req in requirements:
        if _name(req) not in PART_NAMES and _name(req) not in names:
            into.append(req)
            names.add(_name(req))
    return into


packages, package_dir, package_data, ext_modules = [], {}, {}, []
entry_points, install_requires, extras = {}, [], {}
for part, meta in METAS.items():
    tool, project = meta["tool"]["setuptools"], meta["project"]
    found = find_packages(where=part, include=tool["packages"]["find"]["include"])
    packages += found
    package_dir.update({p: os.path.join(part, p) for p in found if "." not in p})
    for package, patterns in tool.get("package-data", {}).items():
        package_data.setdefault(package, []).extend(patterns)
    for group, points in project.get("entry-points", {}).items():
        entry_points.setdefault(group, []).extend(f"{k} = {v}" for k, v in points.items())
    entry_points.setdefault("console_scripts", []).extend(
        f"{k} = {v}" for k, v in project.get("scripts", {}).items())
    _merge(project.get("dependencies", []), install_requires)
    for extra, reqs in project.get("optional-dependencies", {}).items():
        # The distributed plugin's "mpi" is the core's "distributed" extra.
        _merge(reqs, extras.setdefault("distributed" if extra == "mpi" else extra, []))
    ext_modules += build["part_modules"](part)

kernels = build["kernel_build"]("headrace", "headrace", ext_modules,
                                utility_dir=os.path.join(CORE, "headrace"),
                                include_path=PARTS, include_dirs=[CORE])
setup(
    packages=packages,
    package_dir=package_dir,
    package_data=package_data,
    entry_points=entry_points,
    # The demo's data set ships inside scikit-learn; tqdm draws its progress bar.
    install_requires=_merge(["scikit-learn>=1.3", "tqdm>=4.60"], install_requires),
    extras_require=extras,
    **kernels,
)
