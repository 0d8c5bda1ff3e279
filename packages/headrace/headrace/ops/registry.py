"""The registry: devices, op definitions by type, and kernels by (op type, device).

Registries are instances: the process has a default one built from the installed plugins
(:func:`headrace.ops.default_registry`), and a test can build its own from explicit plugins
(:func:`headrace.ops.build_registry`). A registry never changes what it is given: definitions
are shared module-level objects, so who registered what is kept here (:meth:`plugin_of`).

Thread safety: building is single-threaded (the default registry is published only once it is
complete); afterwards the only mutation is the first-use import of a device's kernel packages,
done under a lock, and a device's packages leave ``_pending`` only once their kernels are in.
"""
import contextlib
import difflib
import logging
import os
import threading
import warnings

from ..callsite import user_stacklevel
from ..errors import KernelNotFoundError, PluginError, UnknownOpError
from .definition import OpDef
from .package import iter_op_modules, uncompiled_modules
from .kernel import Device, Kernel, KernelOverride, check_kernel_args, kernel_entries

__all__ = ["Registry", "PluginWarning", "plugin_warning"]

_log = logging.getLogger(__name__)

KERNELS_HOOK = "headrace_register_kernels"


class PluginWarning(UserWarning):
    """A plugin (or one of its kernel packages) failed and was skipped."""


def plugin_warning(message):
    """Warn ``message`` as a PluginWarning that points at the user's line (the frame outside
    headrace that loaded the plugin or ran the program), however deep the load happened."""
    warnings.warn(message, PluginWarning, stacklevel=user_stacklevel())


