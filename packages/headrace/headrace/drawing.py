"""Pictures of programs: ``draw(program, path=None, format="svg")`` renders a program with
Graphviz (and ``headrace show --graph FILE -o out.svg``).

Ops are boxes, variables ellipses; an edge carries the shape of the variable it moves. Data
(fed) variables are blue, parameters green with a double border, gradients (``@GRAD``) orange
and dashed, other persistable state (optimizer moments, learning rates) grey. The blocks an op
owns (a ``while`` body, a ``conditional_block``'s branch) are clusters, nested as the blocks
are, with a dotted edge from the owning op; a variable sits in the cluster of the block that
declares it, so reads of outer variables cross the cluster's border.

Every name and op type from the program is escaped (``printable``, then HTML) into HTML-like
labels, so a crafted program file cannot inject Graphviz syntax. Node ids are numbers.

The ``graphviz`` Python package (the ``graphviz`` extra) builds the DOT source; rendering runs
Graphviz's ``dot`` program, a system package (``apt-get install graphviz``).
"""
import html
import os

from .errors import HeadraceError
from .framework import Program
from .framework.printable import printable

__all__ = ["draw", "graphviz_module", "STYLES"]

_HOLDER_OPS = ("feed", "fetch")
_HOLDER_KINDS = ("feed_minibatch", "fetch_list")

# Graphviz attributes per variable role (see the module's docstring).
STYLES = {
    "data": {"style": "filled", "fillcolor": "#cfe2ff", "color": "#3d6fb6"},
    "parameter": {"style": "filled", "fillcolor": "#d4edda", "color": "#2e7d32",
                  "peripheries": "2"},
    "gradient": {"style": "filled,dashed", "fillcolor": "#ffe5cc", "color": "#d9822b"},
    "persistable": {"style": "filled", "fillcolor": "#e9ecef", "color": "#6c757d"},
    "variable": {"style": "solid", "color": "#495057"},
}
_OP_STYLE = {"shape": "box", "style": "rounded,filled", "fillcolor": "#fff3bf",
             "color": "#8d6e00", "fontname": "Helvetica"}


def graphviz_module():
    """The ``graphviz`` package, or a HeadraceError saying how to install it."""
    try:
        import graphviz
    except ImportError:
        raise HeadraceError("drawing a program needs the graphviz package: pip install "
                            "headrace[graphviz] (or pip install graphviz), and Graphviz's dot "
                            "program (apt-get install graphviz)") from None
    return graphviz


def _text(value):
    return html.escape(printable(str(value)), quote=True)


def _role(var):
    if var.desc.is_parameter:
        return "parameter"
    if "@GRAD" in var.name:
        return "gradient"
    if var.desc.need_check_feed:
        return "data"
    if var.persistable:
        return "persistable"
    return "variable"


def _shape_text(var):
    if var is None or var.kind not in ("lod_tensor", "selected_rows"):
        return ""
    return "[" + ", ".join(str(d) for d in var.shape) + "]"


