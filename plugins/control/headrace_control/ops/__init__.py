"""Op definitions of the control family, one op family per module (each lists its ``OPS``)."""
