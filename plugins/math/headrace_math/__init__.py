"""headrace-math: arithmetic, matrix products, activations, reductions, comparisons."""
