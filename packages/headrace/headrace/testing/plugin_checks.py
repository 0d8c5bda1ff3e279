"""Checks a plugin's own tests run over its op definitions: registered by the plugin, and
documented down to every slot and attribute, with the shape rule in the plugin's package."""
from ..ops.package import iter_op_modules
from ..ops.plugins import default_registry

__all__ = ["op_definitions", "definition_problems", "SHARED_RULES"]

# The core's rule libraries a plugin may use as they are: ``infer=same_as("X")`` from
# headrace.ops.shape, and the default rule of ``grad_of``'s gradient definitions.
SHARED_RULES = ("headrace.ops.shape", "headrace.ops.grad")


def op_definitions(package):
    """Every OpDef listed in ``OPS`` by the modules of ``package`` (e.g. "headrace_math.ops")."""
    return [d for m in iter_op_modules(package) for d in m.OPS]


def definition_problems(opdef, plugin, package, registry=None):
    """What is wrong with ``opdef`` as plugin ``plugin`` ships it (empty when nothing is)."""
    registry = registry or default_registry()
    problems = []
    if registry.find(opdef.type) is not opdef:
        problems.append("the default registry holds another definition (or none)")
    owner = registry.plugin_of(opdef.type) if opdef.type in registry else None
    if plugin in registry.failed or owner != plugin:
        problems.append(f"registered by {owner!r}, not {plugin!r}")
    if not opdef.doc.strip():
        problems.append("no doc")
    undocumented = [s.name for s in opdef.inputs + opdef.outputs if not s.doc.strip()]
    undocumented += [a.name for a in opdef.attrs.values() if not a.doc.strip()]
    if undocumented:
        problems.append(f"undocumented slots/attributes: {undocumented}")
    module = getattr(opdef.infer, "__module__", "") or ""
    if opdef.infer is None or not (module.startswith(package.split(".")[0] + ".")
                                   or module in SHARED_RULES):
        problems.append(f"its shape rule is missing or lives outside the plugin and the "
                        f"core's shared rules ({', '.join(SHARED_RULES)}): {module or 'none'}")
    return problems
