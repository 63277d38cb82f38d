"""`quirobot calibrate`: a simulated kinematic calibration campaign (quirobot_kinematics.calibration)."""

from __future__ import annotations

import argparse
import json

from quirobot_cli.verb_parser import add_verb

DEFAULT_OUTPUT = "quirobot_output/calibration.yaml"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_verb(
        subparsers,
        "calibrate",
        help="kinematic calibration: a simulated tracker campaign identifies the machine's geometric errors",
        description=(
            "Draw a machine from the parameter file's geometric error distributions (--seed), choose the "
            "measured poses by observability (Nahvi-Hollerbach noise amplification index, reported with the "
            "condition number), measure tool0 with a simulated tracker (--tracker optical: 0.25 mm RMS, "
            "laser: 0.02 mm), identify the errors by least squares, the TCP by pivoting, write the "
            "calibration file (FK/IK load it: quirobot_kinematics.kinematic_model(calibration=...)) and "
            "print the tip's position error over the workspace before and after. --json: {before, after: "
            "{position_error, axis_angle_error: {p50, p95, max}}, identified, planted, observability, "
            "condition_number, tracker, poses, output} in m and rad."
        ),
    )
    parser.add_argument(
        "--tracker", choices=("optical", "laser"), default="laser", help="tracker class (default laser)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="random seed of the machine and the campaign (default 0)"
    )
    parser.add_argument(
        "--output",
        default=DEFAULT_OUTPUT,
        help=f"calibration file, its folder created if missing (default {DEFAULT_OUTPUT}); an existing file "
        "is kept unless --force, a symbolic link is never written",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --output file")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(handler=calibrate)


def calibrate(args: argparse.Namespace) -> int:
    import datetime
    from pathlib import Path

    import yaml

    from quirobot_cli.output_paths import new_output_file, output_folder, write_output_text
    from quirobot_description import robot_parameters
    from quirobot_description.geometric_errors import GeometricErrors, calibration_document
    from quirobot_description.machine_identity import simulated_machine
    from quirobot_kinematics import KinematicModel
    from quirobot_kinematics.calibration import PoseErrors, calibrate_machine

    output = Path(args.output)
    output_folder(output.parent)
    output = new_output_file(output, ".yaml", force=args.force)
    params = robot_parameters()
    report = calibrate_machine(
        KinematicModel.from_parameters(params), params.geometric, params.calibration, args.tracker, args.seed
    )
    campaign = report.campaign
    date = datetime.datetime.now(datetime.UTC).date().isoformat()
    source = (
        f"calibration campaign {date}/seed {args.seed}: {args.tracker} tracker, {len(campaign.poses)} poses "
        f"(noise amplification index {campaign.observability:.3g}), TCP by pivoting"
    )
    machine = simulated_machine(args.seed)  # the simulated machine measured: its drives' serial numbers
    write_output_text(
        output,
        yaml.safe_dump(calibration_document(campaign.identified, source, machine), sort_keys=False),
        force=args.force,
    )
    names = GeometricErrors.names()
    document = {
        stage: {
            "position_error": PoseErrors.statistics(errors.position),
            "axis_angle_error": PoseErrors.statistics(errors.axis_angle),
        }
        for stage, errors in (("before", report.before), ("after", report.after))
    }
    document |= {
        "identified": {name: getattr(campaign.identified, name) for name in names},
        "planted": {name: getattr(report.actual, name) for name in names},
        "observability": campaign.observability,
        "condition_number": campaign.condition_number,
        "tracker": args.tracker,
        "poses": len(campaign.poses),
        "machine": machine.text(),
        "output": str(output),
    }
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    print(
        f"quirobot calibrate: {len(campaign.poses)} poses, {args.tracker} tracker, noise amplification index "
        f"{campaign.observability:.3g} (random poses: {campaign.candidate_observability:.3g}), "
        f"condition number {campaign.condition_number:.3g}"
    )
    print(f"  {'tip position error':<22} {'p50':>8} {'p95':>8} {'max':>8}")
    for stage in ("before", "after"):
        row = " ".join(f"{document[stage]['position_error'][k] * 1e3:>8.3f}" for k in ("p50", "p95", "max"))
        print(f"  {stage:<22} {row}  mm")
    print(f"  calibration file: {output}, of the machine with drives {machine.text()}")
    return 0
