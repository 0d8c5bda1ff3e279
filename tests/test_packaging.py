"""Packaging metadata: the license and the Python versions every part declares, the modules each
part's build compiles, and the root distribution `pip install .` builds (all parts at once, with
no local paths in its metadata). Building wheels is too slow for the suite: the install time and
the wheels' contents are measured by hand (README, Installing)."""
import re
import runpy
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PARTS = ["packages/headrace", "plugins/tensor", "plugins/math", "plugins/nn", "plugins/optim",
         "plugins/control", "plugins/distributed"]
BUILD = runpy.run_path(str(REPO / "packages/headrace/headrace/build.py"))


def test_every_part_declares_the_license_it_ships_and_python_3_10():
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License")
    for part in ["."] + PARTS:
        project = BUILD["read_pyproject"](str(REPO / part))["project"]
        assert project["license"] == "MIT", part
        assert project["license-files"] == ["LICENSE"], part
        assert (REPO / part / "LICENSE").read_text() == text, part
        # protobuf 7, the core's IR, has wheels for Python 3.10 and newer only.
        assert project["requires-python"] == ">=3.10", part
        assert not any(c.startswith("License ::") for c in project["classifiers"]), part
    template = (REPO / "packages/headrace/headrace/plugin_template/files/pyproject.toml.tmpl")
    assert 'requires-python = ">=3.10"' in template.read_text()


def test_each_part_compiles_every_pyx_it_holds():
    for part in PARTS:
        root = REPO / part
        held = {str(p.relative_to(root)) for p in root.rglob("*.pyx")
                if not {"build", "tests", "plugin_template"} & set(p.relative_to(root).parts)}
        modules = BUILD["part_modules"](str(root))
        assert held == {str(Path(path).relative_to(root)) for _, path, _ in modules}, part
        for name, path, _ in modules:
            assert name == str(Path(path).relative_to(root).with_suffix("")).replace("/", ".")


def test_glue_modules_compile_at_O1_and_the_kernels_keep_O2():
    # -O1 saves compile time only where there is no loop for -O2 to speed up: every glue source
    # leaves its work to NumPy (no nogil section, prange, typed memoryview or C code of its
    # own), and the modules with the hot loops stay at -O2 with their part's flags.
    flags, glue = {}, set()
    for part in PARTS:
        for name, path, args in BUILD["part_modules"](str(REPO / part)):
            flags[name.rsplit(".", 1)[-1]] = args
            if "-O1" in args:
                glue.add(name.rsplit(".", 1)[-1])
                text = Path(path).read_text()
                assert not re.search(r"\bnogil\b|\bprange\b|cdef extern|\[(:\s*,\s*)*(::1|:)\]",
                                     text), name
                assert args[:len(BUILD["GLUE_OPTIMIZE"])] == BUILD["GLUE_OPTIMIZE"], name
    assert BUILD["GLUE_OPTIMIZE"] == ("-O1",) and BUILD["OPTIMIZE"][0] == "-O2"
    assert {"shape", "reshape", "slice", "where", "sequence_pad", "assign", "fill"} <= glue
    for hot in ["_loop", "scale", "sum", "elementwise", "activation", "reduce", "compare",
                "matmul", "_gemm", "fc", "conv", "pool", "batch_norm", "layer_norm", "softmax",
                "cross_entropy", "dropout", "embedding", "gather", "transpose", "concat_split",
                "cast", "lstm", "gru", "rnn", "lstmp", "adam", "sgd", "momentum",
                "sync_batch_norm"]:
        assert hot in flags and hot not in glue, hot
    # math's libm flags reach every math module (glue or not).
    assert flags["elementwise"] == ("-fno-trapping-math", "-fno-math-errno")


def test_glue_optimization_comes_after_the_default_on_the_command_line():
    # gcc takes the last -O: kernel_build puts a module's own flags after OPTIMIZE.
    modules = BUILD["part_modules"](str(REPO / "plugins/tensor"))
    kernels = BUILD["kernel_build"]("headrace-tensor", "headrace_tensor", modules,
                                    utility_dir=str(REPO / "plugins/tensor/headrace_tensor"))
    glue = {name for name, _, args in modules if "-O1" in args}
    assert {"headrace_tensor.kernels.cpu.shape", "headrace_tensor.kernels.cpu.where"} <= glue
    for ext in kernels["ext_modules"]:
        levels = [a for a in ext.extra_compile_args if a.startswith("-O")]
        assert levels == (["-O2", "-O1"] if ext.name in glue else ["-O2"]), ext.name


