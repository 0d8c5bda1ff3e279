"""The IR objects: Program, Block, Operator, Variable, Parameter, and the default programs."""
from .block import Block
from .operator import Operator
from .program import (PROGRAM_VERSION, Program, default_main_program, default_startup_program,
                      program_guard, switch_main_program, switch_startup_program)
from .variable import Parameter, Variable

__all__ = ["Block", "Operator", "PROGRAM_VERSION", "Program", "default_main_program",
           "default_startup_program", "program_guard", "switch_main_program",
           "switch_startup_program", "Parameter", "Variable"]
