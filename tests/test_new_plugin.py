"""`headrace new-plugin`: the skeleton it writes, and the documented steps followed for real in
a fresh virtual environment where only the core is installed."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from headrace import cli
from headrace.errors import HeadraceError
from headrace.plugin_template import new_plugin, template_files

REPO = Path(__file__).resolve().parents[1]


def test_the_skeleton_has_one_op_family_under_one_module_name(tmp_path):
    root = Path(new_plugin("my-ops", str(tmp_path)))
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert files == [
        "README.md", "my_ops/__init__.py", "my_ops/kernels/__init__.py",
        "my_ops/kernels/cpu/__init__.py", "my_ops/kernels/cpu/softplus.pyx", "my_ops/layers.py",
        "my_ops/ops/__init__.py", "my_ops/ops/softplus.py", "my_ops/plugin.py",
        "my_ops/reference/__init__.py", "my_ops/reference/softplus.py", "pyproject.toml",
        "setup.py", "tests/conftest.py", "tests/test_softplus.py"]
    for path in root.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert "{{" not in text and "}}" not in text, f"placeholder left in {path}"
            if path.suffix == ".py":
                compile(text, str(path), "exec")  # valid Python after substitution
    pyproject = (root / "pyproject.toml").read_text()
    assert 'name = "my-ops"' in pyproject and 'my_ops = "my_ops.plugin"' in pyproject
    # The isolated build needs only what the package index has: no headrace at build time.
    requires = re.search(r"requires = \[(.*)\]", pyproject).group(1)
    assert "headrace" not in requires and "Cython" in requires and "numpy" in requires
    kernel = (root / "my_ops/kernels/cpu/softplus.pyx").read_text()
    assert not re.search(r"^\s*(from|import|cimport)\s+headrace", kernel, re.M)


def test_templates_ship_as_package_data():
    files = template_files()
    assert "{{pkg}}/kernels/cpu/softplus.pyx" in files and "setup.py" in files
    pyproject = (REPO / "packages/headrace/pyproject.toml").read_text()
    assert '"headrace.plugin_template" = ["files/*.tmpl", "files/**/*.tmpl"]' in pyproject


@pytest.mark.parametrize("name", ["MyOps", "1ops", "my ops", "my--ops", "ops-", "import",
                                  "headrace", "headrace-extra", "tests", "", "a/b", "../x"])
def test_bad_names_are_refused_before_anything_is_written(tmp_path, name):
    with pytest.raises(HeadraceError, match="new-plugin"):
        new_plugin(name, str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_an_existing_directory_is_never_overwritten(tmp_path):
    (tmp_path / "myops").mkdir()
    (tmp_path / "myops" / "keep.txt").write_text("mine")
    with pytest.raises(HeadraceError, match="already exists"):
        new_plugin("myops", str(tmp_path))
    assert [p.name for p in (tmp_path / "myops").iterdir()] == ["keep.txt"]


def test_the_command(tmp_path, capsys):
    out = []

    class Out:
        def write(self, s):
            out.append(s)

        def flush(self):
            pass
    assert cli.main(["new-plugin", "myops", "--dir", str(tmp_path)], out=Out()) == 0
    assert "pip install" in "".join(out) and (tmp_path / "myops" / "setup.py").is_file()
    # An existing directory is the user's to change: a usage error, exit status 2.
    assert cli.main(["new-plugin", "myops", "--dir", str(tmp_path)]) == 2
    assert "already exists" in capsys.readouterr().err


def _run(args, **kw):
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kw)
    assert done.returncode == 0, (f"{' '.join(map(str, args))} exited {done.returncode}\n"
                                  f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
    return done.stdout


def test_documented_steps_in_a_fresh_venv_with_only_the_core(tmp_path):
    """README, "Writing an op plugin": headrace installed, `headrace new-plugin NAME`,
    `python -m pip install ./NAME`, the new op in a program with autodiff, the plugin's tests.
    The venv has the core and this plugin only: no first-party op plugin."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv])
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    py, headrace = bindir / "python", bindir / "headrace"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
           and not k.startswith("HEADRACE_")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    pip = [py, "-m", "pip", "install", "-q"]
    _run(pip + [REPO / "packages" / "headrace", "pytest"], env=env, cwd=tmp_path)
    _run([headrace, "new-plugin", "myops"], env=env, cwd=tmp_path)
    _run(pip + ["./myops"], env=env, cwd=tmp_path)  # the documented command, build isolated

    listing = _run([headrace, "plugins"], env=env, cwd=tmp_path)
    assert [line.split(":")[0] + ":" + line.split(":")[1] for line in listing.splitlines()
            if ": " in line and not line.startswith("note")] == ["headrace:core",
                                                                   "myops:myops"], listing
    program = (
        "import numpy as np\n"
        "import headrace as hr\n"
        "from myops.layers import softplus\n"
        "main, startup = hr.Program(), hr.Program()\n"
        "with hr.program_guard(main, startup):\n"
        "    x = hr.layers.data('x', shape=[1], dtype='float64', append_batch_size=False)\n"
        "    w = hr.layers.create_parameter([1], 'float64', name='w',\n"
        "        default_initializer=hr.initializer.Constant(-1.0))\n"
        "    loss = hr.layers.scale(softplus(hr.layers.sums([x, w]), beta=0.5), scale=2.0)\n"
        "    [(w, g)] = hr.append_backward(loss)\n"
        "exe = hr.Executor(hr.CPUPlace())\n"
        "exe.run(startup)\n"
        "l, gw = exe.run(main, feed={'x': np.array([3.0])}, fetch_list=[loss, g])\n"
        "z = 0.5 * (3.0 - 1.0)\n"
        "np.testing.assert_allclose(l, 2.0 * np.logaddexp(0, z) / 0.5)\n"
        "np.testing.assert_allclose(gw, 2.0 / (1 + np.exp(-z)))\n"
        "print('ok', float(l[0]), float(gw[0]))\n")
    assert _run([py, "-c", program], env=env, cwd=tmp_path).startswith("ok")
    tests = _run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "myops/tests"],
                 env=env, cwd=tmp_path)
    assert re.search(r"\b9 passed\b", tests), tests


