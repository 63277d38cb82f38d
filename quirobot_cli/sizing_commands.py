"""`quirobot size`: the servo sizing study (quirobot_control.analysis.sizing) on the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from quirobot_cli.json_output import print_json
from quirobot_cli.output_paths import output_file
from quirobot_cli.verb_parser import add_verb
from quirobot_cli.work_limits import SIZE_POSES_MAX, check_count
from quirobot_control.analysis.sizing import SizingError, SizingResult, plot_sizing, size_servos
from quirobot_control.models.rigid_body import MODEL_NAMES
from quirobot_description.parameters import RobotParameters, load_parameters


def register(subparsers: argparse._SubParsersAction) -> None:
    size = add_verb(
        subparsers,
        "size",
        help="servo sizing: motor torque and speed each joint needs, checked against its motor",
        description=(
            "Size the servo motors the way the report does (ch.6: trapezoidal velocity 0.1/0.4/0.1 s at "
            "1 m/s and 10 rpm on every joint at once, safety factor 1.5) and beyond: the worst pose found "
            "by searching the workspace, both directions of every joint, the RMS torque over a duty cycle, "
            "transmission efficiency and rotor inertia. Prints motor-side peak, nominal (cruise) and RMS "
            "torque (N*m) and peak speed (rad/s) per joint, checked against the motor's peak torque "
            "K_T*I_max, continuous torque K_T*I_cont and the speed it reaches at the bus voltage, with the "
            "margin of the tightest check. --model report reproduces the report's own table as the report "
            "computed it (its lumped model, g = 9.8, no efficiency, q = 0, every joint driven in its "
            "positive direction at once: no search over poses or directions)."
        ),
    )
    size.add_argument(
        "--model",
        choices=MODEL_NAMES,
        default="physical",
        help="physical: the parameter file's bodies, worst pose searched (default); "
        "report: the report's model at q = 0",
    )
    size.add_argument("--json", action="store_true", help='print JSON {"joints": [...]} instead of a table')
    size.add_argument(
        "--plot",
        metavar="FILE.png",
        type=Path,
        help="write the torque-speed envelopes to this PNG (its folder must exist)",
    )
    size.add_argument(
        "--poses",
        type=int,
        metavar="N",
        help="poses in the worst-pose search (physical model; default: sizing.search_poses of the "
        "parameter file)",
    )
    size.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    size.add_argument("--parameter-file", type=Path, help="parameter YAML (default: the shipped one)")
    size.set_defaults(handler=_size)


def _progress(disabled: bool):
    if disabled:
        return None
    from tqdm import tqdm

    def wrap(chunks):
        return tqdm(chunks, desc="searching poses", unit="batch", file=sys.stderr, leave=False)

    return wrap


def _size(args: argparse.Namespace) -> int:
    if args.poses is not None:
        check_count(args.poses, "--poses", SIZE_POSES_MAX)
    if args.poses is not None and args.model == "report":
        raise SizingError("--poses applies to the physical model; the report's method uses q = 0 only")
    plot = output_file(args.plot, ".png") if args.plot is not None else None
    params = load_parameters(args.parameter_file)
    progress = _progress(args.no_progress or args.model == "report")  # the report's method: one pose
    result = size_servos(params, args.model, poses=args.poses, progress=progress)
    if plot is not None:
        plot_sizing(params, result, plot)
    if args.json:
        print_json(result.as_json(), "sizing result")
    else:
        print(format_table(params, result))
        if args.plot is not None:
            print(f"plot written to {args.plot}")
    return 0


def format_table(params: RobotParameters, result: SizingResult) -> str:
    """The sizing result as a readable text table."""
    sizing = params.sizing
    SF = result.safety_factor
    prismatic = next(j.velocity for j in params.joints if j.type == "prismatic")
    revolute = next(j.velocity for j in params.joints if j.type == "revolute")
    where = (
        "at q = 0 (the report's pose)"
        if result.model == "report"
        else f"worst of {result.poses} poses (q = 0 and a Halton sequence over the joint limits)"
    )
    directions = (
        "every joint in the report's positive direction at once (joint 3 lifting)"
        if result.model == "report"
        else "both directions of every joint"
    )
    lines = [
        f"QUIROBOT servo sizing, {result.model} model, {where}, {directions}",
        f"trapezoid {sizing.acceleration_time:g} / {sizing.cruise_time:g} / {sizing.deceleration_time:g} s "
        f"at {prismatic:g} m/s and {revolute:.4g} rad/s on every joint at once; duty cycle with "
        f"{sizing.dwell_time:g} s holds; safety factor {SF:g}; bus {params.drive.bus_voltage:g} V x "
        f"{params.drive.voltage_headroom:g}",
        "motor-side torques in N*m (without the safety factor), speeds in rad/s; capacities K_T*I_max and "
        "K_T*I_cont",
        "",
        f"{'joint':12s} {'motor':13s} {'peak':>8s} {'nominal':>8s} {'RMS':>8s} {'speed':>7s} "
        f"{'peak cap':>8s} {'cont cap':>8s} {'margin':>7s}  {'ok':3s} limited by",
    ]
    for joint in result.joints:
        lines.append(
            f"{joint.name:12s} {joint.motor:13s} {joint.peak_torque:8.4f} {joint.nominal_torque:8.4f} "
            f"{joint.rms_torque:8.4f} {joint.peak_speed:7.1f} {joint.peak_capacity:8.4f} "
            f"{joint.continuous_capacity:8.4f} {joint.margin:+7.1%}  {'yes' if joint.ok else 'NO':3s} "
            f"{joint.limiting}"
        )
    lines.append("")
    lines.append(
        "pose and direction of each joint's peak (d1 d2 d3 in m, theta4 theta5 in rad; velocity signs):"
    )
    for joint in result.joints:
        pose = np.array2string(joint.worst_pose, precision=3, suppress_small=True)
        signs = " ".join("+" if s > 0 else "-" for s in joint.worst_direction)
        lines.append(f"  {joint.name:12s} q = {pose}  direction {signs}")
    return "\n".join(lines)
