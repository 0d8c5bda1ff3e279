"""Host-side logic of the nn kernels shared by both devices: attribute parsing, shape and
stride plans, window and LoD arithmetic, in pure Python. ``host/<m>.py`` serves
``cpu/<m>.pyx`` and ``cuda/<m>.py`` (one copy of each rule, so the devices cannot drift apart);
the rules that are an op's shape rule stay with its definition in ``ops/<m>.py``."""