def test_every_module_and_the_shared_runtime_compile_without_cythons_call_shortcuts():
    # Off in every module of a build and in its shared runtime (headrace._cyutility): the
    # modules call the runtime's functions, so one build never mixes the two settings.
    modules = BUILD["part_modules"](str(REPO / "plugins/nn"))
    kernels = BUILD["kernel_build"]("headrace-nn", "headrace_nn", modules,
                                    utility_dir=str(REPO / "plugins/nn/headrace_nn"))
    off = {("CYTHON_USE_DICT_VERSIONS", "0"), ("CYTHON_FAST_PYCALL", "0"),
           ("CYTHON_UNPACK_METHODS", "0"), ("CYTHON_CLINE_IN_TRACEBACK", "0")}
    assert set(BUILD["RUNTIME_MACROS"]) == off
    names = {ext.name for ext in kernels["ext_modules"]}
    assert {"headrace_nn.kernels.cpu.conv", "headrace_nn.kernels.cpu.sequence_pad"} <= names
    for ext in kernels["ext_modules"]:
        assert off <= set(ext.define_macros), ext.name
    import Cython
    if tuple(int(v) for v in Cython.__version__.split(".")[:2]) >= (3, 1):
        assert "headrace_nn._cyutility" in names


def test_the_compile_message_reaches_the_terminal_behind_pip(monkeypatch, capsys):
    # pip captures the build's stderr (shown with -v only): the line goes to /dev/tty too.
    written, announce = [], BUILD["announce"]

    class Tty:
        def __init__(self, path, mode):
            assert (path, mode) == ("/dev/tty", "w")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, text):
            written.append(text)

    monkeypatch.setitem(announce.__globals__, "open", Tty)
    announce("headrace: compiling 79 Cython modules, 2 at a time ...")
    assert capsys.readouterr().err == "headrace: compiling 79 Cython modules, 2 at a time ...\n"
    assert written == ["\nheadrace: compiling 79 Cython modules, 2 at a time ...\n"]

    def no_terminal(path, mode):
        raise OSError(6, "No such device or address", path)

    monkeypatch.setitem(announce.__globals__, "open", no_terminal)
    announce("quiet")   # CI: no terminal, no error
    assert capsys.readouterr().err == "quiet\n"


def test_the_root_distribution_is_every_part_without_local_paths(tmp_path):
    # egg_info writes the metadata pip would record; it compiles nothing (Cython runs in
    # build_ext), so this takes a second.
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)],
                   cwd=REPO, check=True, capture_output=True)
    info = tmp_path / "headrace.egg-info"
    pkg_info = (info / "PKG-INFO").read_text()
    assert re.search(r"^Name: headrace$", pkg_info, re.M)
    assert re.search(r"^License-Expression: MIT$", pkg_info, re.M)
    assert re.search(r"^Requires-Python: >=3.10$", pkg_info, re.M)
    requires = (info / "requires.txt").read_text()
    assert "@" not in requires and "file:" not in requires and str(REPO) not in pkg_info
    names = {re.match(r"[A-Za-z0-9_.-]+", line).group(0).lower()
             for line in requires.splitlines() if line and not line.startswith("[")}
    assert {"numpy", "protobuf", "pluggy", "scipy", "scikit-learn", "tqdm"} <= names
    assert not names & {"headrace", "headrace-nn", "headrace-math", "headrace-distributed"}
    assert "[distributed]" in requires and "mpi4py" in requires
    entry_points = (info / "entry_points.txt").read_text()
    for family in ["tensor", "math", "nn", "optim", "control", "distributed"]:
        assert f"{family} = headrace_{family}.plugin" in entry_points
    assert "headrace = headrace.cli:main" in entry_points
    assert set((info / "top_level.txt").read_text().split()) == {
        "headrace", "headrace_tensor", "headrace_math", "headrace_nn", "headrace_optim",
        "headrace_control", "headrace_distributed"}
