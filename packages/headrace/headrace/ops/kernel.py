"""What the registry holds besides definitions: kernels, devices, kernel overrides, and the
``KERNELS`` lists of kernel packages (read and checked here, so that a malformed entry is a
clear error of its plugin, not a crash in the registry)."""
import collections
import importlib

from ..dtypes import DTYPES
from ..errors import PluginError

__all__ = ["Kernel", "KERNEL_KINDS", "Device", "KernelOverride", "kernel_entries"]

# How the plan calls a kernel, declared when it is registered (never guessed from the object):
#   array  kernel(*arrays) -> tuple of arrays, one entry per output slot (the common case)
#   lod    kernel(*Tensors) -> tuple of Tensors: the kernel computes its outputs' LoD itself
#   frame  kernel(frame): reads and writes by slot name through a Frame (control flow, arrays)
KERNEL_KINDS = ("array", "lod", "frame")

Device = collections.namedtuple("Device", "name module plugin")
Device.__doc__ = """A device kernels can be registered for: its name (the kernel registry's key
and ``Place.device``), its device module (``"package.module"``, imported on first use by a
Place), and the plugin that registered it."""

KernelOverride = collections.namedtuple("KernelOverride",
                                        "op_type device dtypes plugin replaced")
KernelOverride.__doc__ = """A kernel registered with ``override=True`` that takes precedence over
the kernels of earlier plugins (``replaced``, plugin names) for ``dtypes`` (None: any)."""


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
            except KeyboardInterrupt:
                raise  # still a string: the next use imports again
            except BaseException as e:  # SystemExit in a kernel module is its plugin's error
                raise PluginError(f"kernel {self.op_type}/{self.device} from plugin "
                                  f"{self.plugin!r}: cannot import {module}:{attr}: "
                                  f"{type(e).__name__}: {e}") from e
        return self._fn

    def supports(self, dtype):
        return self.dtypes is None or dtype in self.dtypes

    def overlaps(self, dtypes):
        """Whether this kernel and one for ``dtypes`` (None: any) would serve a common dtype."""
        return self.dtypes is None or dtypes is None or not set(self.dtypes).isdisjoint(dtypes)

    def __repr__(self):
        return f"<Kernel {self.op_type}/{self.device} {list(self.dtypes or ['any'])}>"


def check_kernel_args(who, op_type, device, fn, dtypes, kind):
    """The arguments of ``add_kernel`` as checked before anything is registered; returns the
    dtypes as a tuple (or None). ``who`` names the plugin in messages."""
    where = f"{who}: kernel {op_type}/{device}"
    if not isinstance(op_type, str) or not op_type.isidentifier():
        raise PluginError(f"{who}: a kernel's op type must be an op type name, got {op_type!r}")
    if isinstance(fn, str):
        if not all(fn.partition(":")[::2]):
            raise PluginError(f"{where}: a kernel given by name must read 'module:attribute', "
                              f"got {fn!r}")
    elif not callable(fn):
        raise PluginError(f"{where}: the kernel must be callable or 'module:attribute', "
                          f"got {type(fn).__name__}")
    if kind not in KERNEL_KINDS:
        raise PluginError(f"{where}: kind must be one of {', '.join(KERNEL_KINDS)}, "
                          f"got {kind!r}")
    if dtypes is None:
        return None
    if isinstance(dtypes, str) or not _iterable(dtypes):
        raise PluginError(f"{where}: dtypes must be a list of dtype names (or None for any), "
                          f"got {dtypes!r}")
    dtypes = tuple(dtypes)
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        raise PluginError(f"{where}: unknown dtypes {unknown}; dtype names are "
                          f"{', '.join(DTYPES)}")
    return dtypes


def _iterable(value):
    try:
        iter(value)
    except TypeError:
        return False
    return True


def kernel_entries(module, who):
    """``(op_type, maker, dtypes, kind, override)`` for every entry of ``module.KERNELS``.

    An entry is ``(op_type, maker, dtypes)`` or ``(op_type, maker, dtypes, kind)``; op types
    listed in the module's ``OVERRIDES`` replace other plugins' kernels (``override=True``).
    Anything else is a PluginError naming ``who``, the module and the entry.
    """
    name = module.__name__
    entries = getattr(module, "KERNELS", ())
    if isinstance(entries, (str, bytes)) or not _iterable(entries):
        raise PluginError(f"{who}: {name}.KERNELS must be a list of (op_type, maker, dtypes"
                          f"[, kind]) tuples, got {type(entries).__name__}")
    overrides = getattr(module, "OVERRIDES", ())
    if isinstance(overrides, str) or not _iterable(overrides):
        raise PluginError(f"{who}: {name}.OVERRIDES must be a list of op types, "
                          f"got {overrides!r}")
    overrides = set(overrides)
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, (tuple, list)) or len(entry) not in (3, 4):
            raise PluginError(f"{who}: {name}.KERNELS[{i}] must be (op_type, maker, dtypes"
                              f"[, kind]), got {entry!r}")
        op_type, maker, dtypes = entry[:3]
        out.append((op_type, maker, dtypes, entry[3] if len(entry) == 4 else "array",
                    op_type in overrides))
    stray = overrides - {e[0] for e in out}
    if stray:
        raise PluginError(f"{who}: {name}.OVERRIDES names op types without a kernel in "
                          f"KERNELS: {sorted(stray, key=str)}")
    return out
