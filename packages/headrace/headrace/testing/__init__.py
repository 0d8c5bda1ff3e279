"""Helpers for op plugin authors' tests (build-time now; the OpTest harness grows here)."""
from .build import build_op, infer_shapes
from .optest import TOLERANCES, available_places, check_op, run_op
from .references import load_references
from .gradcheck import check_grad
from .program_grad import program_gradients
from .plugin_checks import definition_problems, op_definitions
from .programs import op_types, run_programs
from . import fixtures

__all__ = ["build_op", "infer_shapes", "TOLERANCES", "available_places", "check_op", "run_op",
           "program_gradients",
           "load_references", "check_grad",
           "definition_problems", "op_definitions",
           "op_types", "run_programs", "fixtures"]
