"""A `quirobot` verb's argparse parser whose own errors are one line with exit 2, like the others.

argparse prints a usage block and the error on its own; the CLI's contract (quirobot_description.cli)
is one line on stderr and exit 2 for every expected failure. `add_verb` gives a sub-parser that
keeps that contract for argparse's errors too (missing values, bad types, unknown words), and
reads -1.5e-17 or -inf as a negative number rather than an option.
"""

from __future__ import annotations

import argparse
import re
import sys

from quirobot_description.cli import EXIT_USAGE

#: Words argparse must read as negative numbers, not options: -1, -.5, -1.5e-17, -inf, -nan.
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


def add_verb(subparsers: argparse._SubParsersAction, name: str, **kwargs: str) -> argparse.ArgumentParser:
    """subparsers.add_parser(name, **kwargs), with one-line errors (exit 2) and negative numbers."""
    parser = subparsers.add_parser(name, **kwargs)

    def one_line_error(message: str) -> None:
        print(f"{parser.prog}: error: {' '.join(message.split())} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)

    parser.error = one_line_error  # argparse's own errors: one line too, no usage block
    parser._negative_number_matcher = NEGATIVE_NUMBER  # argparse's own misses 1e-17 notation
    parse_known_args = parser.parse_known_args

    def parse_known_args_strictly(args=None, namespace=None):
        """Refuse unknown words here, in one line, rather than in the top parser with its usage."""
        namespace, extras = parse_known_args(args, namespace)
        if extras:
            one_line_error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    parser.parse_known_args = parse_known_args_strictly
    return parser
