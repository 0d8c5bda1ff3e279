"""Helpers the frame kernels share: reading a one-element condition from any device, and the
record a sub-block keeps per step for its gradient."""
from typing import NamedTuple

import numpy as np


class StepScope(NamedTuple):
    """One step of a sub-block, as its gradient needs it: ``before``, the values (and LoD) of
    the outer variables the block overwrites as they were before the step, and ``after``, the
    values of the block's own variables at the end of the step (``Frame.capture`` dicts; the
    values are references, not copies: kernels write new arrays rather than update them)."""
    before: dict
    after: dict


def scalar(device, value, what):
    """The single element of ``value`` (a host or device array) as a Python scalar."""
    if type(value) is np.ndarray and value.size == 1:
        return value.item()  # the common case, once per loop step: no copies
    host = np.asarray(device.to_host(value))
    if host.size != 1:
        raise ValueError(f"{what} must hold exactly one element, found shape {list(host.shape)}")
    return host.reshape(-1)[0].item()


def kept_ids(plan, attrs):
    """The slots of the block's values a step keeps for the backward pass: those the backward
    pass listed in ``skip_eager_deletion_vars``, else (no list: a program from elsewhere) all
    of the block's own values."""
    names = attrs.get("skip_eager_deletion_vars") or ()
    if not names:
        return plan.local_ids
    ids = (plan.slot_named(n, local=True) for n in names)
    return tuple(i for i in ids if i is not None)
