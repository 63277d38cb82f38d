"""Kinematic calibration of a simulated machine, and FK/IK with the calibration file (no ROS).

Shows: a machine drawn within the parameter file's geometric tolerances (squareness, tilts, link
lengths, TCP), a simulated laser-tracker campaign that identifies those errors
(`calibrate_machine`, as `quirobot calibrate`), the tip position error before and after, and the
calibration file that `kinematic_model(calibration=...)` loads for FK and IK.

    python examples/04_calibration.py
"""

import tempfile
from pathlib import Path

import numpy as np
import yaml

from quirobot_description import robot_parameters
from quirobot_description.geometric_errors import calibration_document
from quirobot_description.machine_identity import simulated_machine
from quirobot_kinematics import ApproachTarget, KinematicModel, fk, ik, kinematic_model
from quirobot_kinematics.calibration import calibrate_machine

params = robot_parameters()  # the shipped parameter file, tolerances and tracker noise included
report = calibrate_machine(
    KinematicModel.from_parameters(params), params.geometric, params.calibration, "laser", seed=1, targets=50
)
campaign = report.campaign
print(f"{len(campaign.poses)} poses measured, noise amplification index {campaign.observability:.3g}")
for stage, errors in (("nominal model", report.before), ("calibrated", report.after)):
    p95 = np.percentile(errors.position, 95)
    print(f"  tip position error with the {stage:<13}: p95 {p95 * 1e3:.3f} mm over 50 targets")

with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "calibration.yaml"  # what `quirobot calibrate --output` writes
    machine = simulated_machine(1)  # the machine measured: its drives' serial numbers (0x1018:04)
    path.write_text(yaml.safe_dump(calibration_document(campaign.identified, "examples/04, seed 1", machine)))
    model = kinematic_model(calibration=path)  # FK and IK of this machine
    # The shipped incision's entry and direction (tilted 30 deg: straight down, the wrist's yaw
    # would not matter to an approach target and the correction would have no unique answer).
    target = ApproachTarget(position=[1.0, 1.0, -1.35], approach=[0.0, 0.5, -np.sqrt(3) / 2])
    nominal, calibrated = ik(target), ik(target, model=model)
    change = np.abs(calibrated - nominal)
    print(
        f"calibrated IK moves the gantry by {change[:3].max() * 1e3:.3f} mm, "
        f"the wrist by {change[3:].max() * 1e3:.3f} mrad"
    )
    miss = np.linalg.norm(fk(nominal, model=model)[:3, 3] - target.position)
    hit = np.linalg.norm(fk(calibrated, model=model)[:3, 3] - target.position)
    print(
        f"on this machine tool0 misses the target by {miss * 1e3:.3f} mm with the nominal IK, "
        f"by {hit * 1e6:.3f} um with the calibrated one"
    )
