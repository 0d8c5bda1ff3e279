"""headrace-control: control flow: conditional_block, while, increment, tensor arrays."""
