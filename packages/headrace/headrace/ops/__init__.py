"""Op machinery: definitions (the schema), inference contexts, registries and plugin hooks."""
from .attrs import ATTR_TYPES
from .definition import COMMON_ATTRS, REQUIRED, Attr, AttrDef, In, OpDef, Out, Slot
from .hookspecs import hookimpl, hookspec
from .infer import DictInferContext, InferContext, VarMeta
from .kernel import KERNEL_KINDS, Device, Kernel, KernelOverride
from .plugins import (AUTOLOAD_ENV, ENTRY_POINT_GROUP, FIRST_PARTY, PluginWarning,
                      build_registry, default_registry, discover, registry_guard,
                      set_default_registry)
from .registry import Registry
from .package import iter_op_modules, register_ops_package
from . import shape

__all__ = [
    "ATTR_TYPES", "COMMON_ATTRS", "REQUIRED", "Attr", "AttrDef", "In", "OpDef", "Out", "Slot",
    "hookimpl", "hookspec", "DictInferContext", "InferContext", "VarMeta", "AUTOLOAD_ENV",
    "ENTRY_POINT_GROUP", "PluginWarning", "build_registry", "default_registry", "discover",
    "registry_guard", "set_default_registry", "KERNEL_KINDS", "Kernel", "Registry", "shape",
    "iter_op_modules", "register_ops_package", "Device", "KernelOverride", "FIRST_PARTY",
]
