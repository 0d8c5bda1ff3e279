"""``headrace show --graph FILE [-o out.svg] [--format F] [--feed-fetch] [--rankdir LR]``: a
saved program drawn with Graphviz (:func:`headrace.drawing.draw`) instead of listed. With
``-o`` the picture is written there (the format from ``--format``, else from the output's
extension, else svg); without it the DOT source goes to standard output.

Exit status: 0 written; 1 graphviz or its ``dot`` program is missing; 2 a usage error (a file
that cannot be read or is not a program, an output folder that is missing, an unknown
format), said on one line of stderr.
"""
import os
import sys

from .errors import HeadraceError

__all__ = ["add_graph_options"]

FORMATS = ("svg", "png", "pdf", "dot", "json")


def _say_error(status, message):
    print(f"headrace show: error: {' '.join(str(message).split())}", file=sys.stderr)
    return status


def _format(args):
    if args.format:
        return args.format
    ext = os.path.splitext(args.output or "")[1].lstrip(".").lower()
    return ext if ext in FORMATS else "svg"


def show_graph(args, out):
    from .drawing import draw, render
    from .errors import ProgramParseError
    from .framework import Program
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as e:
        return _say_error(2, f"cannot read {args.file}: {e.strerror}")
    try:
        program = Program.parse_from_string(data)
    except ProgramParseError as e:
        return _say_error(2, f"{args.file} is not a program file: {e}")
    if args.output:
        folder = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            return _say_error(2, f"cannot write {args.output!r}: its folder is missing or "
                                 f"not writable")
    try:
        graph = draw(program, show_feed_fetch=args.feed_fetch, rankdir=args.rankdir)
        if not args.output:
            print(graph.source, file=out, end="")
            return 0
        picture = render(graph, _format(args))
    except HeadraceError as e:
        return _say_error(1, e)
    with open(args.output, "wb") as f:
        f.write(picture)
    print(f"headrace show: wrote {args.output}", file=out)
    return 0


def _with_graph(listing):
    def run(args, out):
        return show_graph(args, out) if args.graph else listing(args, out)
    return run


def add_graph_options(p):
    """Add ``--graph`` and its options to the ``show`` subcommand's parser ``p``."""
    p.add_argument("--graph", action="store_true",
                   help="draw the program with Graphviz instead of listing it")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="with --graph: the picture to write (default: DOT source on stdout)")
    p.add_argument("--format", choices=FORMATS,
                   help="with --graph -o: the picture's format (default: from OUT's "
                        "extension, else svg)")
    p.add_argument("--feed-fetch", action="store_true",
                   help="with --graph: also draw feed/fetch ops and their holder variables")
    p.add_argument("--rankdir", choices=("TB", "LR"), default="TB",
                   help="with --graph: top to bottom (default) or left to right")
    p.set_defaults(run=_with_graph(p.get_default("run")))
    return p
