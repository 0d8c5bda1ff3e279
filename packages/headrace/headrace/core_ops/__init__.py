"""The core's own op plugin: the ops the core itself emits, so that the core works with any
single plugin beside it (or none).

It is laid out as any plugin is (``ops/<family>.py`` definitions, ``kernels/cpu/<family>.pyx``
Cython kernels, ``reference/<family>.py`` NumPy references and samples) and registered first,
under the name ``headrace:core`` (:mod:`.plugin`), so a third party cannot shadow these ops.

What it owns, and who emits each op without any layer asking for it:

- ``feed``, ``fetch``: the executor's entry and exit points (``Executor.run`` and
  ``io.save_inference_model`` insert them); ``no_kernel``: the executor interprets them.
- ``fill_constant``: ``append_backward``'s seed (d loss / d loss = 1), ``ConstantInitializer``
  (the default of biases; optimizers' states and learning rates), the constants of
  regularizers and clipping, and of the Variable operators on integer variables.
- ``fill_zeros_like``: ``append_backward``'s stand-in for the gradient of an output nothing
  reads.
- ``sum``: ``append_backward`` adding up several contributions to one gradient; regularizers
  adding their term to a gradient.
- ``scale``: ``gradients(..., target_gradients=...)``, and the gradient of ``scale`` and of
  ``sum``; the L2Decay term; Adam's beta powers; the Variable operators with a scalar
  (``x * 2``, ``x + 1``, ``-x``).
- ``assign``: ``gradients`` with a given target gradient; ``layers.assign`` of a variable.

What stays in the plugins, because only an optional layer or helper emits it and a program
that does not use that helper never needs it: ``uniform_random``/``gaussian_random`` (the
Xavier/Normal initializers, in headrace-tensor, with their generator state), ``assign_value``
(``layers.assign`` of NumPy data, headrace-tensor), the L1Decay and gradient-clipping ops
(``greater_than``, ``less_than``, ``cast``, ``square``, ``reduce_sum``, ``sqrt``,
``elementwise_*``: headrace-math and headrace-tensor), the Variable operators between two
variables (``elementwise_*``, comparisons: headrace-math),
learning-rate schedules (``increment``: headrace-control) and the optimizer ops (``sgd``,
``momentum``, ``adam``...: headrace-optim). Each is an op a user chose by choosing that
helper, so a missing plugin is reported as an unknown op that names it.
"""