def test_a_plugin_that_cimports_the_core_builds_without_isolation(tmp_path):
    """docs/kernels.md: kernels may cimport headrace.kernels.common when the plugin's setup.py
    uses headrace.build and is installed with --no-build-isolation."""
    root = Path(new_plugin("coreuser", str(tmp_path)))
    pyx = root / "coreuser/kernels/cpu/softplus.pyx"
    text = pyx.read_text().replace(
        "import numpy as np\n",
        "import numpy as np\nfrom headrace.kernels.common cimport contiguous\n", 1)
    text = text.replace('a = np.require(x, requirements=("C", "A"))',
                        "a = contiguous(x)  # the core's helper", 1)
    pyx.write_text(text)
    (root / "setup.py").write_text(
        "from setuptools import setup\n"
        "from headrace.build import cython_extensions\n"
        "setup(ext_modules=cython_extensions('coreuser'))\n")
    # A wheel, not an install: this environment's plugin set stays as it is.
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation", "--no-deps",
          "-w", tmp_path / "wheels", root], cwd=tmp_path)
    wheels = list((tmp_path / "wheels").glob("coreuser-*.whl"))
    assert len(wheels) == 1
    import zipfile
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert any(re.match(r"coreuser/kernels/cpu/softplus\..*\.so$", n) for n in names), names


def _readme_block(containing):
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    found = [b for b in blocks if containing in b]
    assert len(found) == 1, f"README: expected one python block with {containing!r}"
    return found[0]


def test_the_readme_plugin_example_passes_the_definition_checks():
    """The README's example op (infer=same_as("X"), grad_of's default rule) is what
    headrace.testing.definition_problems accepts, and its layer function builds a program."""
    import headrace as hr
    from headrace.ops import build_registry, hookimpl, registry_guard
    from headrace.testing import definition_problems

    ns = {}
    exec(compile(_readme_block("OpDef("), "README.md", "exec"), ns)

    class Plugin:
        @hookimpl
        def headrace_register_ops(self, registry):
            for opdef in ns["OPS"]:
                registry.add_op(opdef)
    registry = build_registry(plugins=[("readme", Plugin())], autoload=False)
    for opdef in ns["OPS"]:
        assert definition_problems(opdef, "readme", "myops.ops", registry=registry) == [], \
            opdef.type
    layers = {}
    exec(compile(_readme_block("LayerHelper("), "README.md", "exec"), layers)
    with registry_guard(registry):
        main = hr.Program()
        with hr.program_guard(main, hr.Program()):
            x = hr.layers.data("x", shape=[-1, 3], dtype="float32")
            y = layers["softplus"](x, beta=2.0)
    assert [op.type for op in main.global_block().ops] == ["myops_softplus"]
    assert y.shape == x.shape and y.dtype == "float32"


@pytest.mark.parametrize("files, message", [
    ({"softplus.pyx": "KERNELS = []\n"}, "never compiled: softplus.pyx"),
    ({}, "no kernels listed"),
])
def test_a_kernel_package_left_uncompiled_is_reported(tmp_path, monkeypatch, files, message):
    """Installed from a pyproject.toml alone, a plugin ships its .pyx sources (or nothing) in
    place of kernel modules: that is an error naming the plugin, not an op without kernels."""
    from headrace.errors import KernelNotFoundError
    from headrace.ops import PluginWarning, build_registry, hookimpl
    pkg = f"uncompiled_{uuid_hex()}"
    cpu = tmp_path / pkg / "kernels" / "cpu"
    cpu.mkdir(parents=True)
    for d in (tmp_path / pkg, tmp_path / pkg / "kernels", cpu):
        (d / "__init__.py").write_text("")
    for name, text in files.items():
        (cpu / name).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))

    class Plugin:
        @hookimpl
        def headrace_register_kernels(self, registry):
            registry.add_kernel_package(f"{pkg}.kernels.cpu", "cpu")
    registry = build_registry(plugins=[("uncompiled", Plugin())], autoload=False)
    with pytest.warns(PluginWarning, match=message):
        with pytest.raises(KernelNotFoundError, match=message):
            registry.kernel("uncompiled_op", "cpu", "float64")
    assert any(message in str(e) and "uncompiled" in str(e)
               for e in registry.unavailable["cpu"])


def uuid_hex():
    import uuid
    return uuid.uuid4().hex[:8]
