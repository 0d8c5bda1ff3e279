"""headrace: a static-graph deep-learning framework.

Build a program with Python calls, run it with an Executor. Public API, re-exported explicitly.
Diagnostics go to the standard ``logging`` module's ``headrace`` logger (and its children,
``headrace.ops.plugins``, ``headrace.io``, ...), silent unless the application configures
logging (a NullHandler, as a library should); warnings a user should act on (a plugin that
failed) are ``warnings`` pointing at the user's line.
"""
import logging as _logging

from . import cuda, dtypes, errors, io, ops, unique_name
from .autodiff import append_backward, gradients
from .errors import (HeadraceError, LayerError, OpError, ProgramError, ProgramParseError,
                     ShapeError, UnknownOpError, VariableError)
from .framework import (PROGRAM_VERSION, Block, Operator, Parameter, Program, Variable,
                        default_main_program, default_startup_program, program_guard)
from .runtime import (CPUPlace, CUDAPlace, Executor, Scope, Tensor, TensorArray,
                      create_lod_tensor, global_scope, scope_guard)
from .runtime.threads import get_num_threads, set_num_threads
from . import clip, initializer, layers, optimizer, profiler, regularizer
from . import host_memory  # the host caching pool's counters (as hr.cuda's)
from . import passes  # inference passes over programs (hr.passes.apply)
from . import onnx  # ONNX export; the onnx package itself is imported only by an export
from .drawing import draw  # pictures of programs (graphviz, imported when drawing)
from .evaluate import eval  # the seeds' pd.eval (builtins.eval is untouched)
from .layer_helper import LayerHelper
from .param_attr import ParamAttr

__version__ = "0.1.0"

_logging.getLogger(__name__).addHandler(_logging.NullHandler())

__all__ = [
    "cuda", "dtypes", "errors", "host_memory", "io", "ops", "unique_name", "append_backward",
    "gradients",
    "HeadraceError", "OpError", "ProgramError",
    "ProgramParseError", "ShapeError", "UnknownOpError", "VariableError", "PROGRAM_VERSION",
    "Block", "Operator", "Parameter", "Program", "Variable", "default_main_program",
    "default_startup_program", "program_guard", "CPUPlace", "CUDAPlace", "Executor", "Scope",
    "Tensor", "TensorArray", "create_lod_tensor", "global_scope", "scope_guard", "__version__",
    "LayerError", "clip", "initializer", "layers", "optimizer", "profiler", "regularizer",
    "LayerHelper",
    "ParamAttr", "eval", "onnx", "draw", "passes", "set_num_threads", "get_num_threads",
]
