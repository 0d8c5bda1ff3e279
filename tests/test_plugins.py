"""Plugins: discovery through entry points of separately installed distributions, isolation of
broken plugins, the autoload switch, isolated registries, duplicate ops, lazy kernels and
registry_guard."""
import re
import sys
import uuid
import warnings
from importlib import metadata

import pytest

import headrace
from headrace.errors import KernelNotFoundError, PluginError
from headrace.ops import (AUTOLOAD_ENV, ENTRY_POINT_GROUP, In, OpDef, Out, PluginWarning,
                          build_registry, default_registry, discover, hookimpl, registry_guard,
                          set_default_registry)
from headrace.ops import plugins as plugins_mod
from headrace.ops.shape import same_as
from headrace.core_ops.plugin import NAME as CORE
from headrace.testing.plugin_dists import first_party_plugin, write_plugin_distribution

FIRST_PARTY = [d for d in plugins_mod.FIRST_PARTY if d != "headrace"]  # the plugins/ dists


def _norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _plugin_ops(reg):
    """The op types of ``reg`` beside the core's own (every registry has those)."""
    return [t for t in reg if reg.plugin_of(t) != CORE]


def _op(type_):
    return OpDef(type_, inputs=[In("X")], outputs=[Out("Out")], infer=same_as("X"))


def _build_all():
    """build_registry() with discovery; warnings of plugins other than ours are tolerated
    (the first-party plugins are being written meanwhile), and returned."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        reg = build_registry()
    found = [w for w in record if issubclass(w.category, PluginWarning)]
    for w in record:
        if not issubclass(w.category, PluginWarning):
            pytest.fail(f"unexpected warning: {w.message}")
    return reg, [str(w.message) for w in found]


def _accounted_for(reg):
    """Every discovered plugin either loaded or is in registry.failed."""
    for name, _ in discover():
        assert (name in reg.plugins) != (name in reg.failed), name


# -- real first-party distributions ------------------------------------------------------------

def _plugin_entry_points(dist):
    return [ep for ep in metadata.distribution(dist).entry_points
            if ep.group == ENTRY_POINT_GROUP]


# tox and requirements-dev.txt install every part as a distribution of its own; the root
# `pip install .` installs headrace whole, one distribution holding every first-party plugin.
WHOLE = bool(_plugin_entry_points("headrace"))


@pytest.mark.parametrize("dist", FIRST_PARTY)
def test_first_party_plugin_is_its_own_distribution(dist):
    family = dist.split("-", 1)[1]
    if WHOLE:
        # Its entry point is the root distribution's, and the part is not installed beside it.
        with pytest.raises(metadata.PackageNotFoundError):
            metadata.distribution(dist)
        owner = "headrace"
        eps = [ep for ep in _plugin_entry_points(owner) if ep.name == family]
    else:
        owner = dist
        d = metadata.distribution(dist)
        eps = _plugin_entry_points(dist)
        assert _norm(d.metadata["Name"]) == dist
        assert any(_norm(r).startswith("headrace") for r in d.requires or ())  # the core
    assert len(eps) == 1
    assert eps[0].value == f"headrace_{family}.plugin"
    discovered = dict(discover())
    key = next(k for k in discovered
               if _norm(k.split(":")[0]) == owner and discovered[k].value == eps[0].value)
    assert key.endswith(f":{eps[0].name}") and discovered[key].value == eps[0].value


def test_first_party_plugins_come_from_different_distributions():
    names = [name for name, _ in discover()]
    dists = [_norm(name.split(":")[0]) for name in names]
    if WHOLE:
        # One distribution, one entry point a plugin, no part installed beside it.
        families = {dist.split("-", 1)[1] for dist in FIRST_PARTY}
        assert {n for n in names if n.startswith("headrace:")} == {
            f"headrace:{family}" for family in families}
        assert not {d for d in dists if d.startswith("headrace-")}
        assert len(names) == len(set(names))
        return
    # Exactly the repository's plugins load before third parties.
    assert {d for d in dists if d.startswith("headrace-")} == set(FIRST_PARTY)
    assert len(dists) == len(set(dists))
    files = {dist: {str(f) for f in metadata.distribution(dist).files or ()}
             for dist in FIRST_PARTY}
    assert all(files[a].isdisjoint(files[b]) for a in FIRST_PARTY for b in FIRST_PARTY
               if a != b and files[a] and files[b])


def test_first_party_plugins_load_through_discovery():
    reg, _ = _build_all()
    _accounted_for(reg)
    # The core's own ops stay the core's, whichever plugins are installed.
    assert reg.plugin_of("scale") == CORE and reg.plugin_of("feed") == CORE
    math = first_party_plugin("math")
    if math in reg.plugins:
        assert reg.plugin_of("mul") == math


# -- fake installed distributions -----------------------------------------------------------------

PLUGIN_SOURCE = '''
from headrace.ops import In, OpDef, Out, hookimpl
from headrace.ops.shape import same_as

{preamble}

@hookimpl
def headrace_register_ops(registry):
    registry.add_op(OpDef("{op}", inputs=[In("X")], outputs=[Out("Out")], infer=same_as("X")))
    {after_op}

@hookimpl
def headrace_register_kernels(registry):
    registry.add_kernel("{op}", "cpu", "{module}_kernels:forward", dtypes=["float32"])
    {after_kernel}
'''


@pytest.fixture
def site(tmp_path, monkeypatch):
    """``site(label, preamble=..., after_op=..., after_kernel=...)`` installs a plugin
    distribution ``headrace-fake-<label>-<uid>`` into a folder on sys.path; returns
    (plugin name, op type, module name)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = []

    def install(label, preamble="", after_op="", after_kernel=""):
        uid = uuid.uuid4().hex[:8]
        dist, module = f"headrace-fake-{label}-{uid}", f"hr_fake_{label}_{uid}"
        op = f"fake_{label}_{uid}"
        name = write_plugin_distribution(tmp_path, dist, {
            module: PLUGIN_SOURCE.format(preamble=preamble, op=op, module=module,
                                         after_op=after_op or "pass",
                                         after_kernel=after_kernel or "pass"),
            f"{module}_kernels": "def forward(x):\n    return x\n"})
        modules.extend([module, f"{module}_kernels"])
        return name, op, module

    yield install
    for m in modules:
        sys.modules.pop(m, None)


