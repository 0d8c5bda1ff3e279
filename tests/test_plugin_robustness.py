"""Plugins side by side: who owns an op (kept in the registry, never on the shared OpDef), hooks
with misspelled names, duplicate ops from a third party, kernel overrides, and devices."""
import io
import sys
import uuid
import warnings

import numpy as np
import pytest

import headrace as hr
import headrace_math.plugin as math_plugin
from headrace.cli import main as cli_main
from headrace.core_ops.plugin import NAME as CORE
from headrace.errors import KernelNotFoundError, PluginError
from headrace.ops import (In, KernelOverride, OpDef, Out, PluginWarning, build_registry,
                          default_registry, hookimpl, registry_guard)
from headrace.runtime.place import DeviceUnavailableError, Place
from headrace.testing.plugin_dists import first_party_plugin, write_plugin_distribution

# "headrace-math:math", or "headrace:math" where the root `pip install .` installed it.
MATH = first_party_plugin("math")
MATH_DIST = MATH.partition(":")[0]


def _plugin_ops(reg):
    """The op types of ``reg`` beside the core's own (every registry has those)."""
    return [t for t in reg if reg.plugin_of(t) != CORE]


def _op(type_):
    return OpDef(type_, inputs=[In("X")], outputs=[Out("Out")], infer=hr.ops.shape.same_as("X"))


def _quiet_build(**kwargs):
    """build_registry(**kwargs) and the PluginWarnings it gave, as strings."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        reg = build_registry(**kwargs)
    return reg, [str(w.message) for w in record if issubclass(w.category, PluginWarning)]


def _plugin(ops=(), kernels=(), devices=(), fail=None):
    """A plugin class: ``devices`` are (name, module), ``kernels`` (op, device, fn, dtypes,
    override); ``fail`` an exception its kernels hook raises after registering."""
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_devices(registry):
            for name, module in devices:
                registry.add_device(name, module=module)

        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            for t in ops:
                registry.add_op(t if isinstance(t, OpDef) else _op(t))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            for op_type, device, fn, dtypes, override in kernels:
                registry.add_kernel(op_type, device, fn, dtypes, override=override)
            if fail is not None:
                raise fail
    return Plugin


def _fortytwo(attrs, info):
    """A kernel maker whose kernel tells itself apart from math's relu."""
    return lambda x: (np.full_like(x, 42),)


def _run_relu(reg, dtype):
    with registry_guard(reg):
        main, startup = hr.Program(), hr.Program()
        with hr.program_guard(main, startup):
            x = hr.layers.data("x", shape=[3], dtype=dtype)
            y = hr.layers.relu(x)
        (out,) = hr.Executor().run(main, feed={"x": np.array([[-1, 0, 2]], dtype)},
                                   fetch_list=[y], scope=hr.Scope())
    return out.tolist()


# -- definitions are never mutated across registries ------------------------------------------

def test_a_second_registry_leaves_the_first_unchanged():
    first = build_registry(plugins=[("one", math_plugin)], autoload=False)
    relu = first.get("relu")
    second = build_registry(plugins=[("two", math_plugin)], autoload=False)
    assert second.get("relu") is relu  # the same module-level definition, shared
    assert first.plugin_of("relu") == "one" and second.plugin_of("relu") == "two"
    assert "relu" in first.ops_of("one") and first.ops_of("two") == []
    assert not hasattr(relu, "plugin")  # ownership lives in the registry only
    assert default_registry().plugin_of("relu") == MATH


def test_withdrawing_a_plugin_from_one_registry_leaves_the_others():
    first = build_registry(plugins=[("one", math_plugin)], autoload=False)
    n = len(first)
    # The same definitions, registered by a plugin that then fails: withdrawn from `second`.
    math_ops = [first.get(t) for t in first.ops_of("one")]
    with pytest.warns(PluginWarning, match="'two' failed.*RuntimeError: late"):
        second = build_registry(plugins=[("two", _plugin(ops=math_ops,
                                                         fail=RuntimeError("late")))],
                                autoload=False)
    assert second.ops_of("two") == [] and len(first) == n and first.plugin_of("relu") == "one"
    with pytest.raises(hr.errors.UnknownOpError):
        second.plugin_of("relu")


# -- hooks that are not hooks ------------------------------------------------------------------

class _Misspelled:
    @staticmethod
    @hookimpl
    def headrace_register_op(registry):  # the hook is headrace_register_ops
        registry.add_op(_op("typo_op"))

    @staticmethod
    @hookimpl
    def headrace_register_kernels(registry):
        registry.add_kernel("typo_op", "cpu", len)


