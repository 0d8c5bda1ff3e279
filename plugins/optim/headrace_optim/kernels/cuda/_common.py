"""Helpers of this plugin's CUDA kernels: the input checks of the CPU kernels' _common.pxd
(dtype, shape, a one-element LearningRate) on device arrays, reading only their metadata, and
where an update is written (the input's own array when in place, as ``target`` on the CPU)."""
import numpy as np

from headrace.kernels.cuda_launch import empty_like


def _is_device(x):
    return hasattr(x, "copy_to_host") and not isinstance(x, np.ndarray)


def dense(x, op, slot):
    """A float32/float64 dense device array (selected rows and other values refused)."""
    if not _is_device(x):
        raise TypeError(f"{op}: input '{slot}' must be a dense float tensor (a device array "
                        f"on CUDA), got {type(x).__name__}")
    if str(x.dtype) not in ("float32", "float64"):
        raise TypeError(f"{op}: input '{slot}' has dtype {x.dtype}, expected float32 or "
                        f"float64")
    return x


def like_param(x, param, op, slot):
    """A dense input that must have Param's dtype and shape (Grad, the moments)."""
    a = dense(x, op, slot)
    if a.dtype != param.dtype:
        raise TypeError(f"{op}: input '{slot}' is {a.dtype} but Param is {param.dtype}")
    if tuple(a.shape) != tuple(param.shape):
        raise ValueError(f"{op}: input '{slot}' has shape {list(a.shape)}, Param has "
                         f"{list(param.shape)}")
    return a


def scalar(x, op, slot, kinds="f"):
    """A one-element device array (LearningRate, the beta powers): checked by its metadata
    and read by the kernel itself, never on the host."""
    if not _is_device(x):
        raise TypeError(f"{op}: input '{slot}' must be a one-element tensor, got "
                        f"{type(x).__name__}")
    if x.size != 1 or np.dtype(x.dtype).kind not in kinds:
        what = "one float" if kinds == "f" else "one bool"
        raise ValueError(f"{op}: input '{slot}' must hold {what}, got {x.dtype} of shape "
                         f"{list(x.shape)}")
    return x.reshape(1)


def _address(a):
    iface = getattr(a, "__cuda_array_interface__", None)
    return iface["data"][0] if iface else id(a)


def target(a, inplace, reads, own):
    """Where the update of input ``a`` is written: ``a`` itself when the op updates it in
    place and no other array the kernel reads (``reads``, ``a`` at index ``own``) is the same
    memory (each thread reads index i of every input before writing index i, safe only for an
    output over its own input); otherwise a new array."""
    if inplace:
        mine = _address(a)
        if all(j == own or r is None or r.size == 0 or _address(r) != mine
               for j, r in enumerate(reads)):
            return a
    return empty_like(a)


def one_state_update(op, param, grad, learning_rate, state, slot, inplace_p, inplace_s):
    """(Param, Grad, the state, LearningRate, ParamOut's array, the state's output array) of an
    update with one state beside Param (momentum's Velocity, adagrad's Moment), checked in the
    CPU kernel's order."""
    p = dense(param, op, "Param")
    g = like_param(grad, p, op, "Grad")
    s = like_param(state, p, op, slot)
    lr = scalar(learning_rate, op, "LearningRate")
    reads = [p, g, s]
    return p, g, s, lr, target(p, inplace_p, reads, 0), target(s, inplace_s, reads, 2)
