"""`flamespark graph`: a pipeline's logical graph as Graphviz DOT."""
import sys

from flamespark.tools.arguments import PIPELINE_HELP


def add_parser(commands):
    parser = commands.add_parser("graph", help="print a pipeline's logical graph as Graphviz DOT",
                                 description="Print the logical graph of a pipeline as Graphviz DOT on stdout "
                                             "(a stateful operator shows as its grouping and combine map with "
                                             "the feedback edge).")
    parser.add_argument("pipeline", metavar="PATH.py:ATTR", help=PIPELINE_HELP)
    parser.set_defaults(handler=command)


def command(args) -> int:
    from flamespark.tools.loader import load_graph

    sys.stdout.write(load_graph(args.pipeline).to_dot())
    return 0