class _Drawing:
    def __init__(self, program, graphviz, show_feed_fetch, rankdir):
        self.program = program
        self.show_feed_fetch = show_feed_fetch
        self.graph = graphviz.Digraph("program", graph_attr={
            "rankdir": rankdir, "compound": "true", "fontname": "Helvetica", "nodesep": "0.3",
            "ranksep": "0.35"}, node_attr={"fontname": "Helvetica", "fontsize": "11"},
            edge_attr={"fontname": "Helvetica", "fontsize": "9", "color": "#555555"})
        self.ids = {}
        self.edges = []
        self._declared = {}      # block idx -> names of the variables drawn in it

    def node_id(self, key):
        return self.ids.setdefault(key, f"n{len(self.ids)}")

    def var_key(self, block, name):
        """The (declaring block, name) of ``name`` as seen from ``block``."""
        b = block
        while b is not None:
            if name in b.vars:
                return b.idx, name
            b = b.parent
        return block.idx, name          # undeclared: drawn where it is used

    def visible(self, op):
        return self.show_feed_fetch or op.type not in _HOLDER_OPS

    def collect(self, block):
        """Record the variables each block's ops use (in their declaring blocks) and the edges
        (added at the end, so that no edge places a node before its cluster does)."""
        for op in block.ops:
            if not self.visible(op):
                continue
            op_key = ("op", block.idx, id(op))
            for slot, names in op.inputs.items():
                for name in names:
                    self._edge(self.var_key(block, name), op_key, block, name, slot)
            for slot, names in op.outputs.items():
                for name in names:
                    self._edge(op_key, self.var_key(block, name), block, name, slot)
            for sub in op.sub_blocks():
                self.collect(sub)

    def _edge(self, tail, head, block, name, slot):
        var_key = head if tail[0] == "op" else tail
        var = block.find_var(name)
        if var is not None and var.kind in _HOLDER_KINDS and not self.show_feed_fetch:
            return
        self._declared.setdefault(var_key[0], {})[name] = var
        # The data path weighs more than parameter edges: it stays a straight spine and the
        # parameters hang beside it.
        spine = var is None or not var.persistable
        self.edges.append((tail, head, _shape_text(var), slot, "4" if spine else "1"))

    def draw_block(self, graph, block):
        for name, var in self._declared.get(block.idx, {}).items():
            role = _role(var) if var is not None else "variable"
            dtype = f'<BR/><FONT POINT-SIZE="8" COLOR="#666666">{_text(var.dtype)}</FONT>' \
                if var is not None and var.kind == "lod_tensor" else ""
            graph.node(self.node_id((block.idx, name)), f"<{_text(name)}{dtype}>",
                       shape="ellipse", **STYLES[role])
        for i, op in enumerate(block.ops):
            if not self.visible(op):
                continue
            op_id = self.node_id(("op", block.idx, id(op)))
            graph.node(op_id, f"<<B>{_text(op.type)}</B>>", **_OP_STYLE)
            for sub in op.sub_blocks():
                cluster = f"cluster_block{sub.idx}"
                with graph.subgraph(name=cluster) as c:
                    c.attr(label=f"<block {sub.idx}: {_text(op.type)} (block {block.idx}, "
                                 f"op #{i})>", style="rounded,dashed", color="#7a7a7a",
                           fontsize="10")
                    self.draw_block(c, sub)
                    anchor = self._first_node(sub)
                if anchor is not None:
                    self.graph.edge(op_id, anchor, lhead=cluster, style="dotted",
                                    arrowhead="odiamond", color="#7a7a7a")

    def _first_node(self, block):
        for op in block.ops:
            if self.visible(op):
                return self.node_id(("op", block.idx, id(op)))
        return None

    def finish(self):
        for tail, head, shape, slot, weight in self.edges:
            self.graph.edge(self.node_id(tail), self.node_id(head),
                            label=f"<{_text(shape)}>" if shape else None,
                            tooltip=printable(slot), weight=weight)
        return self.graph


def draw(program, path=None, format="svg", show_feed_fetch=False, rankdir="TB"):  # noqa: A002
    """A ``graphviz.Digraph`` of ``program`` (every block reachable from the global block).
    With ``path``, also render it with Graphviz's ``dot`` in ``format`` (svg, png, pdf, ...)
    and write it there. ``show_feed_fetch``: draw feed/fetch ops and their holder variables.
    ``rankdir``: TB (top to bottom) or LR."""
    if not isinstance(program, Program):
        raise HeadraceError(f"draw: program must be a Program, got {type(program).__name__}")
    graphviz = graphviz_module()
    drawing = _Drawing(program, graphviz, show_feed_fetch, rankdir)
    root = program.global_block()
    drawing.collect(root)
    drawing.draw_block(drawing.graph, root)
    graph = drawing.finish()
    if path is not None:
        data = render(graph, format)
        with open(os.fspath(path), "wb") as f:
            f.write(data)
    return graph


def render(graph, format="svg"):  # noqa: A002 - graphviz's own argument name
    """``graph`` rendered by ``dot`` as bytes; a HeadraceError when ``dot`` is missing."""
    graphviz = graphviz_module()
    try:
        return graph.pipe(format=format)
    except graphviz.ExecutableNotFound:
        raise HeadraceError("drawing a program needs Graphviz's dot program on the PATH: "
                            "apt-get install graphviz (or brew install graphviz)") from None
    except ValueError as e:           # an unknown format
        raise HeadraceError(f"draw: {e}") from None
