"""Control-flow and tensor-array kernels. They orchestrate sub-plans and slots rather than
compute, so one Python implementation serves every device (registered for cpu and cuda)."""
