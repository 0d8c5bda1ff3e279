"""A plugin's failure is its own: any exception (SystemExit included) in its import, its hooks
or its kernel packages withdraws what it registered and nothing else; a KeyboardInterrupt stops
the build but leaves no half-built registry; malformed KERNELS lists are reported, not crashes;
and threads making their first runs together all get their kernels."""
import contextlib
import sys
import threading
import uuid
import warnings

import numpy as np
import pytest

import headrace as hr
import headrace_math.plugin as math_plugin
from headrace.errors import KernelNotFoundError, PluginError
from headrace.ops import In, OpDef, Out, PluginWarning, build_registry, hookimpl, registry_guard
from headrace.ops import plugins as plugins_mod
from headrace.ops.shape import same_as
from headrace.runtime import executor as executor_mod
from headrace.testing.plugin_dists import (eager_plugin, first_party_plugin, package_plugin,
                                            write_plugin_distribution)

MATH = first_party_plugin("math")   # "headrace:math" where `pip install .` installed it whole


@pytest.fixture
def path(tmp_path, monkeypatch):
    """A folder on sys.path; the modules imported from it are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if getattr(sys.modules[name], "__file__", "") and \
                str(tmp_path) in sys.modules[name].__file__:
            del sys.modules[name]


def _write_package(folder, package, modules):
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text("")
    for name, source in modules.items():
        (folder / package / f"{name}.py").write_text(source)


@contextlib.contextmanager
def _caught():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def _messages(caught):
    return [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]


# -- BaseException in a plugin's import or hook ----------------------------------------------------

RAISING_PLUGIN = '''
from headrace.ops import In, OpDef, Out, hookimpl
from headrace.ops.shape import same_as

def _maybe(where):
    if where == {where!r}:
        raise {error}

_maybe("import")

@hookimpl
def headrace_register_devices(registry):
    registry.add_device("{op}_dev")
    _maybe("devices")

@hookimpl
def headrace_register_ops(registry):
    registry.add_op(OpDef("{op}", inputs=[In("X")], outputs=[Out("Out")], infer=same_as("X")))
    _maybe("ops")

@hookimpl
def headrace_register_kernels(registry):
    registry.add_kernel("{op}", "cpu", len)
    _maybe("kernels")
'''


def _raising_dist(folder, where, error):
    uid = uuid.uuid4().hex[:8]
    op, module = f"raising_{uid}", f"hr_raising_{uid}"
    name = write_plugin_distribution(folder, f"aaa-raising-{uid}", {
        module: RAISING_PLUGIN.format(where=where, error=error, op=op)})
    return name, op


@pytest.mark.parametrize("where", ["import", "devices", "ops", "kernels"])
@pytest.mark.parametrize("error", ["SystemExit(3)", "GeneratorExit()", "RuntimeError('boom')"])
def test_anything_a_plugin_raises_withdraws_that_plugin_only(path, where, error):
    name, op = _raising_dist(path, where, error)
    with _caught() as caught:
        reg = build_registry()
    assert name in reg.failed and name not in reg.plugins
    assert any(f"'{name}' failed" in m and error.split("(")[0] in m for m in _messages(caught))
    assert op not in reg and f"{op}_dev" not in reg.known_devices()
    assert reg.kernels_for(op) == {}
    assert reg.plugin_of("relu") == MATH and reg.kernel("relu", "cpu", "float32")


def test_keyboard_interrupt_in_the_default_build_publishes_nothing(path):
    flag = path / "interrupted"
    uid = uuid.uuid4().hex[:8]
    module = f"hr_interrupt_{uid}"
    name = write_plugin_distribution(path, f"aaa-interrupt-{uid}", {module: (
        "import pathlib\nfrom headrace.ops import hookimpl\n\n"
        "@hookimpl\ndef headrace_register_kernels(registry):\n"
        f"    flag = pathlib.Path({str(flag)!r})\n"
        "    if not flag.exists():  # Ctrl-C the first time only\n"
        "        flag.touch()\n"
        "        raise KeyboardInterrupt\n")})
    old = plugins_mod.set_default_registry(None)
    try:
        with pytest.raises(KeyboardInterrupt):
            plugins_mod.default_registry()
        assert plugins_mod._default is None  # nothing half built is left as the default
        with _caught():
            reg = plugins_mod.default_registry()  # the next use builds it whole
        assert name in reg.plugins and reg.failed == {}
        assert reg.kernel("relu", "cpu", "float32").plugin == MATH
    finally:
        plugins_mod.set_default_registry(old)


def test_keyboard_interrupt_in_a_hook_takes_back_what_it_added():
    class Interrupted:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(OpDef("half_op", inputs=[In("X")], outputs=[Out("Out")],
                                  infer=same_as("X")))
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):  # stops the build: no registry is returned
        build_registry(plugins=[("int", Interrupted)], autoload=False)
    reg = build_registry(autoload=False)
    with pytest.raises(KeyboardInterrupt):
        with reg._running("int", "headrace_register_ops"):  # what build_registry runs hooks in
            Interrupted.headrace_register_ops(reg)
    assert "half_op" not in reg and len(reg) == len(build_registry(autoload=False))


# -- BaseException in a kernel package --------------------------------------------------------

@pytest.mark.parametrize("error", ["SystemExit(2)", "RuntimeError('no')"])
def test_a_kernel_package_that_raises_is_unavailable_and_the_others_load(path, error):
    package = f"hr_sysexit_kernels_{uuid.uuid4().hex[:8]}"
    _write_package(path, package, {"a": "KERNELS = [('pkg_op', len, None)]\n",
                                   "b": f"raise {error}\n"})
    reg = build_registry(plugins=[(MATH, math_plugin),
                                  ("third", package_plugin(package, "pkg_op"))],
                         autoload=False)
    with pytest.warns(PluginWarning, match=f"plugin 'third': loading cpu kernels from {package} "
                                           f"failed: {error.split('(')[0]}"):
        assert reg.kernel("relu", "cpu", "float32").plugin == MATH
    assert "third" in reg.plugins and "pkg_op" in reg  # the plugin stays; its package does not
    with pytest.raises(KernelNotFoundError, match=error.split("(")[0]):
        reg.kernel("pkg_op", "cpu")  # module a's kernel was taken back with its package


def test_keyboard_interrupt_in_a_kernel_import_leaves_the_device_to_load_again(path):
    package = f"hr_interrupt_kernels_{uuid.uuid4().hex[:8]}"
    flag = path / "interrupted"
    _write_package(path, package, {"k": (
        "import pathlib\n"
        f"flag = pathlib.Path({str(flag)!r})\n"
        "if not flag.exists():\n    flag.touch()\n    raise KeyboardInterrupt\n"
        "KERNELS = [('pkg_op', len, ['float32'])]\n")})
    reg = build_registry(plugins=[(MATH, math_plugin),
                                  ("third", package_plugin(package, "pkg_op"))],
                         autoload=False)
    with pytest.raises(KeyboardInterrupt):
        reg.kernel("relu", "cpu", "float32")
    assert reg.kernel("relu", "cpu", "float32").plugin == MATH  # not left without CPU kernels
    assert reg.kernel("pkg_op", "cpu", "float32").fn is len     # the package loaded this time
    assert reg.unavailable == {} and reg.failed == {}


def test_systemexit_importing_a_kernel_by_name_is_a_plugin_error(path):
    (path / "hr_exit_kernel.py").write_text("raise SystemExit(1)\n")

    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel("relu", "cpu", "hr_exit_kernel:relu", ["int8"])
    reg = build_registry(plugins=[(MATH, math_plugin), ("exit", Plugin)], autoload=False)
    with pytest.raises(PluginError, match="relu/cpu from plugin 'exit': cannot import "
                                          "hr_exit_kernel:relu: SystemExit"):
        reg.kernel("relu", "cpu", "int8").fn


# -- malformed KERNELS ------------------------------------------------------------------------

@pytest.mark.parametrize("source, error", [
    ("KERNELS = [('m_op', abs)]", "KERNELS[0] must be (op_type, maker, dtypes[, kind]), got "
                                  "('m_op', <built-in function abs>)"),
    ("KERNELS = ['m_op']", "KERNELS[0] must be (op_type, maker, dtypes[, kind])"),
    ("KERNELS = 5", "KERNELS must be a list of (op_type, maker, dtypes[, kind]) tuples"),
    ("KERNELS = [('m_op', abs, 'float32')]", "dtypes must be a list of dtype names"),
    ("KERNELS = [('m_op', abs, ['float33'])]", "unknown dtypes ['float33']"),
    ("KERNELS = [('m_op', 42, None)]", "the kernel must be callable or 'module:attribute'"),
    ("KERNELS = [('m_op', 'nocolon', None)]", "must read 'module:attribute'"),
    ("KERNELS = [('m_op', abs, None, 'lodd')]", "kind must be one of array, lod, frame"),
    ("KERNELS = [(7, abs, None)]", "a kernel's op type must be an op type name, got 7"),
    ("KERNELS = [('m_op', abs, None)]\nOVERRIDES = ['n_op']",
     "OVERRIDES names op types without a kernel in KERNELS: ['n_op']"),
    ("KERNELS = [('m_op', abs, None)]\nOVERRIDES = 'm_op'", "OVERRIDES must be a list"),
])
def test_a_malformed_kernels_list_is_the_plugins_error(path, source, error):
    package = f"hr_malformed_{uuid.uuid4().hex[:8]}"
    # A good module first: the package is all or nothing.
    _write_package(path, package, {"a_good": "KERNELS = [('m_op', len, ['float64'])]\n",
                                   "b_bad": source + "\n"})
    reg = build_registry(plugins=[("good", eager_plugin("good_op")),
                                  ("bad", package_plugin(package, "m_op"))], autoload=False)
    with pytest.warns(PluginWarning) as record:
        with pytest.raises(KernelNotFoundError) as info:
            reg.kernel("m_op", "cpu", "float64")
    (message,) = [str(w.message) for w in record]
    assert message.startswith("headrace plugin 'bad': ") and error in message
    assert f"(kernel package {package})" in message and error in str(info.value)
    assert reg.kernel("good_op", "cpu").fn is abs and reg.failed == {}


def test_a_package_failure_found_in_another_plugins_hook_is_not_that_plugins(path):
    # "late" registers an eager CPU kernel: the earlier plugins' CPU packages are imported
    # then, to check it against theirs; "bad"'s failure is reported after the hooks.
    package = f"hr_bad_early_{uuid.uuid4().hex[:8]}"
    _write_package(path, package, {"k": "KERNELS = [('m_op', abs)]\n"})
    with pytest.warns(PluginWarning) as record:
        reg = build_registry(plugins=[("bad", package_plugin(package, "m_op")),
                                      ("late", eager_plugin("late_op"))], autoload=False)
    (message,) = [str(w.message) for w in record]
    assert message.startswith("headrace plugin 'bad': ") and "KERNELS[0] must be" in message
    assert reg.failed == {} and reg.plugins[1:] == ["bad", "late"]
    assert reg.kernel("late_op", "cpu").fn is abs and "cpu" in reg.unavailable


# -- threads ----------------------------------------------------------------------------------

def _together(n, work):
    """Run ``work()`` in ``n`` threads released at once; the results and errors."""
    barrier = threading.Barrier(n)
    results, errors = [], []

    def run():
        barrier.wait()
        try:
            results.append(work())
        except Exception as e:  # noqa: BLE001 - collected for the assertion below
            errors.append(e)
    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


@pytest.mark.parametrize("attempt", range(4))
def test_concurrent_first_lookups_find_their_kernels(attempt):
    with _caught():
        reg = build_registry()
    ops = ["relu", "mul", "softmax", "elementwise_add", "concat", "sgd", "mean", "scale"]
    results, errors = _together(8, lambda: [reg.kernel(t, "cpu", "float32") for t in ops])
    assert errors == [] and len(results) == 8
    assert all(r == results[0] for r in results)


@pytest.mark.parametrize("attempt", range(4))
def test_concurrent_first_runs_from_8_threads(attempt, monkeypatch):
    with _caught():
        reg = build_registry()
    prepared = []
    real = executor_mod._RunPlan
    monkeypatch.setattr(executor_mod, "_RunPlan",
                        lambda *args: prepared.append(args) or real(*args))
    with registry_guard(reg):
        main, startup = hr.Program(), hr.Program()
        with hr.program_guard(main, startup):
            x = hr.layers.data("x", shape=[4], dtype="float32")
            y = hr.layers.scale(hr.layers.relu(x), scale=2.0)
        exe = hr.Executor()
        feed = {"x": np.array([[-1, 0, 1, 2]], "float32")}
        results, errors = _together(8, lambda: exe.run(main, feed=feed, fetch_list=[y],
                                                        scope=hr.Scope())[0])
    assert errors == [], errors[0]
    assert len(results) == 8 and all(r.tolist() == [[0, 0, 2, 4]] for r in results)
    assert len(prepared) == 1  # one thread prepared the plan, the others waited for it
