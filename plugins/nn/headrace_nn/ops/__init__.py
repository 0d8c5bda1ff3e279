"""Op definitions of the nn family, one op family per module (each lists its ``OPS``)."""
