"""Gradient checks of whole programs: what ``append_backward`` computes through a program
(control flow included) against central finite differences of the same program's loss.

::

    analytic, numeric = program_gradients(main, startup, loss, ["W", "x"], feed)
    for name in analytic:
        np.testing.assert_allclose(analytic[name], numeric[name], rtol=1e-6, atol=1e-8)

``wrt`` names parameters (their values come from running ``startup``) or fed variables, all
float64. The program must already hold its backward pass (``append_backward(loss)``).
"""
import numpy as np

from ..ops.grad import grad_name
from ..runtime.executor import Executor
from ..runtime.scope import Scope
from ..runtime.tensor import Tensor

__all__ = ["program_gradients"]


def program_gradients(main, startup, loss, wrt, feed, eps=1e-6, place=None, values=None):
    """``({name: analytic gradient}, {name: numeric gradient})`` of ``loss`` w.r.t. ``wrt``.

    ``values``: ``{parameter name: array}`` set after ``startup`` runs (to compare two
    programs at the same point)."""
    exe = Executor(place)
    scope = Scope()
    if startup is not None:
        exe.run(startup, scope=scope)
    for n, v in (values or {}).items():
        scope.set(n, Tensor(np.array(v, copy=True)))
    # Copies (perturbed in place below); a Tensor keeps its LoD.
    feed = {k: Tensor(np.array(v.numpy(), copy=True), v.lod) if isinstance(v, Tensor)
            else np.array(v, copy=True) for k, v in feed.items()}
    params = {n: np.array(scope.get(n).numpy(), copy=True) for n in wrt if n not in feed}
    loss_name = loss if isinstance(loss, str) else loss.name
    fetched = exe.run(main, feed=feed, fetch_list=[grad_name(n) for n in wrt], scope=scope)
    analytic = {n: np.asarray(g) for n, g in zip(wrt, fetched)}

    def loss_at():
        for n, v in params.items():
            scope.set(n, Tensor(v.copy()))
        (value,) = exe.run(main, feed=feed, fetch_list=[loss_name], scope=scope)
        return float(np.asarray(value).reshape(-1)[0])

    numeric = {}
    for n in wrt:
        value = feed[n] if n in feed else params[n]
        value = value.data if isinstance(value, Tensor) else value
        if value.dtype != np.float64:
            raise TypeError(f"program_gradients: '{n}' is {value.dtype}; finite differences "
                            f"need float64")
        g = np.zeros_like(value)
        flat, gflat = value.reshape(-1), g.reshape(-1)
        for k in range(flat.size):
            old = flat[k]
            flat[k] = old + eps
            up = loss_at()
            flat[k] = old - eps
            down = loss_at()
            flat[k] = old
            gflat[k] = (up - down) / (2 * eps)
        numeric[n] = g
    return analytic, numeric