def test_a_fake_distribution_is_discovered_and_loaded(site):
    name, op, module = site("good")
    assert name in dict(discover())
    assert module not in sys.modules  # discovery alone imports nothing
    reg, warned = _build_all()
    assert not any(name in w for w in warned)
    assert op in reg and reg.plugin_of(op) == name and name in reg.plugins
    assert reg.kernel(op, "cpu", "float32").plugin == name
    _accounted_for(reg)


def test_broken_distributions_are_reported_and_skipped(site):
    good, good_op, _ = site("good")
    imp, imp_op, _ = site("import", preamble="import no_such_dependency_of_headrace_xyz")
    hook, hook_op, _ = site("hook", after_op="registry.add_op(OpDef('x', no_kernel=True))\n"
                                             "    raise RuntimeError('the hook exploded')")
    kern, kern_op, _ = site("kernel", after_kernel="raise ValueError('no kernels today')")
    reg, warned = _build_all()
    for name, error in [(imp, "ModuleNotFoundError: No module named "
                              "'no_such_dependency_of_headrace_xyz'"),
                        (hook, "RuntimeError: the hook exploded"),
                        (kern, "ValueError: no kernels today")]:
        assert any(f"plugin {name!r} failed" in w and error in w for w in warned), name
        assert name in reg.failed and name not in reg.plugins
        assert error.split(": ", 1)[1] in str(reg.failed[name])
    # partial registrations withdrawn: ops (also those of the earlier, successful ops hook)
    assert hook_op not in reg and "x" not in reg and imp_op not in reg and kern_op not in reg
    assert reg.kernels_for(kern_op) == {} and reg.kernels_for(hook_op) == {}
    assert good_op in reg and good in reg.plugins
    _accounted_for(reg)


@pytest.mark.parametrize("value, enabled", [("1", False), ("true", False), ("yes", False),
                                            ("0", True), ("", True), ("false", True)])
def test_autoload_switch(site, monkeypatch, value, enabled):
    name, op, _ = site("switch")
    monkeypatch.setenv(AUTOLOAD_ENV, value)
    if enabled:
        reg, _ = _build_all()
    else:
        reg = build_registry(plugins=[("explicit", _plugin_of("explicit_op"))])
        assert reg.plugins == [CORE, "explicit"] and _plugin_ops(reg) == ["explicit_op"]
    assert (op in reg) == enabled and (name in reg.plugins) == enabled
    assert build_registry(autoload=False).plugins == [CORE]  # the argument wins over the env


# -- isolated registries ---------------------------------------------------------------------------

