"""The `quirobot` command line, on top of the three packages (description, kinematics, control).

- cli: the entry point (`quirobot`, `main(argv)`), one parser with every package's verbs;
- description_commands: urdf, export, check, render;
- kinematics_commands: fk, ik, workspace;
- sizing_commands: size; simulation_commands: simulate;
- verb_parser: one-line argparse errors (exit 2, `EXIT_USAGE`), `add_verb`;
- output_paths: output files and folders checked before the work;
- cli_reference: every option of every verb as docs/api.md's table;
- canopen_servo_simulator: `python -m quirobot_cli.canopen_servo_simulator`, simulated CiA 402
  drives on a CAN channel (bench-top demo).

Nothing below imports this package: the verbs import the packages, never the reverse.
"""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run `quirobot` with `argv` (default: the process's arguments); the exit status.

    Deferred import: `python -m quirobot_cli.cli` must not find the module already loaded.
    """
    from quirobot_cli.cli import main as run

    return run(argv)
