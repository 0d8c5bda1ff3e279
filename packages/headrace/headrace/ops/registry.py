"""The registry: op definitions by type and kernels by (op type, device).

Registries are instances: the process has a default one built from the installed plugins
(:func:`headrace.ops.default_registry`), and a test can build its own from explicit plugins
(:func:`headrace.ops.build_registry`).
"""
import contextlib
import difflib
import importlib

from ..errors import KernelNotFoundError, PluginError, UnknownOpError
from .definition import OpDef

__all__ = ["Registry", "Kernel", "KERNEL_KINDS"]

# How the plan calls a kernel, declared when it is registered (never guessed from the object):
#   array  kernel(*arrays) -> tuple of arrays, one entry per output slot (the common case)
#   lod    kernel(*Tensors) -> tuple of Tensors: the kernel computes its outputs' LoD itself
#   frame  kernel(frame): reads and writes by slot name through a Frame (control flow, arrays)
KERNEL_KINDS = ("array", "lod", "frame")


class Kernel:
    """A kernel for one op on one device, for the dtypes it supports, of a declared ``kind``.

    ``fn`` may be given as a ``"module:attribute"`` string; it is imported on first use so that
    device modules load only when their device is used.
    """
    __slots__ = ("op_type", "device", "dtypes", "_fn", "plugin", "kind")

    def __init__(self, op_type, device, fn, dtypes=None, plugin=None, kind="array"):
        self.op_type = op_type
        self.device = device
        self.dtypes = tuple(dtypes) if dtypes is not None else None  # None: any dtype
        self._fn = fn
        self.plugin = plugin
        self.kind = kind

    @property
    def fn(self):
        if isinstance(self._fn, str):
            module, _, attr = self._fn.partition(":")
            try:
                self._fn = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as e:
                raise PluginError(f"kernel {self.op_type}/{self.device} from plugin "
                                  f"{self.plugin!r}: cannot import {module}:{attr}: {e}") from e
        return self._fn

    def supports(self, dtype):
        return self.dtypes is None or dtype in self.dtypes

    def __repr__(self):
        return f"<Kernel {self.op_type}/{self.device} {list(self.dtypes or ['any'])}>"


