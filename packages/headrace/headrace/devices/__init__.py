"""Device modules, one per device, imported on first use through a Place.

A device module provides: ``check_available(place)``, ``to_device(array, place)`` (host NumPy
array -> device array), ``to_host(value)`` (device array -> NumPy array), ``is_array(value)``.
"""
