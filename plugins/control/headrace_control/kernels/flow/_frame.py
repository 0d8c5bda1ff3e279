"""Helpers the frame kernels share: reading a one-element condition from any device."""
import numpy as np


def scalar(device, value, what):
    """The single element of ``value`` (a host or device array) as a Python scalar."""
    host = np.asarray(device.to_host(value))
    if host.size != 1:
        raise ValueError(f"{what} must hold exactly one element, found shape {list(host.shape)}")
    return host.reshape(-1)[0].item()


def writes(block, name):
    """True if an op of ``block`` or of its sub-blocks writes variable ``name``."""
    for op in block.ops:
        if name in op.output_arg_names or any(writes(b, name) for b in op.sub_blocks()):
            return True
    return False


def snapshot(values, lods, ids):
    """The values (and LoD) of slots ``ids``: one kept step scope."""
    return {i: (values[i], lods.get(i)) for i in ids}
