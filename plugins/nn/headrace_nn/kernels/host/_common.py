"""What every family's host side shares (private: no op family of this name)."""

__all__ = ["wanted"]


def wanted(info, slots):
    """A bool per gradient output of ``slots``: whether the kernel computes it (bound in the
    op; every one when the kernel is built without ``info``)."""
    return tuple(info is None or info.wants(s) for s in slots)
