"""headrace-control: control flow: conditional_block, while, increment, tensor arrays."""
from .limits import (MAX_ARRAY_LENGTH_ENV, MAX_WHILE_MEMORY_ENV, MAX_WHILE_STEPS_ENV,
                     ArrayLengthLimitError, WhileMemoryLimitError, WhileStepLimitError,
                     max_array_length, max_while_memory, max_while_steps, set_max_array_length,
                     set_max_while_memory, set_max_while_steps)

__all__ = ["MAX_WHILE_STEPS_ENV", "max_while_steps", "set_max_while_steps",
           "MAX_ARRAY_LENGTH_ENV", "max_array_length", "set_max_array_length",
           "MAX_WHILE_MEMORY_ENV", "max_while_memory", "set_max_while_memory",
           "WhileStepLimitError", "ArrayLengthLimitError", "WhileMemoryLimitError"]
