"""Places: where tensors live and kernels run. A place names a device module, imported on first
use (tinygrad-style), so a CPU-only program never imports Numba's CUDA module.

Devices are registered by plugins (``headrace_register_devices``); a Place subclass for a
plugin's device sets only ``device`` and finds its module through the default registry.
"""
import importlib

from ..devices import BUILTIN_DEVICES
from ..errors import HeadraceError
from ..ops.plugins import default_registry

__all__ = ["Place", "CPUPlace", "CUDAPlace", "DeviceUnavailableError"]


class DeviceUnavailableError(HeadraceError):
    """The device a place names cannot be used here (no backend, no GPU)."""


class Place:
    """Base of places. ``device`` is the kernel registry's device key ('cpu', 'cuda');
    ``_module_name`` its device module, or None: the one the default registry has for
    ``device``."""
    device = None
    _module_name = None

    def __init__(self):
        self._module = None

    def module(self):
        """The device module (headrace.devices.<device>), imported on first use."""
        if self._module is None:
            try:
                mod = importlib.import_module(self._module_name or self._registered_module())
                mod.check_available(self)
            except DeviceUnavailableError:
                raise
            except Exception as e:
                raise DeviceUnavailableError(
                    f"{self!r}: the {self.device} backend is not available: "
                    f"{type(e).__name__}: {e}") from e
            self._module = mod
        return self._module

    def _registered_module(self):
        module = default_registry().device(self.device).module
        if module is None:
            raise DeviceUnavailableError(f"{self!r}: device {self.device!r} was registered "
                                         f"without a device module")
        return module

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__.get("device_id") == \
            other.__dict__.get("device_id")

    def __hash__(self):
        return hash((type(self).__name__, self.__dict__.get("device_id")))


class CPUPlace(Place):
    """The host CPU."""
    device = "cpu"
    _module_name = BUILTIN_DEVICES["cpu"]

    def __repr__(self):
        return "CPUPlace()"


class CUDAPlace(Place):
    """GPU ``device_id`` through Numba CUDA (or Numba's CUDA simulator when
    NUMBA_ENABLE_CUDASIM=1 is set before numba is imported)."""
    device = "cuda"
    _module_name = BUILTIN_DEVICES["cuda"]

    def __init__(self, device_id=0):
        super().__init__()
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise HeadraceError(f"CUDAPlace: device_id must be an int >= 0, got {device_id!r}")
        self.device_id = device_id

    def __repr__(self):
        return f"CUDAPlace({self.device_id})"
