"""The `quirobot` command line: one entry point, the verbs of every package.

Each module in VERB_MODULES (description, kinematics, sizing, simulation commands) exposes
`register(subparsers)`, adding its verbs with `set_defaults(handler=function)`; a handler takes
the parsed arguments and returns the exit code. Expected failures (bad parameters, unreachable
poses, malformed arguments) are ValueError or OSError: they print one line on stderr and exit 2,
never a traceback (`--debug`, before or after the verb, shows it). `--version` prints the
installed distribution's version (setup.py is its one source).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

from quirobot_cli import (
    accuracy_commands,
    calibration_commands,
    description_commands,
    kinematics_commands,
    registration_commands,
    simulation_commands,
    sizing_commands,
)
from quirobot_cli.verb_parser import DEBUG_HELP, EXIT_USAGE, one_line_errors

#: The verbs' modules, in the order of `quirobot --help`.
VERB_MODULES = (
    description_commands,
    kinematics_commands,
    sizing_commands,
    simulation_commands,
    accuracy_commands,
    calibration_commands,
    registration_commands,
)

DISTRIBUTION = "quirobot"


def version() -> str:
    """The installed distribution's version (from setup.py), or a note that it is not installed."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


def build_parser() -> argparse.ArgumentParser:
    parser = one_line_errors(
        argparse.ArgumentParser(
            prog="quirobot",
            description="QUIROBOT surgical robot: description, kinematics, dynamics, control, simulation.",
        )
    )
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB")
    subparsers.required = True
    for module in VERB_MODULES:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, OSError, RuntimeError, ArithmeticError) as error:
        # RuntimeError: the simulation's and the drives' own errors (SimulationError, DriveError);
        # --debug shows the traceback of any of them.
        if args.debug:
            raise
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"quirobot {args.verb}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"quirobot {args.verb}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