class _Unmarked:
    @staticmethod
    def headrace_register_ops(registry):  # no @hookimpl: pluggy would never call it
        registry.add_op(_op("unmarked_op"))


class _Wrapper:
    @staticmethod
    @hookimpl(hookwrapper=True)
    def headrace_register_ops(registry):
        yield


@pytest.mark.parametrize("plugin, error", [
    (_Misspelled, "unknown hook 'headrace_register_op'; did you mean 'headrace_register_ops'?"),
    (_Unmarked, "headrace_register_ops is not marked @hookimpl"),
    (_Wrapper, "headrace_register_ops is a hook wrapper"),
])
def test_a_hook_that_would_never_run_is_the_plugins_error(plugin, error):
    with pytest.warns(PluginWarning) as record:
        reg = build_registry(plugins=[("odd", plugin), ("good", _plugin(ops=["good_op"]))],
                             autoload=False)
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("headrace plugin 'odd' failed and was skipped: PluginError: ")
    assert error in message
    assert reg.plugins == [CORE, "good"] and list(reg.failed) == ["odd"]
    assert _plugin_ops(reg) == ["good_op"] and reg.kernels_for("typo_op") == {}


class _EarlyKernel:
    @staticmethod
    @hookimpl
    def headrace_register_ops(registry):
        registry.add_op(_op("early_op"))
        registry.add_kernel("relu", "cpu", len)  # before the earlier plugins' kernels exist


class _LateDevice:
    @staticmethod
    @hookimpl
    def headrace_register_kernels(registry):
        registry.add_device("late")


@pytest.mark.parametrize("plugin, error", [
    (_EarlyKernel, "add_kernel() is called from headrace_register_ops; it belongs in "
                   "headrace_register_kernels"),
    (_LateDevice, "add_device() is called from headrace_register_kernels; it belongs in "
                  "headrace_register_devices"),
])
def test_each_registration_belongs_in_its_hook(plugin, error):
    with pytest.warns(PluginWarning, match="'early' failed"):
        reg = build_registry(plugins=[(MATH, math_plugin), ("early", plugin)], autoload=False)
    assert error in str(reg.failed["early"]) and "early_op" not in reg
    assert reg.kernel("relu", "cpu", "float32").plugin == MATH


def test_an_installed_plugin_with_a_misspelled_hook_is_reported(tmp_path, monkeypatch):
    uid = uuid.uuid4().hex[:8]
    module = f"hr_typo_{uid}"
    name = write_plugin_distribution(tmp_path, f"headrace-typo-{uid}", {module: (
        "from headrace.ops import hookimpl\n\n"
        "@hookimpl\ndef headrace_register_kernel(registry):\n    pass\n")})
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        reg, warned = _quiet_build()
    finally:
        sys.modules.pop(module, None)
    assert name in reg.failed and name not in reg.plugins
    assert any(f"'{name}' failed" in w and "did you mean 'headrace_register_kernels'?" in w
               for w in warned)


# -- duplicate ops: first-party plugins win, whatever the sort order ---------------------------

def test_a_third_party_duplicate_op_cannot_take_a_first_party_plugin_down(tmp_path,
                                                                          monkeypatch):
    baseline, _ = _quiet_build()
    uid = uuid.uuid4().hex[:8]
    dist, module, own = f"aaa-dup-{uid}", f"aaa_dup_{uid}", f"aaa_own_{uid}"
    name = write_plugin_distribution(tmp_path, dist, {module: (
        "from headrace.ops import In, OpDef, Out, hookimpl\n"
        "from headrace.ops.shape import same_as\n\n"
        "@hookimpl\ndef headrace_register_ops(registry):\n"
        f"    registry.add_op(OpDef('{own}', inputs=[In('X')], outputs=[Out('Out')],\n"
        "                          infer=same_as('X')))\n"
        "    registry.add_op(OpDef('relu', inputs=[In('X')], outputs=[Out('Out')],\n"
        "                          infer=same_as('X')))\n")})
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert name < MATH  # it sorts first: discovery order alone would let it win
        reg, warned = _quiet_build()
    finally:
        sys.modules.pop(module, None)
    assert len(reg) == len(baseline) and sorted(reg) == sorted(baseline)
    assert reg.plugin_of("relu") == MATH and set(reg.ops_of(MATH)) == set(baseline.ops_of(MATH))
    assert own not in reg and name in reg.failed and name not in reg.plugins
    assert MATH in reg.plugins and MATH not in reg.failed  # 147 ops, not 54
    (message,) = [w for w in warned if name in w]
    assert (f"plugin '{name}' (distribution {dist}): op 'relu' is already registered by "
            f"plugin '{MATH}' (distribution {MATH_DIST})") in message


