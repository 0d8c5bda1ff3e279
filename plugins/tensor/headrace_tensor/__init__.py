"""headrace-tensor: constants from data, random tensors, casts, reshapes, transposes, concat/split,
LoD (feed/fetch, fill_constant, fill_zeros_like and assign are the core's: headrace.core_ops)."""
