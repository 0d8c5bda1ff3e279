"""Hooks of the built-in core plugin, registered before any installed plugin (as pytest
registers its essential plugins first): its ops cannot be shadowed by a third party."""
from ..ops.hookspecs import hookimpl

NAME = "headrace:core"


@hookimpl
def headrace_register_ops(registry):
    """The core's ops (filled in as they move here from the plugins)."""


@hookimpl
def headrace_register_kernels(registry):
    """The core's kernels."""