class Registry:
    """Op definitions and kernels, with the plugins they came from and the plugins that failed."""

    def __init__(self):
        self._ops = {}
        self._kernels = {}  # (op_type, device) -> [Kernel]
        self._pending = {}  # device -> [(plugin, package)] kernel packages not imported yet
        self.unavailable = {}  # device -> [PluginError] kernel packages that failed to import
        self.plugins = []   # names of plugins that loaded
        self.failed = {}    # plugin name -> the exception it raised
        self._plugin = None  # the plugin whose hooks are running
        self._added = None   # what the running plugin added, for withdrawal on failure

    # -- ops -------------------------------------------------------------------------------
    def add_op(self, opdef):
        """Register an :class:`OpDef`; a type registered twice is an error."""
        if not isinstance(opdef, OpDef):
            raise PluginError(f"plugin {self._plugin!r}: add_op() takes an OpDef, "
                              f"got {type(opdef).__name__}")
        if opdef.type in self._ops:
            raise PluginError(f"plugin {self._plugin!r}: op '{opdef.type}' is already "
                              f"registered by plugin {self._ops[opdef.type].plugin!r}")
        opdef.plugin = self._plugin
        self._ops[opdef.type] = opdef
        if self._added is not None:
            self._added.append(("op", opdef.type))
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
    def add_kernel(self, op_type, device, fn, dtypes=None, *, kind="array"):
        """Register ``fn`` (callable or ``"module:attr"``) for ``op_type`` on ``device``;
        ``kind`` (one of :data:`KERNEL_KINDS`) says how the plan calls it."""
        if not isinstance(device, str) or not device:
            raise PluginError(f"plugin {self._plugin!r}: device must be a name like 'cpu'")
        if kind not in KERNEL_KINDS:
            raise PluginError(f"plugin {self._plugin!r}: kernel {op_type}/{device}: kind must "
                              f"be one of {', '.join(KERNEL_KINDS)}, got {kind!r}")
        k = Kernel(op_type, device, fn, dtypes, self._plugin, kind)
        self._kernels.setdefault((op_type, device), []).append(k)
        if self._added is not None:
            self._added.append(("kernel", (op_type, device), k))
        return k

    def add_kernel_package(self, package, device):
        """Register every kernel of ``package`` for ``device``, lazily: the package's modules
        are imported the first time a kernel for ``device`` is looked up. Each module lists
        its kernels in ``KERNELS = [(op_type, maker, dtypes), ...]``, an entry optionally
        ending in the kernel's kind: ``(op_type, maker, dtypes, "lod")``."""
        self._pending.setdefault(device, []).append((self._plugin, package))
        if self._added is not None:
            self._added.append(("package", device, (self._plugin, package)))

    def _load_device(self, device):
        """Import the pending kernel packages of ``device``. A package that fails (say the CUDA
        kernels without numba installed) is recorded in ``unavailable`` and skipped; the
        others still load, and a lookup that needed it reports why."""
        from .package import iter_op_modules
        for plugin, package in self._pending.pop(device, ()):
            try:
                found = [entry for module in iter_op_modules(package)
                         for entry in getattr(module, "KERNELS", ())]
            except Exception as e:
                self.unavailable.setdefault(device, []).append(PluginError(
                    f"plugin {plugin!r}: loading {device} kernels from {package} failed: "
                    f"{type(e).__name__}: {e}"))
                continue
            self._plugin = plugin
            try:
                for entry in found:
                    op_type, maker, dtypes, *kind = entry
                    self.add_kernel(op_type, device, maker, dtypes, kind=kind[0] if kind
                                    else "array")
            finally:
                self._plugin = None

    def kernel(self, op_type, device, dtype=None):
        """The kernel for ``op_type`` on ``device`` supporting ``dtype``; KernelNotFoundError
        lists what is registered otherwise (and why a device's kernels could not load)."""
        if device in self._pending:
            self._load_device(device)
        for k in self._kernels.get((op_type, device), ()):
            if dtype is None or k.supports(dtype):
                return k
        have = self.kernels_for(op_type)
        listing = ", ".join(f"{d}: {'/'.join(ts) if ts else 'any'}" for d, ts in have.items())
        why = "; ".join(str(e) for e in self.unavailable.get(device, ()))
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
            self._load_device(device)
        out = {}
        for (t, device), ks in sorted(self._kernels.items()):
            if t == op_type:
                ds = []
                for k in ks:
                    ds.extend(k.dtypes or ())
                out[device] = tuple(dict.fromkeys(ds))
        return out

    def devices(self):
        """Devices that have at least one kernel."""
        return sorted({d for _, d in self._kernels} | set(self._pending))

    # -- plugin bookkeeping ----------------------------------------------------------------
    @contextlib.contextmanager
    def _running(self, plugin_name):
        """Attribute what a plugin's hook adds to it; withdraw it all if the hook raises."""
        self._plugin, self._added = plugin_name, []
        try:
            yield
        except BaseException:
            for entry in reversed(self._added):
                if entry[0] == "op":
                    self._ops.pop(entry[1], None)
                elif entry[0] == "package":
                    self._pending[entry[1]].remove(entry[2])
                    if not self._pending[entry[1]]:  # else devices() would still list it
                        del self._pending[entry[1]]
                else:
                    self._kernels[entry[1]].remove(entry[2])
                    if not self._kernels[entry[1]]:
                        del self._kernels[entry[1]]
            raise
        finally:
            self._plugin, self._added = None, None

    def withdraw_plugin(self, plugin_name):
        """Remove everything ``plugin_name`` registered (its later hook failed)."""
        for t in [t for t, d in self._ops.items() if d.plugin == plugin_name]:
            del self._ops[t]
        for key in list(self._kernels):
            self._kernels[key] = [k for k in self._kernels[key] if k.plugin != plugin_name]
            if not self._kernels[key]:
                del self._kernels[key]
        for device in list(self._pending):
            self._pending[device] = [e for e in self._pending[device] if e[0] != plugin_name]
            if not self._pending[device]:
                del self._pending[device]
