"""headrace-tensor: tensor creation, copies, casts, reshapes, concat/split, feed/fetch."""