def _plugin_of(*op_types, kernels=(), fail_in=None, devices=()):
    """A module-like plugin class whose hooks register ``devices``, ``op_types`` and
    ``kernels``."""
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_devices(registry):
            for name in devices:
                registry.add_device(name)

        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            for t in op_types:
                registry.add_op(_op(t))
            if fail_in == "ops":
                raise RuntimeError("ops hook failed")

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            for op_type, device, fn in kernels:
                registry.add_kernel(op_type, device, fn, dtypes=["float32", "float64"])
            if fail_in == "kernels":
                raise RuntimeError("kernels hook failed")
    return Plugin


def test_isolated_registry_has_only_its_plugins_ops():
    reg = build_registry(plugins=[("mine", _plugin_of("a_op", "b_op"))], autoload=False)
    assert _plugin_ops(reg) == ["a_op", "b_op"]
    assert reg.plugins == [CORE, "mine"] and reg.failed == {}
    assert reg.plugin_of("a_op") == "mine" and "mul" not in reg
    assert [d.type for d in reg.ops() if reg.plugin_of(d.type) != CORE] == ["a_op", "b_op"]
    unnamed = _plugin_of("c_op")
    assert build_registry(plugins=[unnamed], autoload=False).plugins == [CORE, unnamed.__name__]


def test_duplicate_op_type_fails_the_second_plugin():
    with pytest.warns(PluginWarning, match="'second' failed.*'dup' is already registered by "
                                           "plugin 'first'"):
        reg = build_registry(plugins=[("first", _plugin_of("dup", "only_first")),
                                      ("second", _plugin_of("only_second", "dup"))],
                             autoload=False)
    assert _plugin_ops(reg) == ["dup", "only_first"] and reg.plugin_of("dup") == "first"
    assert reg.plugins == [CORE, "first"] and isinstance(reg.failed["second"], PluginError)


class _BadHookArgs:
    @staticmethod
    @hookimpl
    def headrace_register_ops(registry, extra):  # not in the hookspec: pluggy rejects it
        pass


class _BadAddOp:
    @staticmethod
    @hookimpl
    def headrace_register_ops(registry):
        registry.add_op(_op("fine_op"))
        registry.add_op("not an OpDef")


@pytest.mark.parametrize("bad, error", [
    (_plugin_of("p_op", fail_in="ops"), "RuntimeError: ops hook failed"),
    (_plugin_of("p_op", kernels=[("p_op", "cpu", len)], fail_in="kernels"),
     "RuntimeError: kernels hook failed"),
    (_plugin_of("p_op", kernels=[("p_op", "", len)]), "unknown device ''"),
    (_BadHookArgs, "PluginValidationError"),
    (_BadAddOp, "add_op() takes an OpDef, got str"),
])
def test_a_broken_explicit_plugin_is_isolated(bad, error):
    good = _plugin_of("good_op", kernels=[("good_op", "cpu", len), ("p_op", "cpu", len)])
    with pytest.warns(PluginWarning) as record:
        reg = build_registry(plugins=[("bad", bad), ("good", good)], autoload=False)
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("headrace plugin 'bad' failed and was skipped: ")
    assert error in message
    assert _plugin_ops(reg) == ["good_op"] and reg.plugins == [CORE, "good"]
    assert list(reg.failed) == ["bad"]
    assert reg.kernels_for("p_op") == {"cpu": ("float32", "float64")}  # only good's kernel
    assert reg.kernel("p_op", "cpu").plugin == "good"


# -- kernels ----------------------------------------------------------------------------------

def test_string_kernels_are_imported_lazily(tmp_path, monkeypatch):
    module = f"hr_lazy_kernels_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{module}.py").write_text("def forward(x):\n    return x * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = _plugin_of("lazy_op", kernels=[("lazy_op", "cpu", f"{module}:forward"),
                                            ("lazy_op", "gpu", f"{module}:missing"),
                                            ("lazy_op", "tpu", f"{module}_nowhere:forward")],
                        devices=["gpu", "tpu"])
    try:
        reg = build_registry(plugins=[("lazy", plugin)], autoload=False)
        k = reg.kernel("lazy_op", "cpu", "float32")
        assert module not in sys.modules and k.plugin == "lazy"
        assert k.fn(21) == 42 and module in sys.modules and k.fn is k.fn
        with pytest.raises(PluginError, match=f"lazy_op/gpu from plugin 'lazy'.*{module}:missing"):
            reg.kernel("lazy_op", "gpu").fn
        with pytest.raises(PluginError, match=f"cannot import {module}_nowhere:forward"):
            reg.kernel("lazy_op", "tpu").fn
    finally:
        sys.modules.pop(module, None)


