"""The exporters of the first-party ops: one op family per module (the module of the same name
in the family's plugin), each listing ``EXPORTERS = {op_type: fn(ctx, op)}``."""