def test_first_party_plugins_load_first_even_when_given_later():
    third = _plugin(ops=["relu", "third_op"])
    with pytest.warns(PluginWarning, match="'third' failed.*op 'relu' is already registered "
                                           f"by plugin '{MATH}' \\(distribution {MATH_DIST}\\)"):
        reg = build_registry(plugins=[("third", third), (MATH, math_plugin)], autoload=False)
    assert reg.plugins == [CORE, MATH] and reg.plugin_of("relu") == MATH
    assert "third_op" not in reg


# -- kernel overrides ----------------------------------------------------------------------------

def _with_math(*plugins):
    return build_registry(plugins=[(MATH, math_plugin), *plugins], autoload=False)


def test_replacing_another_plugins_kernel_without_override_is_that_plugins_error():
    third = _plugin(ops=["third_op"], kernels=[("relu", "cpu", _fortytwo, ["float32"], False)])
    with pytest.warns(PluginWarning) as record:
        reg = _with_math(("third", third))
    (message,) = [str(w.message) for w in record]
    assert ("'third' failed and was skipped: PluginError: plugin 'third': kernel relu/cpu for "
            f"float32 is already registered by plugin '{MATH}' (distribution {MATH_DIST}); "
            "pass override=True") in message
    assert "third" in reg.failed and "third_op" not in reg and reg.overrides == []
    assert reg.kernel("relu", "cpu", "float32").plugin == MATH
    assert _run_relu(reg, "float32") == [[0, 0, 2]]


def test_an_explicit_override_is_used_and_reported():
    third = _plugin(kernels=[("relu", "cpu", _fortytwo, ["float32"], True)])
    reg = _with_math(("third", third))
    assert reg.failed == {}
    assert reg.overrides == [KernelOverride("relu", "cpu", ("float32",), "third", (MATH,))]
    assert reg.kernel("relu", "cpu", "float32").plugin == "third"
    assert reg.kernel("relu", "cpu", "float64").plugin == MATH  # only for its dtypes
    assert _run_relu(reg, "float32") == [[42, 42, 42]]
    assert _run_relu(reg, "float64") == [[0, 0, 2]]
    out = io.StringIO()
    with registry_guard(reg):
        assert cli_main(["plugins"], out=out) == 0
    assert f"third: overrides kernel relu/cpu (float32) of {MATH}" in out.getvalue()


def test_kernels_for_other_dtypes_or_of_the_same_plugin_need_no_override():
    third = _plugin(ops=["own_op"], kernels=[("relu", "cpu", _fortytwo, ["int8"], False),
                                             ("own_op", "cpu", _fortytwo, None, False),
                                             ("own_op", "cpu", len, ["float32"], False)])
    reg = _with_math(("third", third))
    assert reg.failed == {} and reg.overrides == []
    assert reg.kernel("relu", "cpu", "int8").plugin == "third"
    assert reg.kernel("relu", "cpu", "float32").plugin == MATH
    assert reg.kernel("own_op", "cpu", "float32").fn is _fortytwo  # its own: first one wins


def test_an_override_is_withdrawn_with_its_plugin():
    third = _plugin(kernels=[("relu", "cpu", _fortytwo, None, True)], fail=RuntimeError("x"))
    with pytest.warns(PluginWarning, match="'third' failed"):
        reg = _with_math(("third", third))
    assert reg.overrides == [] and reg.kernel("relu", "cpu", "float32").plugin == MATH


