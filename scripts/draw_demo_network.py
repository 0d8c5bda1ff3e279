"""Draw the demo's network (``headrace demo``'s digits CNN, its inference program: what the
demo saves) for the docs: ``python scripts/draw_demo_network.py [--out docs/demo_network.svg]``.
Needs the graphviz package and Graphviz's dot program."""
import argparse

import headrace as hr
from headrace import demo
from headrace.io.inference import inference_program


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="docs/demo_network.svg",
                        help="the picture to write; its extension picks the format")
    args = parser.parse_args(argv)
    _main, _startup, test_program, _loss, _acc, logits = demo.build()
    program = inference_program(test_program, ["img"], [logits])
    hr.draw(program, args.out, format=args.out.rsplit(".", 1)[-1])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
