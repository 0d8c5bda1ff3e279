"""Device modules, one per device, imported on first use through a Place.

A device module provides: ``check_available(place)``, ``to_device(array, place)`` (host NumPy
array -> device array), ``to_host(value)`` (device array -> NumPy array), ``is_array(value)``.

Devices are registered by plugins through the ``headrace_register_devices`` hook; the core's own
plugin registers the two below.
"""

__all__ = ["BUILTIN_DEVICES"]

# device name -> its device module (registered by the core plugin, named by CPUPlace/CUDAPlace)
BUILTIN_DEVICES = {"cpu": "headrace.devices.cpu", "cuda": "headrace.devices.cuda"}
