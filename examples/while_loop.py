"""Newton's method for square roots in a ``while_loop`` with a data-dependent stopping rule,
differentiated through the loop.

``x <- (x + a / x) / 2`` runs until every element moved by less than ``tol`` (at most 100
steps), so how many steps run depends on the data. The gradient of ``sum(sqrt(a))`` w.r.t.
``a`` flows back through every step that ran (``while_grad``), and matches the calculus,
``1 / (2 sqrt(a))``::

    python examples/while_loop.py
"""
import numpy as np

import headrace as hr
from headrace import layers


def build(tol=1e-10, max_steps=100):
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        a = layers.data("a", shape=[4], dtype="float64", append_batch_size=False)
        a.stop_gradient = False
        x0 = layers.scale(a, scale=0.5, bias=0.5)            # a start above sqrt(a)
        i0 = layers.fill_constant([1], "int64", 0)
        moved0 = layers.fill_constant([1], "float64", 1.0)

        def cond(i, x, moved):
            small = layers.less_than(layers.fill_constant([1], "float64", tol), moved)
            return layers.logical_and(layers.less_than(i, layers.fill_constant(
                [1], "int64", max_steps)), small)

        def body(i, x, moved):
            new = layers.scale(layers.elementwise_add(x, layers.elementwise_div(a, x)),
                               scale=0.5)
            step = layers.reduce_max(layers.abs(layers.elementwise_sub(new, x)))
            return [layers.increment(i, in_place=False), new, layers.reshape(step, [1])]

        steps, root, _ = layers.while_loop(cond, body, [i0, x0, moved0])
        total = layers.reduce_sum(root)
        (grad,) = hr.gradients(total, [a])
    return main, steps, root, grad


def main(values=(2.0, 9.0, 0.25, 1e4), verbose=True):
    prog, steps, root, grad = build()
    a = np.array(values, np.float64)
    n, r, g = hr.Executor().run(prog, feed={"a": a}, fetch_list=[steps, root, grad],
                                scope=hr.Scope())
    if verbose:
        print(f"{int(n[0])} Newton steps: sqrt({a}) = {r}")
        print(f"d sum(sqrt(a)) / da = {g}  (1 / (2 sqrt(a)) = {0.5 / np.sqrt(a)})")
    return int(n[0]), r, g


if __name__ == "__main__":
    main()
