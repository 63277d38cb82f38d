"""The `quirobot` parsers, whose own errors are one line with exit 2, like every other refusal.

argparse prints a usage block and the error on its own; the CLI's contract (quirobot_cli.cli)
is one line on stderr and exit 2 for every expected failure. `one_line_errors` gives a parser that
keeps that contract for argparse's errors too (missing values, bad types, unknown words, a missing
verb); `add_verb` adds a verb's sub-parser with it, `--debug` accepted after the verb as well as
before it, and -1.5e-17 or -inf read as a negative number rather than an option.
"""

from __future__ import annotations

import argparse
import re
import sys

#: The exit status of every expected failure (bad arguments, bad files, unreachable targets).
EXIT_USAGE = 2

#: Words argparse must read as negative numbers, not options: -1, -.5, -1.5e-17, -inf, -nan.
NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)

DEBUG_HELP = "show the full traceback of an error"


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`parser` with argparse's errors printed as one line on stderr (no usage block), exit 2."""

    def one_line_error(message: str) -> None:
        print(f"{parser.prog}: error: {' '.join(message.split())} (see --help)", file=sys.stderr)
        sys.exit(EXIT_USAGE)

    parser.error = one_line_error
    return parser


def add_verb(subparsers: argparse._SubParsersAction, name: str, **kwargs: str) -> argparse.ArgumentParser:
    """subparsers.add_parser(name, **kwargs), with one-line errors (exit 2) and negative numbers."""
    parser = one_line_errors(subparsers.add_parser(name, **kwargs))
    parser._negative_number_matcher = NEGATIVE_NUMBER  # argparse's own misses 1e-17 notation
    # SUPPRESS: absent after the verb, it leaves the value given (or not) before the verb.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    parse_known_args = parser.parse_known_args

    def parse_known_args_strictly(args=None, namespace=None):
        """Refuse unknown words here, in one line, rather than in the top parser with its usage."""
        namespace, extras = parse_known_args(args, namespace)
        if extras:
            parser.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    parser.parse_known_args = parse_known_args_strictly
    return parser
