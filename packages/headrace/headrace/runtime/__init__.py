"""Running programs: places, tensors, scopes, plans and the Executor."""
from .executor import Executor, FeedError, FetchError
from .place import CPUPlace, CUDAPlace, DeviceUnavailableError, Place
from .scope import Scope, global_scope, scope_guard
from .tensor import LoDError, Tensor, TensorArray, create_lod_tensor

__all__ = ["Executor", "FeedError", "FetchError", "CPUPlace", "CUDAPlace",
           "DeviceUnavailableError", "Place", "Scope", "global_scope", "scope_guard", "LoDError",
           "Tensor", "TensorArray", "create_lod_tensor"]