@pytest.mark.parametrize("declared", [True, False])
def test_a_kernel_package_declares_its_overrides(tmp_path, monkeypatch, declared):
    package = f"hr_override_pkg_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "act.py").write_text(
        "import numpy as np\n\n"
        "def relu(attrs, info):\n    return lambda x: (np.full_like(x, 42),)\n\n"
        "KERNELS = [('relu', relu, ['float32'])]\n"
        + ("OVERRIDES = ['relu']\n" if declared else ""))
    monkeypatch.syspath_prepend(str(tmp_path))

    class Third:
        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel_package(package, "cpu")
    try:
        reg = _with_math(("third", Third))  # both packages load lazily, in plugin order
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            k = reg.kernel("relu", "cpu", "float32")
    finally:
        for m in [m for m in sys.modules if m.startswith(package)]:
            sys.modules.pop(m)
    if declared:
        assert k.plugin == "third" and record == []
        assert reg.overrides == [KernelOverride("relu", "cpu", ("float32",), "third", (MATH,))]
    else:
        assert k.plugin == MATH and reg.overrides == [] and "third" in reg.plugins
        (message,) = [str(w.message) for w in record]
        assert "plugin 'third': kernel relu/cpu for float32 is already registered" in message
        assert "list 'relu' in the module's OVERRIDES" in message
        assert f"(kernel package {package})" in str(reg.unavailable["cpu"][0])


# -- devices ------------------------------------------------------------------------------------

def test_the_core_registers_cpu_and_cuda():
    reg = build_registry(autoload=False)
    assert reg.known_devices() == ["cpu", "cuda"]
    assert reg.device("cpu").module == "headrace.devices.cpu"
    assert reg.device("cuda").plugin == CORE


@pytest.mark.parametrize("package", [False, True])
def test_a_kernel_for_an_unknown_device_is_the_plugins_error(package):
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(_op("dev_op"))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            if package:
                registry.add_kernel_package("somewhere.kernels", "cude")
            else:
                registry.add_kernel("dev_op", "cude", len)
    with pytest.warns(PluginWarning) as record:
        reg = build_registry(plugins=[("typo", Plugin)], autoload=False)
    (message,) = [str(w.message) for w in record]
    assert "unknown device 'cude'; did you mean 'cuda'? (known devices: cpu, cuda)" in message
    assert "typo" in reg.failed and "dev_op" not in reg and reg.devices() == ["cpu", "cuda"]


def test_a_plugin_registers_a_device_and_its_kernels():
    plugin = _plugin(ops=["tpu_op"], devices=[("tpu", "headrace.devices.cpu")],
                     kernels=[("tpu_op", "tpu", len, ["float32"], False)])
    reg = build_registry(plugins=[("tpu", plugin)], autoload=False)
    assert reg.known_devices() == ["cpu", "cuda", "tpu"] and reg.device("tpu").plugin == "tpu"
    assert reg.kernel("tpu_op", "tpu", "float32").fn is len

    class TPUPlace(Place):  # a plugin's place names only its device
        device = "tpu"

        def __repr__(self):
            return "TPUPlace()"
    with registry_guard(reg):
        assert TPUPlace().module() is sys.modules["headrace.devices.cpu"]
    with pytest.raises(DeviceUnavailableError, match="unknown device 'tpu'.*known devices: "
                                                     "cpu, cuda"):
        with registry_guard(build_registry(autoload=False)):
            TPUPlace().module()


@pytest.mark.parametrize("name, error", [
    ("cpu", f"device 'cpu' is already registered by plugin '{CORE}' (distribution headrace)"),
    ("no such", "a device name must be an identifier"),
])
def test_a_bad_device_is_the_plugins_error(name, error):
    with pytest.warns(PluginWarning, match="'dev' failed"):
        reg = build_registry(plugins=[("dev", _plugin(devices=[(name, None)]))],
                             autoload=False)
    assert error in str(reg.failed["dev"]) and reg.known_devices() == ["cpu", "cuda"]


def test_a_lookup_on_an_unknown_device_says_so():
    reg = build_registry(plugins=[("k", _plugin(ops=["k_op"], kernels=[
        ("k_op", "cpu", len, None, False)]))], autoload=False)
    with pytest.raises(KernelNotFoundError, match="unknown device; did you mean 'cuda'"):
        reg.kernel("k_op", "cudaa")
    with pytest.raises(PluginError, match="unknown device 'gpu'"):
        reg.device("gpu")


def test_headrace_plugins_lists_devices_and_failures():
    with pytest.warns(PluginWarning):
        reg = build_registry(plugins=[("typo", _Misspelled), ("good", _plugin(ops=["g_op"]))],
                             autoload=False)
    out = io.StringIO()
    with registry_guard(reg):
        assert cli_main(["plugins"], out=out) == 1
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"{CORE}: ") and lines[0].endswith(" ops, devices cpu, cuda")
    assert lines[1] == "good: 1 ops"
    assert lines[2].startswith("typo: FAILED: PluginError: plugin 'typo': unknown hook "
                               "'headrace_register_op'")
