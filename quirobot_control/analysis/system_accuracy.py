"""The system accuracy budget per stage: the robot uncalibrated, calibrated, and through registration.

Each sample draws a machine (the parameter file's geometric error distributions), an incision
(entry point and axis over the workspace, as the closed-loop budget's) and, for the stages:

* uncalibrated: the nominal model's IK aims the tip at the entry along the axis; the error is
  the actual machine's tip and axis there (quirobot_kinematics.geometric);
* calibrated: a laser-tracker campaign on that machine (the budget's one pose plan, chosen by
  observability) identifies its errors; the calibrated model's IK aims instead;
* registered: the entry and axis are planned in the patient frame; an optical-tracker
  registration of the fiducials (registration.*) maps them to the world with its error; the
  calibrated robot aims at the mapped ones and the error is measured at the true entry and axis.

The closed loop's own errors (`quirobot accuracy`'s Monte-Carlo, a few micrometres at the entry)
are added to each stage's as a bound (|geometric + dynamic| <= |geometric| + |dynamic|): the
static pose error and the dynamic tracking error are independent, and running the closed loop
for every stage would triple the budget's time for a term 100 times smaller. `tre_predicted`
is Fitzpatrick-West-Maurer's RMS TRE turned into p50/p95 of a 3D isotropic Gaussian error
(|e| = RMS * sqrt(chi2_3 / 3)) beside the Monte-Carlo's TRE. Every number in m or rad.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from quirobot_description.parameters import RobotParameters
from quirobot_kinematics import ApproachTarget, IKError, KinematicModel, inverse_kinematics
from quirobot_kinematics.calibration import CampaignPlan, plan_campaign, run_campaign
from quirobot_kinematics.geometric import actual_forward_kinematics
from quirobot_kinematics.registration import apply, simulate_registration

STAGES = ("uncalibrated", "calibrated", "registered")
SYSTEM_METRICS = ("entry_error", "axis_angle_error")


@dataclass(frozen=True)
class SystemSample:
    """One sample's errors: stage -> metric -> value (m, rad), and its registration's TRE (m)."""

    errors: dict[str, dict[str, float]]
    tre: float
    tre_predicted: float


def aim_error(
    used: KinematicModel,
    actual: KinematicModel,
    aim: tuple[np.ndarray, np.ndarray],
    truth: tuple[np.ndarray, np.ndarray],
) -> dict[str, float]:
    """Entry error (m) and axis angle error (rad) of the actual machine's tip (`actual`: a model
    with the true errors) when `used` solves the IK of aim (entry, unit axis), against truth."""
    try:
        q = inverse_kinematics(ApproachTarget(aim[0], aim[1]), used)
    except IKError:
        return dict.fromkeys(SYSTEM_METRICS, math.inf)
    pose = actual_forward_kinematics(q, actual.calibrated(None), actual.errors)
    cosine = float(pose[:3, 2] @ truth[1])
    return {
        "entry_error": float(np.linalg.norm(pose[:3, 3] - truth[0])),
        "axis_angle_error": math.acos(max(-1.0, min(1.0, cosine))),
    }


def system_sample(
    params: RobotParameters,
    model: KinematicModel,
    plan: CampaignPlan,
    entry: np.ndarray,
    direction: np.ndarray,
    rng: np.random.Generator,
    dynamic: dict[str, float] | None = None,
) -> SystemSample:
    """One machine, one registration, the three stages at `entry` (3,) m along unit `direction`;
    `dynamic`: the closed loop's entry and axis errors added to each stage (none: zero)."""
    actual = model.calibrated(params.geometric.sample(rng))
    campaign = run_campaign(
        model,
        actual.errors,
        params.geometric,
        params.calibration,
        params.calibration.laser_tracker_noise,
        rng,
        plan=plan,
    )
    calibrated = model.calibrated(campaign.identified)
    settings = params.registration
    registration = simulate_registration(settings, rng, entry)
    patient_axis = registration.truth[:3, :3].T @ direction
    mapped = (apply(registration.estimate, settings.target), registration.estimate[:3, :3] @ patient_axis)
    truth = (entry, direction)
    errors = {
        "uncalibrated": aim_error(model, actual, truth, truth),
        "calibrated": aim_error(calibrated, actual, truth, truth),
        "registered": aim_error(calibrated, actual, mapped, truth),
    }
    if dynamic is not None:
        for stage in errors.values():
            for metric in SYSTEM_METRICS:
                stage[metric] += dynamic[metric]
    return SystemSample(errors, registration.tre, registration.tre_predicted)


def system_plan(params: RobotParameters, model: KinematicModel, rng: np.random.Generator) -> CampaignPlan:
    """The budget's one campaign pose plan (parameter file `calibration`)."""
    return plan_campaign(model, params.geometric, params.calibration, rng)


def _stats(values: np.ndarray) -> dict[str, float | None]:
    p50, p95 = np.percentile(values, [50, 95])
    return {
        k: (float(v) if math.isfinite(v) else None)
        for k, v in (("p50", p50), ("p95", p95), ("max", values.max()))
    }


def system_json(samples: tuple[SystemSample, ...]) -> dict:
    """{"system": {stage: {metric: {p50, p95, max}}}, "tre_predicted": {p50, p95},
    "tre_monte_carlo": {p50, p95}} in m and rad."""
    from scipy.stats import chi2

    system = {
        stage: {
            metric: _stats(np.array([s.errors[stage][metric] for s in samples])) for metric in SYSTEM_METRICS
        }
        for stage in STAGES
    }
    rms = float(np.sqrt(np.mean([s.tre_predicted**2 for s in samples])))
    predicted = {f"p{q}": rms * math.sqrt(chi2.ppf(q / 100.0, 3) / 3.0) for q in (50, 95)}
    tre = np.array([s.tre for s in samples])
    monte_carlo = {f"p{q}": float(np.percentile(tre, q)) for q in (50, 95)}
    return {"system": system, "tre_predicted": predicted, "tre_monte_carlo": monte_carlo}
