"""Logging (issue 13 item 8): headrace's diagnostics go to the standard ``logging`` module's
``headrace`` logger, silent by default (a NullHandler); plugin warnings point at the user's
line however deep inside headrace the plugin was loaded."""
import logging
import subprocess
import sys
import uuid
import warnings

import numpy as np

import headrace as hr
import headrace_math.plugin as math_plugin
from headrace.ops import PluginWarning, build_registry, registry_guard
from headrace.testing.plugin_dists import package_plugin

MATH = "headrace-math:math"


def test_the_headrace_logger_is_silent_unless_the_application_configures_logging():
    """Without a handler of its own, a library's warning-level record would reach Python's
    last-resort handler and print; the NullHandler keeps it quiet."""
    assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger("headrace").handlers)
    code = ("import logging, headrace\n"
            "logging.getLogger('headrace.test').warning('should not print')\n"
            "logging.getLogger('other').warning('printed')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "printed\n"


def test_plugin_loading_logs_at_debug(caplog):
    with caplog.at_level(logging.DEBUG, logger="headrace"):
        reg = build_registry(plugins=[(MATH, math_plugin)], autoload=False)
        reg.kernel("relu", "cpu", "float32")
    records = {(r.name, r.levelname, r.getMessage().split(":")[0]) for r in caplog.records}
    assert ("headrace.ops.plugins", "DEBUG", "registry built") in records
    assert any(r.name == "headrace.ops.registry" and "cpu kernels from headrace_math.kernels"
               in r.getMessage() for r in caplog.records)


def test_a_plugin_warning_raised_deep_in_a_run_points_at_the_users_line(tmp_path, monkeypatch):
    """A kernel package that fails on its first use is loaded from inside Executor.run, many
    frames below the user's code: the warning names the user's file and line, not headrace's."""
    package = f"hr_broken_kernels_{uuid.uuid4().hex[:8]}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "k.py").write_text("raise RuntimeError('broken kernel module')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = build_registry(plugins=[(MATH, math_plugin),
                                  ("broken", package_plugin(package, "broken_op"))],
                         autoload=False)
    with registry_guard(reg), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        main = hr.Program()
        with hr.program_guard(main, hr.Program()):
            x = hr.layers.data("x", shape=[2], dtype="float32")
            y = hr.layers.relu(x)
        line = sys._getframe().f_lineno + 1
        hr.Executor().run(main, feed={"x": np.ones((1, 2), "float32")}, fetch_list=[y])
    (w,) = [w for w in caught if issubclass(w.category, PluginWarning)]
    assert "plugin 'broken': loading cpu kernels from" in str(w.message)
    assert (w.filename, w.lineno) == (__file__, line)


def test_a_save_logs_where_it_went(tmp_path, caplog):
    prog = hr.Program()
    with hr.program_guard(prog, hr.Program()):
        w = hr.layers.create_parameter([2], "float32")
    scope = hr.Scope()
    scope.set(w.name, hr.Tensor(np.ones(2, "float32")))
    with caplog.at_level(logging.INFO, logger="headrace"):
        hr.io.save_params(hr.Executor(), str(tmp_path / "ckpt"), main_program=prog, scope=scope)
    (record,) = [r for r in caplog.records if r.name == "headrace.io.checkpoint"]
    assert record.getMessage() == f"saved 1 file(s) into {tmp_path / 'ckpt'} (swapped in whole)"
