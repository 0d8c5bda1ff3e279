# What _prepare compiles against (its per-op slot walk reads an op's pairs as infos do).
cdef tuple slot_names(list pairs, slot)