def _did_you_mean(name, known):
    close = difflib.get_close_matches(str(name), known, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class Registry:
    """Devices, op definitions and kernels, with the plugins they came from and the plugins
    that failed."""

    def __init__(self):
        self._ops = {}      # op type -> OpDef
        self._owners = {}   # op type -> plugin name (never stored on the shared OpDef)
        self._devices = {}  # device name -> Device
        self._kernels = {}  # (op_type, device) -> [Kernel], an override first
        self._pending = {}  # device -> [(plugin, package)] kernel packages not imported yet
        self._loading = set()  # devices whose packages are being imported (under the lock)
        self._deferred = []  # kernel package failures met while a hook was running
        self.unavailable = {}  # device -> [PluginError] kernel packages that failed to load
        self.overrides = []    # [KernelOverride] kernels that replace an earlier plugin's
        self.plugins = []      # names of plugins that loaded, in load order
        self.failed = {}       # plugin name -> the exception it raised
        self.distributions = {}  # plugin name -> its distribution's name, where known
        self._lock = threading.RLock()
        self._plugin = None  # the plugin whose hook (or kernel package) is running
        self._hook = None    # the hook running (None: the registry is used directly)
        self._undo = None    # how to take back what it added, should it fail

    def _who(self, plugin):
        dist = self.distributions.get(plugin)
        return f"plugin {plugin!r}" + (f" (distribution {dist})" if dist else "")

    def _in_hook(self, method, hook):
        """Each kind of registration in its own hook: the hooks run one after the other over
        all plugins, which is what makes "the earlier plugin wins" hold."""
        if self._hook is not None and self._hook != hook:
            raise PluginError(f"{self._who(self._plugin)}: {method}() is called from "
                              f"{self._hook}; it belongs in {hook}")

    def _record(self, undo):
        if self._undo is not None:
            self._undo.append(undo)

    # -- devices ---------------------------------------------------------------------------
    def add_device(self, name, module=None):
        """Register device ``name`` (the key kernels are registered under, ``Place.device``);
        ``module`` is its device module's import name (see :mod:`headrace.devices`), imported
        on first use by a Place. A device registered twice is an error of the later plugin."""
        who = self._who(self._plugin)
        self._in_hook("add_device", "headrace_register_devices")
        if not isinstance(name, str) or not name.isidentifier():
            raise PluginError(f"{who}: a device name must be an identifier like 'cpu', "
                              f"got {name!r}")
        if module is not None and not isinstance(module, str):
            raise PluginError(f"{who}: device {name!r}: module must be an import name "
                              f"('package.module'), got {type(module).__name__}")
        if name in self._devices:
            raise PluginError(f"{who}: device {name!r} is already registered by "
                              f"{self._who(self._devices[name].plugin)}")
        self._devices[name] = Device(name, module, self._plugin)
        self._record(lambda: self._devices.pop(name, None))
        return self._devices[name]

    def device(self, name):
        """The :class:`~headrace.ops.kernel.Device` registered as ``name``."""
        try:
            return self._devices[name]
        except KeyError:
            raise PluginError(f"unknown device {name!r}{_did_you_mean(name, self._devices)} "
                              f"(known devices: {self._known()})") from None

    def known_devices(self):
        """Names of the registered devices."""
        return sorted(self._devices)

    def _known(self):
        return ", ".join(self.known_devices()) or "none"

    def _check_device(self, device, what):
        if device not in self._devices:
            shown = device if isinstance(device, str) else repr(device)
            raise PluginError(f"{self._who(self._plugin)}: {what}: unknown device "
                              f"{shown!r}{_did_you_mean(device, self._devices)} "
                              f"(known devices: {self._known()})")

    # -- ops -------------------------------------------------------------------------------
    def add_op(self, opdef):
        """Register an :class:`OpDef`; a type registered twice is an error of the later
        plugin. The definition itself is not changed (it may be in other registries too)."""
        who = self._who(self._plugin)
        self._in_hook("add_op", "headrace_register_ops")
        if not isinstance(opdef, OpDef):
            raise PluginError(f"{who}: add_op() takes an OpDef, got {type(opdef).__name__}")
        t = opdef.type
        if t in self._ops:
            raise PluginError(f"{who}: op '{t}' is already registered by "
                              f"{self._who(self._owners[t])}")
        self._ops[t], self._owners[t] = opdef, self._plugin
        self._record(lambda: (self._ops.pop(t, None), self._owners.pop(t, None)))
        return opdef

    def get(self, op_type):
        """The definition of ``op_type``; an unknown type is an UnknownOpError."""
        try:
            return self._ops[op_type]
        except KeyError:
            close = difflib.get_close_matches(str(op_type), self._ops, n=5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownOpError(
                f"no plugin registered this op type{hint}", op_type=op_type,
                expected=f"one of the {len(self._ops)} registered op types "
                         f"(`headrace ops` lists them)",
                found=repr(op_type)) from None

    def find(self, op_type):
        """The definition of ``op_type`` or None."""
        return self._ops.get(op_type)

    def plugin_of(self, op_type):
        """The name of the plugin that registered ``op_type`` in this registry."""
        self.get(op_type)  # an unknown type is an UnknownOpError
        return self._owners[op_type]

    def ops_of(self, plugin):
        """The op types ``plugin`` registered, sorted."""
        return sorted(t for t, p in self._owners.items() if p == plugin)

    def __contains__(self, op_type):
        return op_type in self._ops

    def __iter__(self):
        return iter(sorted(self._ops))

    def __len__(self):
        return len(self._ops)

    def ops(self):
        """All definitions, sorted by type."""
        return [self._ops[t] for t in sorted(self._ops)]

    # -- kernels ---------------------------------------------------------------------------
    def add_kernel(self, op_type, device, fn, dtypes=None, *, kind="array", override=False):
        """Register ``fn`` (callable or ``"module:attr"``) for ``op_type`` on ``device``, a
        registered device; ``kind`` (one of :data:`KERNEL_KINDS`) says how the plan calls it.

        A kernel of another plugin for the same op, device and a common dtype is an error of
        this plugin unless ``override=True``: then this one takes precedence for its dtypes and
        the replacement is listed in :attr:`overrides` (and by ``headrace plugins``).
        """
        who = self._who(self._plugin)
        self._in_hook("add_kernel", KERNELS_HOOK)
        self._check_device(device, f"kernel {op_type}/{device}")
        dtypes = check_kernel_args(who, op_type, device, fn, dtypes, kind)
        if device not in self._loading and any(p != self._plugin
                                                for p, _ in self._pending.get(device, ())):
            # Kernels are checked against those of earlier plugins, so their packages for
            # this device are imported now rather than after this kernel.
            self._load_device(device)
        key = (op_type, device)
        kernels = self._kernels.setdefault(key, [])
        k = Kernel(op_type, device, fn, dtypes, self._plugin, kind)
        replaced = list(dict.fromkeys(e.plugin for e in kernels
                                      if e.plugin != self._plugin and e.overlaps(dtypes)))
        if replaced and not override:
            shown = "/".join(dtypes) if dtypes else "any dtype"
            raise PluginError(
                f"{who}: kernel {op_type}/{device} for {shown} is already registered by "
                f"{', '.join(map(self._who, replaced))}; pass override=True to add_kernel "
                f"(in a kernel package: list '{op_type}' in the module's OVERRIDES) to "
                f"replace it")
        if replaced:
            kernels.insert(0, k)  # lookups take the first kernel that supports the dtype
            record = KernelOverride(op_type, device, dtypes, self._plugin, tuple(replaced))
            self.overrides.append(record)
            self._record(lambda: self.overrides.remove(record))
        else:
            kernels.append(k)
        self._record(lambda: self._drop_kernel(k))
        return k

    def _drop_kernel(self, k):
        key = (k.op_type, k.device)
        self._kernels[key].remove(k)
        if not self._kernels[key]:
            del self._kernels[key]

    def add_kernel_package(self, package, device):
        """Register every kernel of ``package`` for ``device`` (a registered device), lazily:
        the package's modules are imported the first time a kernel for ``device`` is looked
        up. Each module lists its kernels in ``KERNELS = [(op_type, maker, dtypes), ...]``, an
        entry optionally ending in the kernel's kind: ``(op_type, maker, dtypes, "lod")``; op
        types listed in the module's ``OVERRIDES`` are registered with ``override=True``."""
        self._in_hook("add_kernel_package", KERNELS_HOOK)
        self._check_device(device, f"kernel package {package}")
        if not isinstance(package, str) or not package:
            raise PluginError(f"{self._who(self._plugin)}: a kernel package is an import name "
                              f"('myops.kernels.cpu'), got {package!r}")
        entry = (self._plugin, package)
        self._pending.setdefault(device, []).append(entry)
        self._record(lambda: self._drop_pending(device, entry))

    def _drop_pending(self, device, entry):
        self._pending[device].remove(entry)
        if not self._pending[device]:  # else devices() would still list it
            del self._pending[device]

    def _load_device(self, device):
        """Import the pending kernel packages of ``device``, in plugin order, under the lock.

        A package that fails (say the CUDA kernels without numba installed, or a malformed
        KERNELS entry) adds none of its kernels: it is recorded in ``unavailable`` and the
        others still load; a lookup that needed it reports why. A package leaves ``_pending``
        only once its kernels are in (or it failed), so another thread never sees a device
        as loaded while it is being loaded, and a KeyboardInterrupt leaves it to load again.
        """
        with self._lock:
            self._loading.add(device)
            try:
                failures = self._load_pending(device)
            finally:
                self._loading.discard(device)
        # Warned once the registry is consistent again (a warning may be raised as an error).
        # Inside another plugin's hook (a load forced by its kernel), build_registry warns
        # after the hooks, so that an error filter cannot make it that plugin's failure.
        if self._plugin is not None:
            self._deferred.extend(failures)
        else:
            for error in failures:
                plugin_warning(f"headrace {error}")

    def _load_pending(self, device):
        failures = []
        while self._pending.get(device):
            entry = plugin, package = self._pending[device][0]
            try:
                self._load_package(plugin, package, device)
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # SystemExit in a kernel module included
                error = PluginError(f"{e} (kernel package {package})") \
                    if isinstance(e, PluginError) else PluginError(
                        f"{self._who(plugin)}: loading {device} kernels from {package} "
                        f"failed: {type(e).__name__}: {e}")
                self.unavailable.setdefault(device, []).append(error)
                if not isinstance(e, ImportError):  # a missing optional dependency is no bug
                    failures.append(error)
                else:
                    _log.info("%s kernels unavailable: %s", device, error)
            self._drop_pending(device, entry)
        return failures

    def _load_package(self, plugin, package, device):
        with self._running(plugin, KERNELS_HOOK):  # a failing package takes back its own only
            who = self._who(plugin)
            missing = uncompiled_modules(package)
            if missing:
                raise PluginError(
                    f"{who}: kernel sources installed but never compiled: "
                    f"{', '.join(os.path.basename(m) for m in missing)} (the distribution "
                    f"needs a setup.py that cythonizes them, as `headrace new-plugin` writes)")
            found = 0
            for module in iter_op_modules(package):
                for op_type, maker, dtypes, kind, override in kernel_entries(module, who):
                    self.add_kernel(op_type, device, maker, dtypes, kind=kind,
                                    override=override)
                    found += 1
            _log.debug("%s: %d %s kernels from %s", who, found, device, package)
            if not found:  # else its ops would fail later with "registered kernels: none"
                raise PluginError(
                    f"{who}: no kernels listed (no module with a KERNELS list was found: "
                    f"were its Cython sources left uncompiled?)")

    def _ensure_loaded(self, device):
        if device in self._pending:  # a dict lookup: nothing more once the device is loaded
            self._load_device(device)

    def kernel(self, op_type, device, dtype=None):
        """The kernel for ``op_type`` on ``device`` supporting ``dtype``; KernelNotFoundError
        lists what is registered otherwise (and why a device's kernels could not load)."""
        self._ensure_loaded(device)
        for k in self._kernels.get((op_type, device), ()):
            if dtype is None or k.supports(dtype):
                return k
        have = self.kernels_for(op_type)
        listing = ", ".join(f"{d}: {'/'.join(ts) if ts else 'any'}" for d, ts in have.items())
        why = "; ".join(str(e) for e in self.unavailable.get(device, ()))
        if device not in self._devices:
            why = "; ".join(filter(None, [f"unknown device{_did_you_mean(device, self._devices)}"
                                          f" (known devices: {self._known()})", why]))
        raise KernelNotFoundError(
            f"no kernel for device '{device}'" + (f" and dtype {dtype}" if dtype else "")
            + (f" ({why})" if why else ""),
            op_type=op_type, expected=f"a kernel for {device}/{dtype or 'any dtype'}",
            found=f"registered kernels: {listing or 'none'}")

    def kernels_for(self, op_type):
        """``{device: dtypes}`` of the kernels registered for ``op_type`` (dtypes () = any).
        Imports the kernel packages of every device not loaded yet (failures are recorded in
        ``unavailable``, not raised: listing must work on a machine without a GPU stack)."""
        for device in list(self._pending):
            self._ensure_loaded(device)
        with self._lock:  # a snapshot, should a retried load (after Ctrl-C) be under way
            items = sorted(self._kernels.items())
        out = {}
        for (t, device), ks in items:
            if t == op_type:
                ds = []
                for k in ks:
                    ds.extend(k.dtypes or ())
                out[device] = tuple(dict.fromkeys(ds))
        return out

    def devices(self):
        """Devices that have at least one kernel (or a kernel package not imported yet)."""
        return sorted({d for _, d in self._kernels} | set(self._pending))

    # -- plugin bookkeeping ----------------------------------------------------------------
    @contextlib.contextmanager
    def _running(self, plugin_name, hook):
        """Attribute what is added inside (by ``hook``) to ``plugin_name``; take it all back if
        it raises (anything, KeyboardInterrupt included: the registry is left as it was)."""
        saved = self._plugin, self._undo, self._hook
        self._plugin, self._undo, self._hook = plugin_name, [], hook
        try:
            yield
        except BaseException:
            for undo in reversed(self._undo):
                undo()
            raise
        finally:
            self._plugin, self._undo, self._hook = saved

    def withdraw_plugin(self, plugin_name):
        """Remove everything ``plugin_name`` registered (its later hook failed)."""
        for t in self.ops_of(plugin_name):
            del self._ops[t], self._owners[t]
        for name in [n for n, d in self._devices.items() if d.plugin == plugin_name]:
            del self._devices[name]
        for key in list(self._kernels):
            self._kernels[key] = [k for k in self._kernels[key] if k.plugin != plugin_name]
            if not self._kernels[key]:
                del self._kernels[key]
        self.overrides = [o for o in self.overrides if o.plugin != plugin_name]
        for device in list(self._pending):
            self._pending[device] = [e for e in self._pending[device] if e[0] != plugin_name]
            if not self._pending[device]:
                del self._pending[device]
