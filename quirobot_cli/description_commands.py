"""`quirobot` verbs of the description: urdf, export, check, render.

Tool and hardware are validated in the handlers (not by argparse `choices`) so that a bad value
gives the CLI's one-line error and exit 2; argparse's own errors are one line too (verb_parser).
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

from quirobot_cli.output_paths import output_file, output_folder
from quirobot_cli.verb_parser import add_verb
from quirobot_cli.work_limits import (
    CHECK_SAMPLES_MAX,
    RENDER_DPI_MAX,
    RENDER_DPI_MIN,
    check_count,
)
from quirobot_description.parameters import load_parameters
from quirobot_description.urdf import HARDWARE, TOOLS, check_choice, robot_description

ALL = "all"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the description verbs to the `quirobot` parser."""
    urdf = add_verb(
        subparsers,
        "urdf",
        help="print the expanded URDF (package:// URIs, as ROS expects)",
        description="Expand the xacro description and print the URDF XML on stdout.",
    )
    _tool_hardware(urdf)
    _calibration(urdf)
    urdf.set_defaults(handler=_urdf)

    export = add_verb(
        subparsers,
        "export",
        help="write DIR/robot.urdf, self-contained, for pinocchio, MuJoCo, PyBullet",
        description="Write DIR/robot.urdf: no package:// URIs, primitives only, a MuJoCo compiler "
        "element keeping every link; loads directly in pinocchio, MuJoCo and PyBullet.",
    )
    export.add_argument(
        "directory", type=Path, help="output folder (created if missing; its parent must exist)"
    )
    _tool_hardware(export)
    _calibration(export)
    export.set_defaults(handler=_export)

    check = add_verb(
        subparsers,
        "check",
        help="validate the description in named stages (exit 1 on failure)",
        description="Validate in stages: xml, urdf (semantics), visual, collision, inertial, "
        "kinematics (tool0 = the report's T), engines (pinocchio, MuJoCo), ros2_control. "
        "Prints PASS/FAIL per stage and one line per problem; exit 1 if any stage fails. "
        "By default checks every tool x hardware combination.",
    )
    check.add_argument("--tool", default=ALL, help=f"one of {', '.join(TOOLS)} or {ALL} (default {ALL})")
    check.add_argument(
        "--hardware", default=ALL, help=f"one of {', '.join(HARDWARE)} or {ALL} (default {ALL})"
    )
    check.add_argument("--urdf", type=Path, help="check this URDF file instead of the expanded description")
    check.add_argument("--parameter-file", type=Path, help="parameter YAML (default: the shipped one)")
    check.add_argument(
        "--samples",
        type=int,
        default=1000,
        help="random configurations for the kinematics stage (default 1000)",
    )
    check.set_defaults(handler=_check)

    render = add_verb(
        subparsers,
        "render",
        help="draw the robot from its URDF into a PNG",
        description="Render the URDF's primitive shapes at a pose (3/4 view, no screen needed).",
    )
    render.add_argument("output", type=Path, help="PNG file to write (its folder must exist)")
    _tool_hardware(render, hardware=False)
    render.add_argument(
        "--q",
        type=float,
        nargs=5,
        metavar=("D1", "D2", "D3", "THETA4", "THETA5"),
        help="joint coordinates in m and rad (default: a representative working pose)",
    )
    render.add_argument("--feed", type=float, default=None, help="drill feed in m (default: half the stroke)")
    render.add_argument("--dpi", type=int, default=150, help="resolution (default 150)")
    render.set_defaults(handler=_render)


def _tool_hardware(parser: argparse.ArgumentParser, hardware: bool = True) -> None:
    parser.add_argument("--tool", default="drill", help=f"one of {', '.join(TOOLS)} (default drill)")
    if hardware:
        parser.add_argument(
            "--hardware",
            default="mock",
            help=f"ros2_control hardware: one of {', '.join(HARDWARE)} (default mock)",
        )
    parser.add_argument("--parameter-file", type=Path, help="parameter YAML (default: the shipped one)")


def _calibration(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--calibration",
        type=Path,
        metavar="FILE",
        help="calibration file (quirobot calibrate --output): its joint-origin errors in the joint "
        "origins and gantry axes (straightness has no URDF form: left out, said on stderr)",
    )


def _say_straightness_left_out(verb: str, calibration: Path | None, parameter_file: Path | None) -> None:
    """One stderr line naming the calibration's non-zero straightness terms (no URDF form)."""
    if calibration is None:
        return
    from quirobot_description import robot_parameters
    from quirobot_description.geometric_errors import read_calibration

    errors = read_calibration(calibration, robot_parameters(parameter_file).geometric)
    bows = [name for name in errors.names() if "straightness" in name and getattr(errors, name) != 0.0]
    if bows:
        print(f"quirobot {verb}: {', '.join(bows)} left out (straightness has no URDF form)", file=sys.stderr)


def _urdf(args: argparse.Namespace) -> int:
    text = robot_description(
        args.tool, args.hardware, parameter_file=args.parameter_file, calibration_file=args.calibration
    )
    _say_straightness_left_out("urdf", args.calibration, args.parameter_file)
    sys.stdout.write(text)
    return 0


def _export(args: argparse.Namespace) -> int:
    from quirobot_description.export import export_urdf

    check_choice("tool", args.tool, TOOLS)
    check_choice("hardware", args.hardware, HARDWARE)
    path = export_urdf(
        output_folder(args.directory),
        args.tool,
        args.hardware,
        parameter_file=args.parameter_file,
        calibration_file=args.calibration,
    )
    _say_straightness_left_out("export", args.calibration, args.parameter_file)
    print(path)
    return 0


def _check(args: argparse.Namespace) -> int:
    from quirobot_description.validation import check_urdf, format_results
    from quirobot_kinematics import KinematicModel, forward_kinematics

    check_count(args.samples, "--samples", CHECK_SAMPLES_MAX)
    parameters = load_parameters(args.parameter_file)
    # The report's closed-form T of the same parameters, for the kinematics stage.
    reference_fk = functools.partial(forward_kinematics, model=KinematicModel.from_parameters(parameters))
    if args.urdf is not None:
        jobs = [(f"{args.urdf}", args.urdf.read_text())]
    else:
        tools = TOOLS if args.tool == ALL else (args.tool,)
        hardware = HARDWARE if args.hardware == ALL else (args.hardware,)
        for tool in tools:
            check_choice("tool", tool, TOOLS)
        for name in hardware:
            check_choice("hardware", name, HARDWARE)
        jobs = [
            (
                f"tool={tool} hardware={name}",
                robot_description(tool, name, parameter_file=args.parameter_file),
            )
            for tool in tools
            for name in hardware
        ]
    failed = 0
    for label, text in jobs:
        results = check_urdf(text, parameters, reference_fk=reference_fk, samples=args.samples)
        ok = all(result.passed for result in results)
        failed += not ok
        print(format_results(results, f"{label}: {'PASS' if ok else 'FAIL'}"))
    print(f"quirobot check: {len(jobs) - failed} of {len(jobs)} passed")
    return 1 if failed else 0


def _render(args: argparse.Namespace) -> int:
    from quirobot_description.render import render_png

    check_count(args.dpi, "--dpi", RENDER_DPI_MAX, RENDER_DPI_MIN)
    output = output_file(args.output, ".png")
    check_choice("tool", args.tool, TOOLS)
    text = robot_description(args.tool, "mock", parameter_file=args.parameter_file)
    path = render_png(text, output, q=args.q, feed=args.feed, dpi=args.dpi)
    print(path)
    return 0
