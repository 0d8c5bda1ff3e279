"""The default main and startup programs, as state (``program.py`` owns their functions).

It sits below Block and Variable in the import graph: ``Variable(name=...)`` without a block
declares into the main program's current block and ``Block.create_parameter`` appends
initializer ops to the startup program, and neither may import ``program.py``, which imports
them. ``program.py`` sets both when it is imported; ``program_guard`` switches them.
"""
main = None     # the program layers append to
startup = None  # the program parameter initializers go to
