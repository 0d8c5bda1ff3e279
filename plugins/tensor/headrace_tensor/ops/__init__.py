"""Op definitions of the tensor family, one op family per module (each lists its ``OPS``)."""
