"""`quirobot register`: a simulated patient registration (quirobot_kinematics.registration)."""

from __future__ import annotations

import argparse
import json

from quirobot_cli.verb_parser import add_verb

#: Where the simulated patient frame's origin is (m, world): the shipped incision task's entry.
DEFAULT_TASK = "incision"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = add_verb(
        subparsers,
        "register",
        help="patient registration: tracked fiducials (and the bone surface) give world -> patient",
        description=(
            "Draw a patient frame at the incision task's entry (rotated up to the parameter file's "
            "registration.patient_rotation), localise its fiducials with the optical tracker's error (FLE), "
            "register them (Arun/Horn paired points; --icp refines on 200 digitised bone-surface points) and "
            "print the world_from_patient transform, the FRE, the target registration error at the planned "
            "entry and its prediction (Fitzpatrick-West-Maurer 1998). --json: {transform, truth, fre, "
            "tre_predicted, tre, rotation_error, fiducials, fle, icp, output} in m and rad. --output writes "
            "the registered transform as a registration file (task_node's registration_file publishes it "
            "as the tf2 frame world -> patient)."
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--icp", action="store_true", help="refine on the bone surface (ICP)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a summary")
    parser.add_argument(
        "--output",
        default="",
        help="registration file to write (YAML, its folder created if missing; an existing file is kept "
        "unless --force, a symbolic link is never written)",
    )
    parser.add_argument("--force", action="store_true", help="replace an existing --output file")
    parser.set_defaults(handler=register_patient)


def register_patient(args: argparse.Namespace) -> int:
    import numpy as np

    from quirobot_control.planning.tasks import load_task
    from quirobot_description import robot_parameters
    from quirobot_kinematics.registration import simulate_registration

    output = _output(args) if args.output else None  # checked before the work
    settings = robot_parameters().registration
    entry = load_task(DEFAULT_TASK).entry
    result = simulate_registration(settings, np.random.default_rng(args.seed), entry, surface=args.icp)
    document = {
        "transform": result.estimate.tolist(),
        "truth": result.truth.tolist(),
        "fre": result.fre,
        "tre_predicted": result.tre_predicted,
        "tre": result.tre,
        "rotation_error": result.rotation_error,
        "fiducials": settings.fiducials,
        "fle": settings.fiducial_localization_error,
        "icp": args.icp,
        "output": write_registration(args, output, result.estimate, settings) if output else None,
    }
    if args.json:
        print(json.dumps(document, indent=2))
        return 0
    surface = " + ICP on the bone surface" if args.icp else ""
    print(
        f"quirobot register: {settings.fiducials} fiducials, "
        f"FLE {settings.fiducial_localization_error * 1e3:.2f} mm{surface}"
    )
    print(
        f"  FRE {result.fre * 1e3:.3f} mm, TRE at the entry {result.tre * 1e3:.3f} mm "
        f"(predicted RMS {result.tre_predicted * 1e3:.3f} mm), "
        f"rotation error {np.degrees(result.rotation_error):.3f} deg"
    )
    print("  world_from_patient:")
    for row in result.estimate:
        print("   " + " ".join(f"{v:>10.6f}" for v in row))
    if document["output"]:
        print(f"  wrote {document['output']}")
    return 0


def _output(args: argparse.Namespace):
    """--output as a new .yaml file (its folder created if missing), or the existing one with --force."""
    from pathlib import Path

    from quirobot_cli.output_paths import new_output_file, output_folder

    output = Path(args.output)
    output_folder(output.parent)
    return new_output_file(output, ".yaml", force=args.force)


def write_registration(args: argparse.Namespace, output, transform, settings) -> str:
    """Write `transform` (4, 4) world_from_patient as the registration file `output`; its path."""
    import yaml

    from quirobot_cli.output_paths import write_output_text
    from quirobot_kinematics.registration import registration_document

    icp = ", ICP on 200 digitised bone-surface points" if args.icp else ""
    source = (
        f"quirobot register --seed {args.seed}{' --icp' if args.icp else ''}: simulated registration of "
        f"{settings.fiducials} fiducials (FLE {settings.fiducial_localization_error * 1e3:.2f} mm{icp}) "
        "at the incision task's entry, Arun/Horn paired points"
    )
    write_output_text(
        output, yaml.safe_dump(registration_document(transform, source), sort_keys=False), force=args.force
    )
    return str(output)
