"""Kinematic calibration: a simulated tracker campaign identifies the machine's geometric errors.

The campaign (`run_campaign`, `quirobot calibrate`), on a machine whose errors the caller knows
(the simulation's truth) and the identification does not:

1. Pose selection by observability. Candidate configurations are drawn within the joint limits;
   poses are added greedily, each the candidate that most raises the noise amplification index
   O = sigma_min^2 / sigma_max (Nahvi & Hollerbach 1996, their O5) of the identification
   Jacobian J (d tool0 position / d parameters, its columns scaled by each parameter's sigma in
   the parameter file, so that a column is the effect of a typical error). Its condition number
   sigma_max / sigma_min is reported too. Why O5 rather than the condition number alone: it
   rewards a large sigma_min (small parameter variance) and not only a round error ellipsoid.
2. Measurement: a tracker target on tool0 (a spherically mounted retroreflector at the flange),
   read with isotropic Gaussian noise of the tracker's 3D RMS (optical or laser class,
   parameter file `calibration`), in the world frame (the tracker registered to the robot's
   base beforehand: that registration is not simulated).
3. Identification: scipy.optimize.least_squares of the 18 robot parameters (every geometric
   error but the TCP offset, which tool0's target does not see) from zero, with their
   covariance sigma^2 (J^T J)^-1 at the solution.
4. TCP by pivoting: the tip seated in a divot, the tool tilted around it; with the identified
   model, R_i t + p_i = c for every pose i gives the TCP offset t and the divot c by linear
   least squares (the seating's noise on the tip).

Within the tolerance bands. The machine meets the tolerances the parameter file declares (a
calibration file outside them is refused: geometric_errors.read_calibration), but an estimate is
the truth plus noise: a machine near a band's edge is estimated past it (laser tracker: 26 of 60
drawn machines, up to 1.27 times a straightness band; optical: up to 4.8 times). An estimate
outside its band is therefore solved again with the bands as bounds (the constrained least
squares: the truth lies in the box, so the estimate only comes nearer to it in the fit's metric);
one more than OUT_OF_TOLERANCE_SIGMAS standard uncertainties outside is no noise but a machine out
of tolerance, or a bad campaign: CalibrationError names it.

`evaluate` measures what a model does on the actual machine: targets (entry point, axis) over
the workspace, IK with that model, the actual tip's position error and axis angle error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from quirobot_description.geometric_errors import CalibrationParameters, GeometricErrors, GeometricTolerances
from quirobot_kinematics.geometric import ActualPositions, actual_forward_kinematics
from quirobot_kinematics.inverse import ApproachTarget, IKError, inverse_kinematics
from quirobot_kinematics.model import KinematicModel

#: The parameters the tracker campaign identifies (tool0's target cannot see the TCP offset).
ROBOT_PARAMETERS = tuple(name for name in GeometricErrors.names() if not name.startswith("tcp_offset"))
TCP_PARAMETERS = ("tcp_offset_x", "tcp_offset_y", "tcp_offset_z")
#: Finite-difference step of the identification Jacobian (m or rad): the FK is smooth, errors
#: are 1e-5..1e-3, so a central difference at 1e-6 is exact to about 1e-12 relative.
JACOBIAN_STEP = 1e-6
#: Joint-range margin of the candidate poses (fraction of each range kept away from the limits).
CANDIDATE_MARGIN = 0.05
#: Standard uncertainties an unconstrained estimate may lie outside its tolerance band before the
#: machine is taken as out of tolerance (module docstring): for a machine at its band's edge,
#: noise puts it this far out with 0.13 % probability (one-sided normal).
OUT_OF_TOLERANCE_SIGMAS = 3.0


class CalibrationError(ValueError):
    """A campaign that cannot run (named in the message)."""


def with_parameters(base: GeometricErrors, names: tuple[str, ...], values: np.ndarray) -> GeometricErrors:
    """`base` with the `names` set to `values`."""
    return replace(base, **dict(zip(names, (float(v) for v in values), strict=True)))


def _flange(errors: GeometricErrors) -> GeometricErrors:
    """The errors without the TCP offset: FK then gives tool0 (the tracker's target)."""
    return replace(errors, tcp_offset_x=0.0, tcp_offset_y=0.0, tcp_offset_z=0.0)


def tool0_positions(q: np.ndarray, model: KinematicModel, errors: GeometricErrors) -> np.ndarray:
    """(N, 3) m: tool0 of the machine with `errors` at q (N, 5)."""
    return actual_forward_kinematics(q, model, _flange(errors))[:, :3, 3]


def identification_jacobian(
    q: np.ndarray, model: KinematicModel, errors: GeometricErrors, scale: np.ndarray | None = None
) -> np.ndarray:
    """(3N, 18) d tool0 positions / d ROBOT_PARAMETERS at `errors` (central differences), each
    column multiplied by `scale` (18,) if given."""
    base = np.array([getattr(errors, name) for name in ROBOT_PARAMETERS])
    positions = ActualPositions(q, model)  # tool0_positions' numbers, a step's unchanged terms shared
    columns = []
    for k in range(len(ROBOT_PARAMETERS)):
        step = np.zeros_like(base)
        step[k] = JACOBIAN_STEP
        plus = positions(_flange(with_parameters(errors, ROBOT_PARAMETERS, base + step)))
        minus = positions(_flange(with_parameters(errors, ROBOT_PARAMETERS, base - step)))
        columns.append(((plus - minus) / (2.0 * JACOBIAN_STEP)).ravel())
    jac = np.stack(columns, axis=1)
    return jac if scale is None else jac * scale


def observability(jac: np.ndarray) -> tuple[float, float]:
    """(noise amplification index sigma_min^2 / sigma_max, condition number) of a scaled Jacobian."""
    singular = np.linalg.svd(jac, compute_uv=False)
    if singular[-1] <= 0.0:
        return 0.0, math.inf
    return float(singular[-1] ** 2 / singular[0]), float(singular[0] / singular[-1])


def parameter_scale(tolerances: GeometricTolerances) -> np.ndarray:
    """(18,) the parameter file's sigma of each robot parameter (the Jacobian's column scale)."""
    return np.array([getattr(tolerances.sigma, name) for name in ROBOT_PARAMETERS])


def parameter_bands(tolerances: GeometricTolerances, names: tuple[str, ...] = ROBOT_PARAMETERS) -> np.ndarray:
    """(len(names),) the parameter file's tolerance band (+/-, m or rad) of each parameter."""
    return np.array([getattr(tolerances.tolerance, name) for name in names])


def outside_bands(
    names: tuple[str, ...], values: np.ndarray, sigma: np.ndarray, bands: np.ndarray
) -> np.ndarray:
    """(len(names),) bool: the estimates `values` outside their `bands`; CalibrationError if one
    lies more than OUT_OF_TOLERANCE_SIGMAS standard uncertainties `sigma` outside (module docstring)."""
    excess = np.abs(values) - bands
    beyond = excess > OUT_OF_TOLERANCE_SIGMAS * sigma
    if np.any(beyond):
        k = int(np.argmax(beyond))
        raise CalibrationError(
            f"{names[k]} identified as {values[k]:.4g} +/- {sigma[k]:.2g} (one standard uncertainty), "
            f"more than {OUT_OF_TOLERANCE_SIGMAS:g} of them outside its tolerance band +/-{bands[k]:.4g}: "
            "the machine is out of tolerance or the campaign is bad (check both before calibrating)"
        )
    return excess > 0.0


def candidate_configurations(model: KinematicModel, count: int, rng: np.random.Generator) -> np.ndarray:
    """(count, 5) joint configurations uniform within the limits less CANDIDATE_MARGIN."""
    span = model.upper - model.lower
    return rng.uniform(
        model.lower + CANDIDATE_MARGIN * span, model.upper - CANDIDATE_MARGIN * span, (count, 5)
    )


def select_poses(jac_candidates: np.ndarray, count: int) -> np.ndarray:
    """Indices of `count` candidates chosen greedily by the noise amplification index.

    jac_candidates: (K, 3, P) each candidate's scaled Jacobian rows. The first poses (until the
    stacked Jacobian has full rank) are chosen by the largest smallest-nonzero singular value.
    """
    k, _, p = jac_candidates.shape
    if count > k:
        raise CalibrationError(f"cannot choose {count} poses from {k} candidates")
    chosen: list[int] = []
    stacked = np.zeros((0, p))
    available = np.ones(k, dtype=bool)
    for _ in range(count):
        best, best_value = -1, -math.inf
        for i in np.flatnonzero(available):
            trial = np.vstack([stacked, jac_candidates[i]])
            singular = np.linalg.svd(trial, compute_uv=False)
            rank = min(trial.shape)
            value = singular[rank - 1] ** 2 / singular[0] if trial.shape[0] >= p else singular[rank - 1]
            value += 0.0 if trial.shape[0] >= p else 1e3 * rank  # full rank first
            if value > best_value:
                best, best_value = i, value
        chosen.append(best)
        available[best] = False
        stacked = np.vstack([stacked, jac_candidates[best]])
    return np.array(chosen)


@dataclass(frozen=True)
class Identification:
    """The least-squares identification of the robot parameters."""

    errors: GeometricErrors  # identified (TCP offset zero)
    covariance: np.ndarray  # (18, 18) of ROBOT_PARAMETERS, SI units squared
    residual_rms: float  # m, 3D RMS of the measurement residuals at the solution
    bounded: tuple[str, ...] = ()  # parameters estimated outside their band, solved within it


def identify(
    q: np.ndarray,
    measured: np.ndarray,
    model: KinematicModel,
    noise_rms: float,
    scale: np.ndarray,
    bands: np.ndarray | None = None,
) -> Identification:
    """ROBOT_PARAMETERS from tool0 positions `measured` (N, 3) m at q (N, 5); noise_rms: 3D RMS
    of a reading (m), for the covariance; scale (18,): the parameters' typical size; bands (18,):
    their tolerance bands, kept to (module docstring; None: unbounded)."""
    from scipy.optimize import least_squares

    def residual(x: np.ndarray) -> np.ndarray:
        errors = with_parameters(GeometricErrors.zero(), ROBOT_PARAMETERS, x * scale)
        return (tool0_positions(q, model, errors) - measured).ravel()

    def jacobian(x: np.ndarray) -> np.ndarray:
        errors = with_parameters(GeometricErrors.zero(), ROBOT_PARAMETERS, x * scale)
        return identification_jacobian(q, model, errors, scale)

    solution = least_squares(
        residual,
        np.zeros(len(ROBOT_PARAMETERS)),
        jac=jacobian,
        method="lm",
        xtol=1e-15,
        ftol=1e-15,
        gtol=1e-15,
    )
    sigma = noise_rms / math.sqrt(3.0)

    def covariance_at(x: np.ndarray) -> np.ndarray:
        jac = identification_jacobian(
            q, model, with_parameters(GeometricErrors.zero(), ROBOT_PARAMETERS, x * scale)
        )
        return sigma**2 * np.linalg.inv(jac.T @ jac)

    x = solution.x
    covariance = covariance_at(x)
    bounded: tuple[str, ...] = ()
    if bands is not None:
        outside = outside_bands(ROBOT_PARAMETERS, x * scale, np.sqrt(np.diag(covariance)), bands)
        if np.any(outside):
            bounded = tuple(name for name, out in zip(ROBOT_PARAMETERS, outside, strict=True) if out)
            limit = bands / scale
            x = least_squares(
                residual,
                np.clip(x, -limit, limit),
                jac=jacobian,
                bounds=(-limit, limit),
                method="trf",
                xtol=1e-15,
                ftol=1e-15,
                gtol=1e-15,
            ).x
            covariance = covariance_at(x)
    values = x * scale if not bounded else np.clip(x * scale, -bands, bands)  # x * scale may round out
    errors = with_parameters(GeometricErrors.zero(), ROBOT_PARAMETERS, values)
    rms = float(np.sqrt(np.mean(np.sum(residual(x).reshape(-1, 3) ** 2, axis=1))))
    return Identification(errors, covariance, rms, bounded)


def pivot_configurations(
    model: KinematicModel, actual: GeometricErrors, divot: np.ndarray, settings: CalibrationParameters
) -> np.ndarray:
    """(M, 5) joint positions seating the actual machine's tip in `divot` (3,) m, the tool tilted
    by settings.pivot_tilt and half of it in turn at evenly spaced azimuths (never vertical: the
    wrist's yaw is undefined there), solved on the actual machine: the hand guiding the tool."""
    machine = model.calibrated(actual)
    approaches = []
    for k in range(settings.pivot_poses):
        tilt = settings.pivot_tilt * (1.0 if k % 2 == 0 else 0.5)
        azimuth = 2.0 * math.pi * k / settings.pivot_poses
        approaches.append(
            np.array(
                [math.sin(tilt) * math.cos(azimuth), math.sin(tilt) * math.sin(azimuth), -math.cos(tilt)]
            )
        )
    seed = None
    rows = []
    for approach in approaches:
        q = inverse_kinematics(ApproachTarget(divot, approach), machine, seed)
        rows.append(q)
        seed = q
    return np.array(rows)


def pivot_tcp(
    poses: np.ndarray, tips: np.ndarray | None = None, bands: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """(TCP offset t (3,) in tool0, divot c (3,) in the world, RMS residual m) from tool0 poses
    (M, 4, 4) with the tip in one point: least squares of R_i t - c = -p_i; bands (3,): the TCP
    offset's tolerance bands, kept to (module docstring; its uncertainty from the residuals)."""
    m = poses.shape[0]
    a = np.zeros((3 * m, 6))
    b = np.zeros(3 * m)
    for i, pose in enumerate(poses):
        a[3 * i : 3 * i + 3, :3] = pose[:3, :3]
        a[3 * i : 3 * i + 3, 3:] = -np.eye(3)
        b[3 * i : 3 * i + 3] = -pose[:3, 3] + (0.0 if tips is None else tips[i])
    solution, *_ = np.linalg.lstsq(a, b, rcond=None)
    residual = a @ solution - b
    if bands is not None:
        variance = float(residual @ residual) / max(len(b) - len(solution), 1)  # per coordinate
        sigma = np.sqrt(variance * np.diag(np.linalg.inv(a.T @ a))[:3])
        if np.any(outside_bands(TCP_PARAMETERS, solution[:3], sigma, bands)):
            from scipy.optimize import lsq_linear

            limit = np.concatenate([bands, np.full(3, np.inf)])
            solution = lsq_linear(a, b, bounds=(-limit, limit), tol=1e-15).x
            solution[:3] = np.clip(solution[:3], -bands, bands)
            residual = a @ solution - b
    residual = residual.reshape(-1, 3)
    return solution[:3], solution[3:], float(np.sqrt(np.mean(np.sum(residual**2, axis=1))))


@dataclass(frozen=True)
class CampaignResult:
    """One calibration campaign: the identified errors (TCP from the pivot) and how it went."""

    identified: GeometricErrors
    identification: Identification
    poses: np.ndarray  # (N, 5) the measured configurations
    observability: float  # noise amplification index of the chosen poses (scaled Jacobian)
    condition_number: float
    candidate_observability: float  # the same index of as many random candidates, for comparison
    pivot_residual: float  # m, RMS


def isotropic_noise(rng: np.random.Generator, rms: float, shape: tuple[int, ...]) -> np.ndarray:
    """Gaussian noise of 3D RMS `rms` (m): per-axis sigma rms / sqrt(3)."""
    return rng.normal(0.0, rms / math.sqrt(3.0), shape)


@dataclass(frozen=True)
class CampaignPlan:
    """The poses of a campaign, chosen by observability on the nominal model (one plan serves
    every machine of a budget: the choice does not depend on the machine's errors)."""

    poses: np.ndarray  # (N, 5)
    observability: float  # noise amplification index of the chosen poses (scaled Jacobian)
    condition_number: float
    candidate_observability: float  # the same index of as many random candidates


def plan_campaign(
    model: KinematicModel,
    tolerances: GeometricTolerances,
    settings: CalibrationParameters,
    rng: np.random.Generator,
) -> CampaignPlan:
    """settings.poses chosen greedily from settings.candidate_poses random configurations."""
    scale = parameter_scale(tolerances)
    candidates = candidate_configurations(model, settings.candidate_poses, rng)
    jac = identification_jacobian(candidates, model, GeometricErrors.zero(), scale)
    per_pose = jac.reshape(settings.candidate_poses, 3, -1)
    chosen = select_poses(per_pose, settings.poses)
    index, condition = observability(per_pose[chosen].reshape(-1, per_pose.shape[2]))
    random_index, _ = observability(per_pose[: settings.poses].reshape(-1, per_pose.shape[2]))
    return CampaignPlan(candidates[chosen], index, condition, random_index)


def run_campaign(
    model: KinematicModel,
    actual: GeometricErrors,
    tolerances: GeometricTolerances,
    settings: CalibrationParameters,
    tracker_noise: float,
    rng: np.random.Generator,
    divot: np.ndarray | None = None,
    plan: CampaignPlan | None = None,
) -> CampaignResult:
    """A campaign on the machine with errors `actual` (module docstring); tracker_noise: 3D RMS m;
    plan: its poses (default: planned here from `rng`)."""
    if plan is None:
        plan = plan_campaign(model, tolerances, settings, rng)
    q = plan.poses
    measured = tool0_positions(q, model, actual) + isotropic_noise(rng, tracker_noise, (len(q), 3))
    identification = identify(
        q, measured, model, tracker_noise, parameter_scale(tolerances), parameter_bands(tolerances)
    )
    if divot is None:
        divot = np.array([1.0, 1.0, -1.4])
    pivot_q = pivot_configurations(model, actual, divot, settings)
    poses = actual_forward_kinematics(pivot_q, model, _flange(identification.errors))
    seating = isotropic_noise(rng, settings.pivot_seating_noise, (len(pivot_q), 3))
    tcp, _, pivot_rms = pivot_tcp(poses, seating, parameter_bands(tolerances, TCP_PARAMETERS))
    identified = with_parameters(identification.errors, TCP_PARAMETERS, tcp)
    return CampaignResult(
        identified,
        identification,
        q,
        plan.observability,
        plan.condition_number,
        plan.candidate_observability,
        pivot_rms,
    )


@dataclass(frozen=True)
class PoseErrors:
    """Errors of the actual tip at targets reached with some model: (N,) m and rad."""

    position: np.ndarray
    axis_angle: np.ndarray

    @staticmethod
    def statistics(values: np.ndarray) -> dict[str, float]:
        p50, p95 = np.percentile(values, [50, 95])
        return {"p50": float(p50), "p95": float(p95), "max": float(np.max(values))}


def draw_targets(
    model: KinematicModel, count: int, rng: np.random.Generator, max_tilt: float = math.radians(35.0)
) -> list[ApproachTarget]:
    """Tip targets over the workspace: a reachable configuration's tip, the axis tilted up to
    `max_tilt` from vertical at any azimuth."""
    targets = []
    span = model.upper - model.lower
    for _ in range(count):
        q = rng.uniform(model.lower + 0.1 * span, model.upper - 0.1 * span)
        tilt = math.acos(1.0 - rng.uniform() * (1.0 - math.cos(max_tilt)))
        azimuth = rng.uniform(0.0, 2.0 * math.pi)
        axis = np.array(
            [math.sin(tilt) * math.cos(azimuth), math.sin(tilt) * math.sin(azimuth), -math.cos(tilt)]
        )
        targets.append(
            ApproachTarget(q[:3] * np.array([1.0, 1.0, -1.0]) - np.array([0.0, 0.0, model.l4]), axis)
        )
    return targets


def evaluate(
    used: KinematicModel, actual: GeometricErrors, targets: list[ApproachTarget], feed: float = 0.0
) -> PoseErrors:
    """Position (m) and axis angle (rad) errors of the actual tip when `used` (nominal or
    calibrated) solves the IK of each target; an unreachable target is skipped."""
    nominal = used.calibrated(None)
    position, angle = [], []
    for target in targets:
        try:
            q = inverse_kinematics(target, used, None, True, feed)
        except IKError:
            continue
        pose = actual_forward_kinematics(q, nominal, actual, feed)
        axis = np.asarray(target.approach, float)
        axis = axis / np.linalg.norm(axis)
        position.append(float(np.linalg.norm(pose[:3, 3] - np.asarray(target.position, float))))
        angle.append(float(math.acos(min(1.0, float(pose[:3, 2] @ axis)))))
    return PoseErrors(np.array(position), np.array(angle))


#: Targets over the workspace on which `calibrate_machine` measures before and after.
EVALUATION_TARGETS = 200


@dataclass(frozen=True)
class CalibrationReport:
    """A simulated machine's campaign and its effect (`quirobot calibrate`)."""

    actual: GeometricErrors  # the simulated machine's errors (the truth the campaign does not see)
    campaign: CampaignResult
    before: PoseErrors  # the nominal model on that machine
    after: PoseErrors  # the calibrated model on that machine
    tracker: str


def calibrate_machine(
    model: KinematicModel,
    tolerances: GeometricTolerances,
    settings: CalibrationParameters,
    tracker: str,
    seed: int,
    targets: int = EVALUATION_TARGETS,
) -> CalibrationReport:
    """Draw a machine from the tolerances (seed), run a campaign with `tracker` ("optical" or
    "laser") on it and measure the nominal and the calibrated model on `targets` targets."""
    rng = np.random.default_rng(seed)
    actual = tolerances.sample(rng)
    campaign = run_campaign(model, actual, tolerances, settings, settings.tracker_noise(tracker), rng)
    chosen = draw_targets(model, targets, rng)
    return CalibrationReport(
        actual,
        campaign,
        evaluate(model, actual, chosen),
        evaluate(model.calibrated(campaign.identified), actual, chosen),
        tracker,
    )