@pytest.mark.parametrize("device, dtype", [("cuda", None), ("cpu", "int8"), ("cuda", "float32")])
def test_missing_kernel_lists_what_is_registered(device, dtype):
    reg = build_registry(plugins=[("k", _plugin_of("k_op", kernels=[
        ("k_op", "cpu", len), ("k_op", "numba", "m:f")], devices=["numba"]))], autoload=False)
    with pytest.raises(KernelNotFoundError) as info:
        reg.kernel("k_op", device, dtype)
    text = str(info.value)
    assert text.startswith(f"op 'k_op': no kernel for device '{device}'")
    assert "registered kernels: cpu: float32/float64, numba: float32/float64" in text
    with pytest.raises(KernelNotFoundError, match="registered kernels: none"):
        reg.kernel("other_op", "cpu")
    # cuda: the core's own kernels, listed where numba imports (the lookups above tried them)
    assert [d for d in reg.devices() if d != "cuda"] == ["cpu", "numba"]


# -- the default registry --------------------------------------------------------------------------

def test_registry_guard_restores_the_default():
    before = plugins_mod._default
    first = build_registry(plugins=[("one", _plugin_of("one_op"))], autoload=False)
    second = build_registry(plugins=[("two", _plugin_of("two_op"))], autoload=False)
    with registry_guard(first) as active:
        assert active is first and default_registry() is first
        assert headrace.Program().registry is first
        with registry_guard(second):
            assert default_registry() is second
        assert default_registry() is first
        with pytest.raises(KeyError):
            with registry_guard(second):
                raise KeyError("inside")
        assert default_registry() is first
    assert plugins_mod._default is before


def test_set_default_registry_checks_its_argument():
    with pytest.raises(PluginError, match="expected a Registry"):
        set_default_registry("not a registry")
    old = set_default_registry(None)
    try:
        assert plugins_mod._default is None
    finally:
        set_default_registry(old)


def _package_plugin(package, device, fail=False):
    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_devices(registry):
            registry.add_device(device)

        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(_op("pk_op"))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel_package(package, device)
            if fail:
                raise RuntimeError("after the package")
    return Plugin


@pytest.mark.parametrize("fail", [False, True])
def test_kernel_packages_load_lazily_and_are_withdrawn(tmp_path, monkeypatch, fail):
    package = f"hr_kernel_pkg_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "pk.py").write_text("KERNELS = [('pk_op', abs, ['float32'])]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            reg = build_registry(plugins=[("pkg", _package_plugin(package, "gpu", fail))],
                                 autoload=False)
        assert len(record) == int(fail)
        assert package not in sys.modules
        if fail:
            assert reg.devices() == ["cpu", "cuda"] and "pk_op" not in reg  # (the core's kernels)
            with pytest.raises(KernelNotFoundError):
                reg.kernel("pk_op", "gpu")
        else:
            assert reg.devices() == ["cpu", "cuda", "gpu"]
            k = reg.kernel("pk_op", "gpu", "float32")
            assert k.fn is abs and k.plugin == "pkg" and f"{package}.pk" in sys.modules
        assert package not in sys.modules or not fail
    finally:
        for m in [m for m in sys.modules if m.startswith(package)]:
            sys.modules.pop(m)


def test_a_device_whose_kernels_cannot_import_is_reported_not_raised(tmp_path, monkeypatch):
    # A CUDA kernel package on a machine without numba: listing still works, and a lookup on
    # that device says why there is no kernel.
    pkg = tmp_path / "gpu_less_kernels"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text("import numba_that_is_not_installed\nKERNELS = []\n")
    (tmp_path / "cpu_kernels.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    from headrace.ops import OpDef, In, Out, build_registry, hookimpl

    class Plugin:
        @staticmethod
        @hookimpl
        def headrace_register_ops(registry):
            registry.add_op(OpDef("gpu_less", inputs=[In("X")], outputs=[Out("Out")],
                                  infer=lambda ctx: None))

        @staticmethod
        @hookimpl
        def headrace_register_kernels(registry):
            registry.add_kernel("gpu_less", "cpu", lambda attrs, info: None, ["float32"])
            registry.add_kernel_package("gpu_less_kernels", "cuda")

    reg = build_registry([("gpu_less_plugin", Plugin)], autoload=False)
    assert reg.kernels_for("gpu_less") == {"cpu": ("float32",)}
    assert "cuda" in reg.unavailable
    from headrace.errors import KernelNotFoundError
    with pytest.raises(KernelNotFoundError, match="numba_that_is_not_installed"):
        reg.kernel("gpu_less", "cuda")
