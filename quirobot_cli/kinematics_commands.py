"""`quirobot` verbs of the kinematics: fk, ik, workspace.

Numbers are parsed here rather than by argparse so that a wrong count or a non-number gives one
line naming the problem ("fk takes 5 joint values, got 4") and exit 2, like every other error.
What fk prints, ik --matrix takes: `quirobot ik --matrix $(quirobot fk Q1..Q5 | tail -n 4)`.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from quirobot_cli.json_output import print_json
from quirobot_cli.output_paths import output_file
from quirobot_cli.verb_parser import add_verb
from quirobot_cli.work_limits import WORKSPACE_SAMPLES_MAX, check_count
from quirobot_description.parameters import JOINT_NAMES, load_parameters
from quirobot_kinematics.forward import forward_kinematics
from quirobot_kinematics.inverse import (
    DEFAULT_ORIENTATION_TOLERANCE,
    ORTHONORMALITY_TOLERANCE,
    ApproachTarget,
    inverse_kinematics,
    inverse_kinematics_all,
)
from quirobot_kinematics.model import REVOLUTE, KinematicModel
from quirobot_kinematics.rotations import nearest_rotation
from quirobot_kinematics.workspace import DOWN, estimate_workspace, plot_workspace

#: Decimals fk prints: a pose printed this way is orthonormal to ~1e-10 (m: a tenth of a nanometre).
FK_DECIMALS = 10
#: Largest deviation of R^T R from identity that ik --matrix takes as a rounded rotation (4 printed
#: decimals give up to ~3e-4): it solves for the nearest rotation, whose x axis may leave the
#: horizontal plane by as much (rad, 0.06 deg). A matrix further from a rotation is refused.
MATRIX_ROUNDING_TOLERANCE = 1e-3


class CommandError(ValueError):
    """A malformed command line (wrong count of numbers, not a number, conflicting options)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the kinematics verbs to the `quirobot` parser."""
    fk = add_verb(
        subparsers,
        "fk",
        help="forward kinematics: tool0 (or drill tip) pose for 5 joint values",
        description="Print the 4x4 pose of tool0 in the world frame for joint values d1 d2 d3 (m) and "
        "theta4 theta5 (rad), the report's joint order. Joint limits are not enforced.",
    )
    fk.add_argument("joints", nargs="*", metavar="Q", help="5 joint values: d1 d2 d3 (m) theta4 theta5 (rad)")
    fk.add_argument(
        "--feed", metavar="F", help="drill feed in m: give the drill tip, F along tool z (default 0)"
    )
    _common(fk)
    fk.set_defaults(handler=_fk)

    ik = add_verb(
        subparsers,
        "ik",
        help="inverse kinematics: joint values for a tool position + approach, or a full pose",
        description="Solve the closed-form IK. Target: --position X Y Z (m) with --approach AX AY AZ "
        "(tool z direction; the roll about it is left free), or --matrix with 16 numbers (a 4x4 pose, "
        "row-major, whose x axis must be horizontal; what `quirobot fk` prints). A rotation rounded to "
        f"4 decimals or more (R^T R within {MATRIX_ROUNDING_TOLERANCE:g} of identity) is replaced by the "
        f"nearest rotation, and its x axis may leave the horizontal plane by {MATRIX_ROUNDING_TOLERANCE:g} "
        "rad. Prints the joint values nearest the seed within "
        'the joint limits. JSON: {"q": [5 values], "joint_names": [...]}; with --all "q" is a list of '
        "solutions. Unreachable targets exit 2 with the reason.",
    )
    ik.add_argument("--position", nargs="+", metavar="X", help="tool position X Y Z in m, world frame")
    ik.add_argument("--approach", nargs="+", metavar="A", help="approach direction AX AY AZ (any length > 0)")
    ik.add_argument("--matrix", nargs="+", metavar="M", help="full 4x4 pose, 16 numbers row-major")
    ik.add_argument("--seed", nargs="+", metavar="S", help="5 joint values; the nearest solution wins")
    ik.add_argument("--feed", metavar="F", help="the target is the drill tip at feed F m along tool z")
    ik.add_argument("--all", action="store_true", help="print every solution within limits, nearest first")
    ik.add_argument("--no-limits", action="store_true", help="solve regardless of joint limits")
    _common(ik)
    ik.set_defaults(handler=_ik)

    workspace = add_verb(
        subparsers,
        "workspace",
        help="reachable tool0 volume for an approach direction, sampled; optional PNG",
        description="Sample tool0 positions in a box around the gantry, keep those the arm reaches with "
        "tool z along the approach, print the sampled volume (m^3, with its standard error) beside "
        "the exact one, and optionally plot top and side views.",
    )
    workspace.add_argument(
        "--approach",
        nargs="+",
        metavar="A",
        help="approach direction AX AY AZ (default 0 0 -1, straight down)",
    )
    workspace.add_argument(
        "--samples", metavar="N", default="100000", help="number of samples (default 100000)"
    )
    workspace.add_argument("--seed", metavar="S", default="0", help="random seed (default 0)")
    workspace.add_argument(
        "--plot",
        metavar="FILE.png",
        type=Path,
        help="write top and side views to this PNG (its folder must exist)",
    )
    _common(workspace)
    workspace.set_defaults(handler=_workspace)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--parameter-file", type=Path, help="parameter YAML (default: the shipped one)")


def _model(args: argparse.Namespace) -> KinematicModel:
    return KinematicModel.from_parameters(load_parameters(args.parameter_file))


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise CommandError(f"{what}: {text!r} is not a number") from None


def _numbers(values: list[str] | None, count: int, what: str) -> list[float] | None:
    if values is None:
        return None
    if len(values) != count:
        raise CommandError(f"{what} takes {count} numbers, got {len(values)}")
    return [_number(v, what) for v in values]


def _feed(args: argparse.Namespace) -> float:
    if args.feed is None:
        return 0.0
    feed = _number(args.feed, "--feed")
    if not math.isfinite(feed):
        raise CommandError(f"--feed must be finite, got {args.feed}")
    return feed


def _fk(args: argparse.Namespace) -> int:
    if len(args.joints) != 5:
        raise CommandError(f"fk takes 5 joint values (d1 d2 d3 theta4 theta5), got {len(args.joints)}")
    q = [_number(v, "fk joint value") for v in args.joints]
    feed = _feed(args)
    T = forward_kinematics(q, _model(args), feed=feed)
    if not np.all(np.isfinite(T)):
        raise CommandError("fk: the pose overflows double precision (joint or feed values too large)")
    if args.json:
        print_json({"T": T.tolist()}, "fk pose")
    else:
        frame = "drill tip" if feed else "tool0"
        print(f"{frame} in world (rotation columns n o a, position p in m):")
        for row in T:
            print("  " + "  ".join(f"{v: .{FK_DECIMALS}f}" for v in row))
    return 0


def _ik(args: argparse.Namespace) -> int:
    position = _numbers(args.position, 3, "--position")
    approach = _numbers(args.approach, 3, "--approach")
    matrix = _numbers(args.matrix, 16, "--matrix")
    seed = _numbers(args.seed, 5, "--seed")
    if matrix is not None and (position is not None or approach is not None):
        raise CommandError("give either --matrix or --position with --approach, not both")
    orientation_tolerance = DEFAULT_ORIENTATION_TOLERANCE
    if matrix is not None:
        target: object = _rounded_pose(matrix)
        orientation_tolerance = MATRIX_ROUNDING_TOLERANCE
    elif position is not None and approach is not None:
        target = ApproachTarget(position, approach)
    else:
        raise CommandError("ik needs --position X Y Z with --approach AX AY AZ, or --matrix with 16 numbers")
    model = _model(args)
    options = dict(
        seed=seed,
        respect_limits=not args.no_limits,
        feed=_feed(args),
        orientation_tolerance=orientation_tolerance,
    )
    solutions = inverse_kinematics_all(target, model, **options) if args.all else None
    best = inverse_kinematics(target, model, **options) if not args.all else solutions[0]
    if args.json:
        q = solutions.tolist() if args.all else best.tolist()
        print_json({"q": q, "joint_names": list(JOINT_NAMES)}, "ik solution")
        return 0
    for index, solution in enumerate(solutions if args.all else [best]):
        if args.all:
            print(f"solution {index + 1}:")
        for i, (name, value) in enumerate(zip(JOINT_NAMES, solution, strict=True)):
            unit = f"rad ({math.degrees(value):.4f} deg)" if i in REVOLUTE else "m"
            print(f"  {name:12s} {value: .9f} {unit}")
    return 0


def _rounded_pose(values: list[float]) -> np.ndarray:
    """(4, 4) pose of 16 row-major numbers, its rotation replaced by the nearest one when rounded.

    Not finite, a wrong bottom row or a reflection: returned as given, for IK to name the problem.
    """
    T = np.array(values).reshape(4, 4)
    if not np.all(np.isfinite(T)) or np.abs(T[3] - (0.0, 0.0, 0.0, 1.0)).max() > ORTHONORMALITY_TOLERANCE:
        return T
    R = T[:3, :3]
    deviation = float(np.abs(R.T @ R - np.eye(3)).max())
    if deviation > MATRIX_ROUNDING_TOLERANCE:
        raise CommandError(
            f"--matrix: the rotation is not orthonormal: R^T R differs from identity by {deviation:.3g} "
            f"(a rounded rotation is accepted up to {MATRIX_ROUNDING_TOLERANCE:g})"
        )
    if np.linalg.det(R) < 0.0:
        return T
    T[:3, :3] = nearest_rotation(R)
    return T


def _workspace(args: argparse.Namespace) -> int:
    approach = _numbers(args.approach, 3, "--approach") if args.approach is not None else list(DOWN)
    samples = check_count(_number(args.samples, "--samples"), "--samples", WORKSPACE_SAMPLES_MAX)
    seed = _number(args.seed, "--seed")
    if not seed.is_integer() or seed < 0:
        raise CommandError(f"--seed must be a whole number >= 0, got {args.seed}")
    plot = output_file(args.plot, ".png") if args.plot is not None else None
    estimate = estimate_workspace(_model(args), approach, samples=int(samples), seed=int(seed))
    summary = estimate.summary()
    if args.plot is not None:
        summary["plot"] = str(plot_workspace(estimate, plot))
    if args.json:
        print_json(summary, "workspace summary")
        return 0
    a = summary["approach"]
    print(f"approach a = ({a[0]:.6g}, {a[1]:.6g}, {a[2]:.6g})")
    if not estimate.approach_reachable:
        print("  no wrist configuration within the joint limits points the tool this way: nothing reachable")
    else:
        angles = ", ".join(
            f"({math.degrees(t4):.3f}, {math.degrees(t5):.3f})" for t4, t5 in estimate.wrist_angles
        )
        print(f"  wrist (theta4, theta5) within limits, deg: {angles}")
    print(
        f"  sampled volume {summary['volume_m3']:.4f} +- {summary['volume_standard_error_m3']:.4f} m^3 "
        f"({summary['reachable_samples']} of {summary['samples']} samples); "
        f"exact {summary['exact_volume_m3']:.4f} m^3"
    )
    if summary["reachable_bounds_m"] is not None:
        low, high = summary["reachable_bounds_m"]
        for axis, lo, hi in zip("xyz", low, high, strict=True):
            print(f"  {axis} from {lo:.4f} to {hi:.4f} m")
    if args.plot is not None:
        print(f"  plot: {summary['plot']}")
    return 0
