"""batch_norm's host logic, one copy for kernels/cpu/batch_norm.pyx and
kernels/cuda/batch_norm.py: the attributes, and whether the kernels use the running (global)
statistics."""

__all__ = ["BatchNormAttrs", "GRADS"]

# batch_norm_grad's outputs, in its kernels' order.
GRADS = ("X@GRAD", "Scale@GRAD", "Bias@GRAD")


class BatchNormAttrs:
    """global_stats (is_test without trainable_statistics, or use_global_stats: Mean/Variance
    are used, not the batch's), NHWC or not, momentum, epsilon."""

    def __init__(self, attrs):
        test_mode = attrs.get("is_test", False) and not attrs.get("trainable_statistics", False)
        self.global_stats = test_mode or attrs.get("use_global_stats", False)
        self.nhwc = attrs.get("data_layout", "NCHW") == "NHWC"
        self.momentum = attrs.get("momentum", 0.9)
        self.eps = attrs.get("epsilon", 1e-5)
