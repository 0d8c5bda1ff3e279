"""Op definitions of the math family, one op family per module (each lists its ``OPS``)."""
