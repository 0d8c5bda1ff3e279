"""headrace-control: control flow: conditional_block, while, increment, tensor arrays."""
from .limits import MAX_WHILE_STEPS_ENV, max_while_steps, set_max_while_steps

__all__ = ["MAX_WHILE_STEPS_ENV", "max_while_steps", "set_max_while_steps"]
