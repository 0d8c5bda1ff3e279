"""Module hygiene the review asks for, enforced: no import cycles between the modules of the
repo's packages, and no source file over 600 lines.

Imports are read with ``ast`` (nothing is imported), at every depth: an import inside a function
is still an edge of the graph. A function-level import only postpones a cycle to the first call;
it does not remove it, so it must not hide one. Only the repo's own modules are nodes.
"""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LINES = 600


def _distribution_roots():
    """The directories a distribution's modules are named from (``packages/headrace``,
    ``plugins/math``...): their files are ``headrace/...``, ``headrace_math/...``, ``tests/...``."""
    return sorted(p for p in [*ROOT.glob("packages/*"), *ROOT.glob("plugins/*")] if p.is_dir())


def _module_name(root, path):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_generated(path):
    return path.name.endswith("_pb2.py")


def collect_modules(roots=None):
    """{module name: (path, is_package)}. A name found in two distributions (``tests.conftest``)
    is kept per file under ``<root>:<name>``: only relative imports can reach such modules.
    Cython modules (``.pyx``) are modules too (``from . import _loop``); their Python imports
    are read by :func:`_pyx_python_imports`."""
    modules, seen = {}, {}
    for root in roots if roots is not None else _distribution_roots():
        for path in sorted([*root.rglob("*.py"), *root.rglob("*.pyx")]):
            if any(part.startswith(".") or part in ("build", "__pycache__")
                   for part in path.relative_to(root).parts):
                continue
            name = _module_name(root, path)
            if name in seen:
                key = f"{root.name}:{name}"
            else:
                seen[name] = path
                key = name
            modules[key] = (path, path.name == "__init__.py")
    return modules


_IMPORT_LINE = re.compile(r"(from\s+\.*[\w.]*\s+import\s|import\s+[\w.]+\s*(as\s+\w+\s*)?(,|$))")


def _pyx_python_imports(path):
    """A Python module of the ``import`` / ``from ... import`` statements of a Cython file
    (``cimport`` aside), an indented one placed in a function, at its original line."""
    lines = path.read_text().splitlines()
    body, i = [], 0
    while i < len(lines):
        text = lines[i]
        stripped = text.strip()
        if _IMPORT_LINE.match(stripped) and "cimport" not in stripped:
            start = i
            while stripped.count("(") > stripped.count(")") and i + 1 < len(lines):
                i += 1
                stripped += " " + lines[i].strip()
            stmt = ast.parse(stripped).body[0]
            ast.increment_lineno(stmt, start)
            if text[:1].isspace():
                stmt = ast.FunctionDef(name="f", args=ast.arguments(), body=[stmt],
                                       decorator_list=[], lineno=start + 1)
            body.append(stmt)
        i += 1
    return ast.Module(body=body, type_ignores=[])


def _package_of(name, is_package):
    return name if is_package else name.rpartition(".")[0]


