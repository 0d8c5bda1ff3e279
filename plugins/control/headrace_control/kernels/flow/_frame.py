"""Helpers the frame kernels share: reading a one-element condition from any device."""
import numpy as np


def scalar(device, value, what):
    """The single element of ``value`` (a host or device array) as a Python scalar."""
    host = np.asarray(device.to_host(value))
    if host.size != 1:
        raise ValueError(f"{what} must hold exactly one element, found shape {list(host.shape)}")
    return host.reshape(-1)[0].item()
