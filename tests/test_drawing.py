"""Pictures of programs (hr.draw, headrace show --graph): sub-blocks as clusters, roles styled
apart, shapes on edges, names escaped; rendered by Graphviz's dot where it is installed."""
import re
import shutil
import sys

import pytest

import headrace as hr
from headrace import cli, demo
from headrace.drawing import STYLES
from headrace.errors import HeadraceError

graphviz = pytest.importorskip("graphviz", reason="drawing needs the graphviz package "
                               "(pip install headrace[graphviz])")
needs_dot = pytest.mark.skipif(shutil.which("dot") is None,
                               reason="Graphviz's dot program is not installed (apt-get "
                                      "install graphviz; .ci/run installs it where it can)")


def _while_program():
    main, startup = hr.Program(), hr.Program()
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 4], dtype="float32")
        i = hr.layers.fill_constant(shape=[1], dtype="int64", value=0)
        n = hr.layers.fill_constant(shape=[1], dtype="int64", value=3)
        total = hr.layers.fill_constant(shape=[1], dtype="float32", value=0.0)
        cond = hr.layers.less_than(i, n)
        loop = hr.layers.While(cond)
        with loop.block():
            hr.layers.assign(hr.layers.elementwise_add(total, hr.layers.reduce_sum(x)), total)
            hr.layers.increment(i, in_place=True)
            hr.layers.less_than(i, n, cond=cond)
    return main, total.name


def _node_of(source, label_text):
    """The DOT statement of the node whose label starts with ``label_text``."""
    pattern = re.compile(r"^\s*(n\d+) \[label=<" + re.escape(label_text) + r"[<>].*$", re.M)
    match = pattern.search(source)
    assert match, f"no node labelled {label_text!r}"
    return match.group(0)


@needs_dot
def test_while_program_renders_its_body_as_a_cluster(tmp_path):
    main, _ = _while_program()
    path = tmp_path / "while.svg"
    hr.draw(main, path)
    svg = path.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    # The while body is a cluster with its ops inside; the loop op and its shapes outside.
    clusters = re.findall(r'<g id="clust\d+" class="cluster">\s*<title>(.*?)</title>(.*?)</g>',
                          svg, re.S)
    assert [title for title, _ in clusters] == ["cluster_block1"]
    body = clusters[0][1]
    assert "block 1: while (block 0, op #" in body
    op_texts = re.findall(r'<g id="node\d+" class="node">.*?<text[^>]*>(.*?)</text>', svg, re.S)
    for op_type in ("while", "fill_constant", "less_than", "reduce_sum", "elementwise_add",
                    "assign", "increment"):
        assert op_type in op_texts
    assert "[&#45;1, 4]" in svg or "[-1, 4]" in svg          # x's shape on its edges


def test_body_ops_sit_in_the_cluster_and_outer_variables_outside():
    main, total = _while_program()
    source = hr.draw(main).source
    cluster = source[source.index("subgraph cluster_block1"):]
    cluster = cluster[:cluster.index("\n\t}")]
    for op_type in ("reduce_sum", "elementwise_add", "assign", "increment"):
        assert f"<B>{op_type}</B>" in cluster
    assert "<B>while</B>" not in cluster
    assert "<x<BR/>" not in cluster and f"<{total}<BR/>" not in cluster
    assert f"<{total}<BR/>" in source
    assert re.search(r"<reduce_sum_\d+\.tmp_0<BR/>", cluster)     # declared in the body
    assert "lhead=cluster_block1" in source


def test_parameters_gradients_and_data_are_styled_apart():
    main, _startup, _test, _loss, _acc, _logits = demo.build()
    source = hr.draw(main).source
    block = main.global_block()
    conv_w = next(p for p in block.all_parameters() if list(p.shape) == [16, 1, 3, 3]).name
    bias = next(p for p in block.all_parameters() if list(p.shape) == [10]).name
    temporary = next(op for op in block.ops if op.type == "conv2d").output("Output")[0]
    for label, role in ((conv_w, "parameter"), (bias, "parameter"),
                        (conv_w + "@GRAD", "gradient"), ("img", "data"),
                        (temporary, "variable")):
        node = _node_of(source, label)
        fill = STYLES[role].get("fillcolor")
        assert (f'fillcolor="{fill}"' in node) if fill else ("fillcolor" not in node), node
        assert f'color="{STYLES[role]["color"]}"' in node
    assert "peripheries=2" in _node_of(source, conv_w)
    assert "dashed" in _node_of(source, conv_w + "@GRAD")
    assert "<[16, 1, 3, 3]>" in source                # the filter's shape on its edge


@needs_dot
def test_names_are_escaped_and_cannot_inject_graphviz_syntax(tmp_path):
    main, startup = hr.Program(), hr.Program()
    evil = 'a"] ; n0 -> n0 [label="x<b>&\n\x1b[31m'
    with hr.program_guard(main, startup):
        x = hr.layers.data("x", shape=[-1, 2], dtype="float32")
        block = main.global_block()
        block.create_var(name=evil, shape=[-1, 2], dtype="float32")
        block.append_op("assign", {"X": [x.name]}, {"Out": [evil]})
    graph = hr.draw(main, tmp_path / "evil.svg")
    assert "\x1b" not in graph.source and "\n\x1b" not in graph.source
    assert "&quot;] ; n0 -&gt; n0 [label=&quot;x&lt;b&gt;&amp;\\n\\x1b[31m" in graph.source
    svg = (tmp_path / "evil.svg").read_text()
    assert svg.count('class="node"') == 3 and svg.count('class="edge"') == 2


@needs_dot
def test_show_graph_command(tmp_path, capsys):
    main, _ = _while_program()
    model = tmp_path / "while.pdmodel"
    model.write_bytes(main.desc.SerializeToString())
    out = tmp_path / "while.png"
    assert cli.main(["show", "--graph", str(model), "-o", str(out)]) == 0
    assert out.read_bytes().startswith(b"\x89PNG")
    assert cli.main(["show", "--graph", str(model)]) == 0           # DOT source on stdout
    assert "subgraph cluster_block1" in capsys.readouterr().out
    assert cli.main(["show", str(model)]) == 0                      # the listing is unchanged
    assert "op 0:" in capsys.readouterr().out
    assert cli.main(["show", "--graph", str(tmp_path / "missing"), "-o", str(out)]) == 2
    assert cli.main(["show", "--graph", str(model), "-o", str(tmp_path / "no/x.svg")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(e.startswith("headrace show: error:") for e in err)


def test_missing_dot_and_missing_package_say_what_to_install(tmp_path, monkeypatch):
    main, _ = _while_program()
    monkeypatch.setenv("PATH", str(tmp_path))                         # no dot there
    with pytest.raises(HeadraceError, match="apt-get install graphviz"):
        hr.draw(main, tmp_path / "x.svg")
    assert not (tmp_path / "x.svg").exists()
    monkeypatch.setitem(sys.modules, "graphviz", None)
    with pytest.raises(HeadraceError, match=r"pip install headrace\[graphviz\]"):
        hr.draw(main)