def import_edges(modules):
    """[(importer, imported, line, 'module' or 'function')] between modules of ``modules``.

    ``from P import n`` is an edge to the module ``P.n`` when ``n`` is a submodule, else to
    ``P`` (the name lives there, in its ``__init__`` for a package); ``import P.Q`` is an edge
    to ``P.Q``. Relative imports are resolved from the importer's package.
    """
    edges = []
    for key, (path, is_package) in modules.items():
        name = key.rpartition(":")[2]
        if path.suffix == ".pyx":
            tree = _pyx_python_imports(path)
        else:
            tree = ast.parse(path.read_text(), str(path))
        function_lines = {n.lineno for f in ast.walk(tree)
                          if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                          for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
        for node in ast.walk(tree):
            where = "function" if getattr(node, "lineno", None) in function_lines else "module"
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = _package_of(name, is_package).split(".")
                    if node.level - 1 > len(base) - 1:
                        continue  # beyond the top-level package: not one of ours
                    base = base[:len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                    if ":" in key and f"{key.partition(':')[0]}:{source}" in modules:
                        source = f"{key.partition(':')[0]}:{source}"
                else:
                    source = node.module
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.append(sub if sub in modules else source)
            for target in targets:
                if target in modules and target != key:
                    edges.append((key, target, node.lineno, where))
                # Importing a.b.c runs a/__init__ and a/b/__init__ first, unless the importer
                # is inside that package (it is then already being imported): an edge to each.
                for parent in _ancestors(target, modules):
                    if not name.startswith(parent.rpartition(":")[2] + ".") and parent != key:
                        edges.append((key, parent, node.lineno, where))
    return edges


def _ancestors(target, modules):
    prefix, _, dotted = target.rpartition(":")
    parts = dotted.split(".")
    for i in range(1, len(parts)):
        parent = ".".join(parts[:i])
        parent = f"{prefix}:{parent}" if prefix else parent
        if parent in modules and modules[parent][1]:  # a package: its __init__ runs
            yield parent


def find_cycles(edges):
    """Every strongly connected group of modules (more than one), each as one cycle through
    all of it: [[a, b, ..., a]]."""
    graph = {}
    for a, b, _, _ in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(v):  # Tarjan; the graph is a few hundred modules, recursion depth is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_through(graph, group) for group in groups]


def _cycle_through(graph, group):
    """A shortest cycle from the group's first module back to itself (breadth first)."""
    members, start = set(group), group[0]
    paths, frontier = {start: [start]}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return group


def describe_cycle(cycle, edges):
    where = {(a, b): f"line {line}, {kind}-level" for a, b, line, kind in edges}
    return " -> ".join(cycle[:1] + [f"{b} ({where[(a, b)]})" for a, b in zip(cycle, cycle[1:])])


def test_no_import_cycles():
    modules = collect_modules()
    assert "headrace.layer_helper" in modules and "headrace_math" in modules
    edges = import_edges(modules)
    cycles = find_cycles(edges)
    assert not cycles, "import cycles between modules (a function-level import does not " \
        "break a cycle, it postpones it):\n  " + \
        "\n  ".join(describe_cycle(c, edges) for c in cycles)


def _write(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / "dist" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return collect_modules([tmp_path / "dist"])


@pytest.mark.parametrize("files, expected", [
    # the cycle the review found, hidden by a function-level import
    ({"pkg/__init__.py": "",
      "pkg/helper.py": "from .attr import Attr\n",
      "pkg/attr.py": "def f():\n    from .clip import Clip\n",
      "pkg/clip.py": "from pkg.helper import check\n"},
     ["pkg.attr", "pkg.clip", "pkg.helper", "pkg.attr"]),
    # two modules importing each other, one of them through its package
    ({"pkg/__init__.py": "", "pkg/sub/__init__.py": "from .b import B\n",
      "pkg/sub/b.py": "from ..a import A\n", "pkg/a.py": "from .sub import B\n"},
     ["pkg.a", "pkg.sub", "pkg.sub.b", "pkg.a"]),
    # `from . import b` names the submodule b, not the package
    ({"pkg/__init__.py": "from . import a\n", "pkg/a.py": "from . import b\n",
      "pkg/b.py": "import pkg.a\n"},
     ["pkg.a", "pkg.b", "pkg.a"]),
    # a Cython module's Python imports count (cimports and comments do not)
    ({"pkg/__init__.py": "", "pkg/helper.py": "from ._fast import kernel\n",
      "pkg/_fast.pyx": "# from pkg import nothing (a comment)\ncimport numpy as cnp\n"
                       "import numpy as np\n\ndef f():\n    from pkg import (\n"
                       "        helper)\n"},
     ["pkg._fast", "pkg.helper", "pkg._fast"]),
    # importing a submodule runs its package's __init__ first: the core plugin that imported
    # ops.hookspecs while ops/__init__ -> ops.plugins imported the core plugin back
    ({"pkg/__init__.py": "", "pkg/ops/__init__.py": "from .hookspecs import hookimpl\n"
      "from .plugins import build\n", "pkg/ops/hookspecs.py": "hookimpl = 1\n",
      "pkg/ops/plugins.py": "def build():\n    from ..core import plugin\n",
      "pkg/core/__init__.py": "", "pkg/core/plugin.py": "from ..ops.hookspecs import hookimpl\n"},
     ["pkg.core.plugin", "pkg.ops", "pkg.ops.plugins", "pkg.core.plugin"]),
])
def test_cycle_finder_sees_hidden_and_relative_cycles(tmp_path, files, expected):
    cycles = find_cycles(import_edges(_write(tmp_path, files)))
    assert cycles == [expected]


def test_cycle_finder_accepts_a_layered_graph(tmp_path):
    modules = _write(tmp_path, {
        "pkg/__init__.py": "from .top import T\nfrom . import low\n",
        "pkg/top.py": "from .low import L\nimport numpy\n\ndef f():\n    from .low import M\n",
        "pkg/low.py": "from os import path\n"})
    edges = import_edges(modules)
    assert ("pkg.top", "pkg.low", 5, "function") in edges
    assert find_cycles(edges) == []


def test_no_star_star_locals():
    # Layer functions name what they hand to LayerHelper; **locals() hides the data flow.
    found = []
    for path, _ in collect_modules().values():
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and any(
                    k.arg is None and isinstance(k.value, ast.Call) and
                    isinstance(k.value.func, ast.Name) and k.value.func.id == "locals"
                    for k in node.keywords):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "calls passing **locals(): " + ", ".join(found)


# -- size ----------------------------------------------------------------------------------

def oversized_files(root=ROOT, limit=MAX_LINES):
    """[(relative path, lines)] of the .py/.pyx/.pxd files over ``limit`` lines, tests and
    benchmarks included, generated protobuf modules (``*_pb2.py``) excluded."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.suffix not in (".py", ".pyx", ".pxd") or not path.is_file() \
                or _is_generated(path) \
                or any(part.startswith(".") or part in ("build", "__pycache__")
                       for part in rel.parts):
            continue
        with open(path, "rb") as f:
            lines = sum(1 for _ in f)
        if lines > limit:
            found.append((str(rel), lines))
    return found


def test_no_module_over_600_lines():
    too_long = oversized_files()
    assert not too_long, f"modules over {MAX_LINES} lines (split them by concern):\n  " + \
        "\n  ".join(f"{path}: {n} lines" for path, n in too_long)


def test_size_check_names_the_file_and_its_length(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n" * 600)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "big.pyx").write_text("x = 1\n" * 601)
    (tmp_path / "pkg" / "big_pb2.py").write_text("x = 1\n" * 700)
    assert oversized_files(tmp_path) == [("pkg/big.pyx", 601)]
