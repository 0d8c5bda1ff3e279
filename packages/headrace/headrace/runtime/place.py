"""Places: where tensors live and kernels run. A place names a device module, imported on first
use (tinygrad-style), so a CPU-only program never imports Numba's CUDA module."""
import importlib

from ..errors import HeadraceError

__all__ = ["Place", "CPUPlace", "CUDAPlace", "DeviceUnavailableError"]


class DeviceUnavailableError(HeadraceError):
    """The device a place names cannot be used here (no backend, no GPU)."""


class Place:
    """Base of places. ``device`` is the kernel registry's device key ('cpu', 'cuda')."""
    device = None
    _module_name = None

    def __init__(self):
        self._module = None

    def module(self):
        """The device module (headrace.devices.<device>), imported on first use."""
        if self._module is None:
            try:
                mod = importlib.import_module(self._module_name)
                mod.check_available(self)
            except DeviceUnavailableError:
                raise
            except Exception as e:
                raise DeviceUnavailableError(
                    f"{self!r}: the {self.device} backend is not available: "
                    f"{type(e).__name__}: {e}") from e
            self._module = mod
        return self._module

    def __eq__(self, other):
        return type(self) is type(other) and self.__dict__.get("device_id") == \
            other.__dict__.get("device_id")

    def __hash__(self):
        return hash((type(self).__name__, self.__dict__.get("device_id")))


class CPUPlace(Place):
    """The host CPU."""
    device = "cpu"
    _module_name = "headrace.devices.cpu"

    def __repr__(self):
        return "CPUPlace()"


class CUDAPlace(Place):
    """GPU ``device_id`` through Numba CUDA (or Numba's CUDA simulator when
    NUMBA_ENABLE_CUDASIM=1 is set before numba is imported)."""
    device = "cuda"
    _module_name = "headrace.devices.cuda"

    def __init__(self, device_id=0):
        super().__init__()
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise HeadraceError(f"CUDAPlace: device_id must be an int >= 0, got {device_id!r}")
        self.device_id = device_id

    def __repr__(self):
        return f"CUDAPlace({self.device_id})"
