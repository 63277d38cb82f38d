"""Servo sizing (report ch.6, done right): motor-side torque and speed each joint needs.

The report's method: every joint moves at once on a trapezoidal velocity profile (acceleration,
cruise, braking: params.sizing times; cruise speed params.joints[i].velocity, 1 m/s and 10 rpm),
inverse dynamics gives the joint efforts, the transmission ratio turns them into motor torques:
peak (acceleration phase) and nominal (cruise phase), with safety factor 1.5, at the pose q = 0.

Beyond the report:

* the worst pose: the same evaluation at `params.sizing.search_poses` quasi-random (Halton)
  poses over the joint limits, plus q = 0, taking each joint's worst case;
* both directions of every joint (all 32 sign combinations), since gravity helps one way and
  opposes the other;
* the RMS motor torque over a duty cycle (move out, hold dwell_time, move back, hold), the
  thermal requirement to compare with the continuous rating;
* transmission efficiency by power-flow direction (`transmission.motor_torque`) and the rotor
  inertia reflected through the transmission (physical model only);
* the speed check against the bus voltage: at each operating point the motor must reach its speed
  while delivering 1.5x its torque, omega <= (V_bus*headroom - R*tau/K_T)/K_V, and stay under its
  mechanical rating.

Each pose is held fixed while its velocities and accelerations sweep the profile (as the report
evaluates q = 0). Inverse dynamics is linear in qdd and quadratic in qd, so along a phase with
qd = lam * s*v the effort is exactly G(q) + H(q) qdd + lam^2 C(q, s*v) + friction: one CRBA, one
gravity and 16 velocity-term evaluations per pose give every direction. Peak, nominal and RMS
torques are exact: the peak from the phase ends and the quadratic's vertex, the integral of
tau_motor^2 in closed form, split where the effort changes sign (the efficiency switches there).
Holding torque between moves (no power flow) is counted as driving: |G| / (ratio * efficiency).

`--model report` reproduces the report as the report computed it: its model (m5 = 7 kg lumped,
its inertia formula, g = 9.8, no efficiency, no rotor inertia) at q = 0 only, every joint driven
in its positive direction at once (REPORT_DIRECTION, all +1, the report's joint coordinates are
ours): no pose search, no direction search (those belong to the physical model). Its gravity
torques have the sign of the report's own dynamics code (REPORT_GRAVITY_SIGN): at q = 0 that code
gives +117.6 N on joint 3 and +6.86 N*m on joint 5 where the physics (our model, pinocchio) gives
-117.6 and -6.86 (the ram's and the drill's weight pull d3 and theta5 positive). So in the report's
joint 3 nominal entry, 1.2385 N*m = (12*9.8 + 0.06*1)/95, gravity and friction add while d3
grows; joint 5's entries carry the same sign. (Flipping joint 3's direction instead, as before,
fixed that one entry but also turned the wrist's coupling on joint 3 and left joint 5's gravity
the physical way round.) The RMS duty cycle moves out in that direction and back.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from quirobot_control.models.dynamics import Dynamics
from quirobot_control.models.rigid_body import MODEL_NAMES, build_model, reflected_rotor_inertia
from quirobot_description.parameters import RobotParameters

#: Samples per acceleration or braking phase for the voltage check and the plot (peak, nominal and
#: RMS torques are computed exactly from the phase polynomials).
PHASE_SAMPLES = 21
#: The report's one direction (ch.6: every joint driven "positive" at once), as joint velocity signs
#: in our frames: its joint coordinates are ours (same DH table, same zero, same sign).
REPORT_DIRECTION = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
#: The sign of gravity's torque in the report's dynamics code relative to the physics: -1, its code
#: holds q = 0 with +117.6 N on joint 3 and +6.86 N*m on joint 5 (issue 19 item 15), the physics
#: with -117.6 and -6.86 (the weight pulls d3 and theta5 positive).
REPORT_GRAVITY_SIGN = -1.0
#: Poses evaluated per vectorized batch (and per progress-bar step).
CHUNK = 256


class SizingError(ValueError):
    """A sizing request that cannot be evaluated (unknown model, bad sample count)."""


@dataclass(frozen=True)
class JointSizing:
    """One joint's motor-side requirement and its check against the motor. N*m and rad/s."""

    name: str
    motor: str
    peak_torque: float  # max |tau_motor| over the profile, worst pose and direction
    nominal_torque: float  # max |tau_motor| while cruising
    rms_torque: float  # max RMS over the duty cycle
    peak_speed: float  # |omega_motor| at cruise
    peak_capacity: float  # K_T * I_max
    continuous_capacity: float  # K_T * I_continuous
    speed_ratio: float  # min over operating points of available speed / needed speed (torque x SF)
    margin: float  # min of the capacity ratios - 1: >= 0 passes
    limiting: str  # which check sets the margin
    worst_pose: np.ndarray  # (5,) pose of the peak torque, m and rad
    worst_direction: np.ndarray  # (5,) signs of the joint velocities at the peak

    @property
    def ok(self) -> bool:
        return self.margin >= 0.0

    def as_json(self) -> dict:
        return {
            "name": self.name,
            "peak_torque": self.peak_torque,
            "nominal_torque": self.nominal_torque,
            "rms_torque": self.rms_torque,
            "peak_speed": self.peak_speed,
            "motor": self.motor,
            "ok": self.ok,
            "margin": self.margin,
        }


@dataclass(frozen=True)
class OperatingPoints:
    """The worst (pose, direction) motion of one joint, sampled: |omega| rad/s, |tau| N*m at the motor."""

    speed: np.ndarray  # (T,)
    torque: np.ndarray  # (T,)


@dataclass(frozen=True)
class SizingResult:
    model: str
    safety_factor: float
    poses: int  # poses evaluated
    joints: tuple[JointSizing, ...]
    operating_points: dict[str, OperatingPoints] = field(repr=False)

    def as_json(self) -> dict:
        """{"joints": [{name, peak_torque, nominal_torque, rms_torque, peak_speed, motor, ok, margin}]}."""
        return {"joints": [joint.as_json() for joint in self.joints]}


@dataclass(frozen=True)
class _Profile:
    """Sampled trapezoid of one move for s = +1 (the operating points of the voltage check and plot)."""

    speed_fraction: np.ndarray  # (T,) lam: qd = lam * s * v
    acceleration: np.ndarray  # (T, 5) qdd for s = +1, m/s^2 or rad/s^2
    duration: float  # s, one move


def _profile(params: RobotParameters) -> _Profile:
    sizing = params.sizing
    v = params.velocity_limits
    lam = np.linspace(0.0, 1.0, PHASE_SAMPLES)
    speed = np.concatenate([lam, [1.0], lam[::-1]])
    accel = np.concatenate(
        [
            np.tile(v / sizing.acceleration_time, (PHASE_SAMPLES, 1)),
            np.zeros((1, 5)),
            np.tile(-v / sizing.deceleration_time, (PHASE_SAMPLES, 1)),
        ]
    )
    duration = sizing.acceleration_time + sizing.cruise_time + sizing.deceleration_time
    return _Profile(speed, accel, duration)


def _sign_patterns(dof: int) -> np.ndarray:
    """(2^dof, dof) every combination of +-1; pattern k and 2^dof - 1 - k are opposite."""
    return np.array(list(itertools.product((1.0, -1.0), repeat=dof)))


def search_poses(params: RobotParameters, count: int, seed: int = 0) -> np.ndarray:
    """(count, 5) poses: q = 0 first, then a scrambled Halton sequence over the joint limits."""
    from scipy.stats import qmc

    if count < 1:
        raise SizingError(f"the pose search needs at least 1 pose, got {count}")
    zero = np.zeros((1, 5))
    if count == 1:
        return zero
    unit = qmc.Halton(d=5, scramble=True, seed=seed).random(count - 1)
    return np.vstack([zero, qmc.scale(unit, params.lower_limits, params.upper_limits)])


def _motor_torque(tau: np.ndarray, direction: np.ndarray, drive: np.ndarray, back: np.ndarray) -> np.ndarray:
    """Motor torque for joint effort `tau` moving in `direction` (+-1): tau*drive when the motor drives
    the load (tau*direction >= 0), tau*back when the load back-drives it (see transmission.motor_torque)."""
    return np.where(tau * direction >= 0.0, tau * drive, tau * back)


def _phase_peak(A, B, C, direction, drive, back) -> np.ndarray:
    """max |tau_motor| for lam in (0, 1] of the joint effort A + B*lam + C*lam^2 (exact: ends and vertex)."""
    peak = np.maximum(
        np.abs(_motor_torque(A + B + C, direction, drive, back)),
        np.abs(_motor_torque(A, direction, drive, back)),
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = np.where(C != 0.0, -B / (2.0 * C), 1.0)
    inside = (vertex > 0.0) & (vertex < 1.0)
    vertex = np.where(inside, vertex, 1.0)
    at_vertex = np.abs(_motor_torque(A + B * vertex + C * vertex**2, direction, drive, back))
    return np.maximum(peak, np.where(inside, at_vertex, 0.0))


def _phase_energy(A, B, C, direction, drive, back) -> np.ndarray:
    """Exact integral over lam in [0, 1] of tau_motor^2 for the joint effort A + B*lam + C*lam^2.

    The efficiency factor switches where the effort changes sign: split at the quadratic's roots,
    integrate the quartic (A + B x + C x^2)^2 in closed form on each piece.
    """
    A, B, C = np.broadcast_arrays(A, B, C)
    scale = np.abs(A) + np.abs(B) + np.abs(C)
    quadratic = np.abs(C) > 1e-12 * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        disc = B * B - 4.0 * A * C
        root = np.sqrt(np.maximum(disc, 0.0))
        q = -0.5 * (B + np.copysign(root, B))
        r1 = np.where(quadratic, q / C, -A / B)
        r2 = np.where(quadratic, A / q, np.nan)
        real = ~quadratic | (disc >= 0.0)
        r1 = np.where(real, r1, np.nan)
        r2 = np.where(real, r2, np.nan)
    r1 = np.where(np.isfinite(r1) & (r1 > 0.0) & (r1 < 1.0), r1, 1.0)
    r2 = np.where(np.isfinite(r2) & (r2 > 0.0) & (r2 < 1.0), r2, 1.0)
    breaks = [np.zeros_like(A), np.minimum(r1, r2), np.maximum(r1, r2), np.ones_like(A)]

    def antiderivative(x):
        return (
            A * A * x
            + A * B * x**2
            + (B * B + 2.0 * A * C) * x**3 / 3.0
            + B * C * x**4 / 2.0
            + C * C * x**5 / 5.0
        )

    energy = np.zeros_like(A)
    for low, high in zip(breaks[:-1], breaks[1:], strict=True):
        middle = 0.5 * (low + high)
        factor = np.where((A + B * middle + C * middle**2) * direction >= 0.0, drive, back)
        energy += factor**2 * (antiderivative(high) - antiderivative(low))
    return energy


def size_servos(
    params: RobotParameters,
    model: str = "physical",
    *,
    poses: int | np.ndarray | None = None,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> SizingResult:
    """Run the sizing study; see the module docstring.

    model "physical" searches `poses` poses (a count, default params.sizing.search_poses, or an
    (N, 5) array of poses in m and rad); "report" uses q = 0 only, as the report does.
    `progress` wraps the iterator over pose batches (e.g. tqdm).
    """
    if model not in MODEL_NAMES:
        raise SizingError(f"unknown model {model!r}; choose one of {', '.join(MODEL_NAMES)}")
    report = model == "report"
    rigid = build_model(params, model)
    if not report:
        rigid = rigid.with_armature(reflected_rotor_inertia(params))
    dynamics = Dynamics(rigid)
    if report:
        pose_set = np.zeros((1, 5))
    elif poses is None or np.ndim(poses) == 0:
        pose_set = search_poses(params, params.sizing.search_poses if poses is None else int(poses))
    else:
        pose_set = np.asarray(poses, dtype=float)
        if (
            pose_set.ndim != 2
            or pose_set.shape[1] != 5
            or len(pose_set) == 0
            or not np.all(np.isfinite(pose_set))
        ):
            raise SizingError(f"poses must be a count or a finite (N, 5) array, got shape {pose_set.shape}")

    joints = params.joints
    ratio = np.array([j.transmission.ratio for j in joints])
    efficiency = np.array(
        [params.report_model.transmission_efficiency if report else j.transmission.efficiency for j in joints]
    )
    velocity = params.velocity_limits
    profile = _profile(params)
    # The report: its one direction (pattern 0) and the way back (pattern 1, for the duty cycle's RMS).
    signs = np.array([REPORT_DIRECTION, -REPORT_DIRECTION]) if report else _sign_patterns(5)  # (S, 5)
    considered = 1 if report else len(signs)  # patterns searched for the worst case
    opposite = np.arange(len(signs))[::-1]
    half = len(signs) // 2  # patterns 0..half-1 start with +1; C(q, -x) = C(q, x)
    sizing = params.sizing
    cycle_time = 2.0 * (profile.duration + sizing.dwell_time)
    SF = sizing.safety_factor
    motors = [j.motor for j in joints]
    v_max = params.drive.bus_voltage * params.drive.voltage_headroom
    R = np.array([m.resistance for m in motors])
    K_T = np.array([m.torque_constant for m in motors])
    K_V = np.array([m.back_emf_constant for m in motors])
    drive = 1.0 / (ratio * efficiency)  # motor torque per joint effort while driving the load
    back = efficiency / ratio  # ... while the load back-drives the motor

    best_peak = np.full(5, -1.0)
    best_nominal = np.zeros(5)
    best_rms = np.zeros(5)
    best_speed_ratio = np.full(5, np.inf)
    worst_pose = np.zeros((5, 5))
    worst_sign = np.ones((5, 5))
    worst_points: list[tuple[np.ndarray, np.ndarray] | None] = [None] * 5

    chunks = [pose_set[k : k + CHUNK] for k in range(0, len(pose_set), CHUNK)]
    for q in progress(chunks) if progress is not None else chunks:
        G = dynamics.gravity_torques(q) * (REPORT_GRAVITY_SIGN if report else 1.0)  # (n, 5)
        H = dynamics.mass_matrix(q)  # (n, 5, 5), armature included
        C_half = np.stack(
            [dynamics.velocity_torques(q, np.broadcast_to(s * velocity, q.shape)) for s in signs[:half]],
            axis=1,
        )
        C = np.concatenate([C_half, C_half[:, ::-1]], axis=1)  # (n, S, 5): pattern S-1-k is -pattern k
        # Exact phase polynomials: effort = A + B*lam + C*lam^2 with qd = lam*s*v.
        direction = signs[None]  # (1, S, 5): sign of qd while moving
        B = (rigid.damping * signs * velocity)[None]
        coulomb = rigid.coulomb * signs
        A_acc = (
            G[:, None, :] + np.einsum("nij,sj->nsi", H, signs * velocity / sizing.acceleration_time) + coulomb
        )
        A_dec = (
            G[:, None, :] - np.einsum("nij,sj->nsi", H, signs * velocity / sizing.deceleration_time) + coulomb
        )
        cruise = _motor_torque(G[:, None, :] + B + C + coulomb, direction, drive, back)  # (n, S, 5)
        start = np.maximum(np.abs(A_acc - coulomb), np.abs(A_dec - coulomb)) * drive  # qd = 0: driving
        peak = np.maximum.reduce(
            [
                _phase_peak(A_acc, B, C, direction, drive, back),
                _phase_peak(A_dec, B, C, direction, drive, back),
                np.abs(cruise),
                start,
            ]
        )  # (n, S, 5)
        energy = (
            sizing.acceleration_time * _phase_energy(A_acc, B, C, direction, drive, back)
            + sizing.deceleration_time * _phase_energy(A_dec, B, C, direction, drive, back)
            + sizing.cruise_time * cruise**2
        )  # (n, S, 5): integral of tau_motor^2 over one move
        hold = np.abs(G) * drive  # (n, 5) holding torque, no power flow: conservative
        rms = np.sqrt(
            (energy + energy[:, opposite] + 2.0 * sizing.dwell_time * hold[:, None, :] ** 2) / cycle_time
        )
        # Sampled operating points, for the voltage check and the plot.
        qd = profile.speed_fraction[None, :, None] * (signs * velocity)[:, None, :]  # (S, T, 5)
        qdd = signs[:, None, :] * profile.acceleration[None, :, :]  # (S, T, 5)
        friction = rigid.damping * qd + rigid.coulomb * np.sign(qd)
        tau = (
            G[:, None, None, :]
            + np.einsum("nij,stj->nsti", H, qdd)
            + profile.speed_fraction[None, None, :, None] ** 2 * C[:, :, None, :]
            + friction[None]
        )  # (n, S, T, 5) joint efforts
        magnitude = np.abs(np.where(tau * qd[None] >= 0.0, tau * drive, tau * back))
        omega = np.abs(qd * ratio)  # (S, T, 5), motor speed
        available = (v_max - R * SF * magnitude / K_T) / K_V
        with np.errstate(divide="ignore", invalid="ignore"):
            speed_ratio = np.where(omega[None] > 0.0, available / omega[None], np.inf)
        peak, cruise, rms = peak[:, :considered], cruise[:, :considered], rms[:, :considered]
        speed_ratio = speed_ratio[:, :considered]
        best_nominal = np.maximum(best_nominal, np.abs(cruise).max(axis=(0, 1)))
        best_rms = np.maximum(best_rms, rms.max(axis=(0, 1)))
        best_speed_ratio = np.minimum(best_speed_ratio, speed_ratio.min(axis=(0, 1, 2)))
        for i in range(5):
            flat = int(np.argmax(peak[:, :, i]))
            pose_index, sign_index = divmod(flat, considered)
            if peak[pose_index, sign_index, i] > best_peak[i]:
                best_peak[i] = peak[pose_index, sign_index, i]
                worst_pose[i] = q[pose_index]
                worst_sign[i] = signs[sign_index]
                worst_points[i] = (
                    omega[sign_index, :, i].copy(),
                    magnitude[pose_index, sign_index, :, i].copy(),
                )

    peak_speed = velocity * ratio
    results = []
    points = {}
    for i, joint in enumerate(joints):
        motor = joint.motor
        checks = {
            "peak torque": motor.peak_torque / (SF * best_peak[i]),
            "continuous torque": motor.continuous_torque / (SF * best_rms[i]),
            "speed at the bus voltage": best_speed_ratio[i],
            "rated speed": motor.max_speed / peak_speed[i],
        }
        limiting = min(checks, key=checks.get)
        results.append(
            JointSizing(
                name=joint.name,
                motor=motor.name,
                peak_torque=float(best_peak[i]),
                nominal_torque=float(best_nominal[i]),
                rms_torque=float(best_rms[i]),
                peak_speed=float(peak_speed[i]),
                peak_capacity=motor.peak_torque,
                continuous_capacity=motor.continuous_torque,
                speed_ratio=float(best_speed_ratio[i]),
                margin=float(checks[limiting] - 1.0),
                limiting=limiting,
                worst_pose=worst_pose[i],
                worst_direction=worst_sign[i],
            )
        )
        speed, torque = worst_points[i]
        points[joint.name] = OperatingPoints(speed=speed, torque=torque)
    return SizingResult(
        model=model, safety_factor=SF, poses=len(pose_set), joints=tuple(results), operating_points=points
    )


def torque_speed_envelope(
    params: RobotParameters, motor_name: str, samples: int = 100
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Motor envelope: torque (samples,) N*m from 0 to K_T*I_max, the highest speed (rad/s) at each
    (bus-voltage limit omega = (V_bus*headroom - R*tau/K_T)/K_V, capped at the rated speed), and the
    same limited to the continuous torque (NaN above it)."""
    motor = params.motors[motor_name]
    v_max = params.drive.bus_voltage * params.drive.voltage_headroom
    torque = np.linspace(0.0, motor.peak_torque, samples)
    speed = np.minimum(
        (v_max - motor.resistance * torque / motor.torque_constant) / motor.back_emf_constant, motor.max_speed
    )
    continuous = np.where(torque <= motor.continuous_torque, speed, np.nan)
    return torque, np.maximum(speed, 0.0), continuous


def plot_sizing(params: RobotParameters, result: SizingResult, path) -> None:
    """Write a PNG: per joint, its motor's torque-speed envelope with the required operating points."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    SF = result.safety_factor
    figure, axes = plt.subplots(2, 3, figsize=(15, 9), constrained_layout=True)
    for ax, joint_result in zip(axes.flat, result.joints, strict=False):
        torque, speed, continuous = torque_speed_envelope(params, joint_result.motor)
        ax.fill_betweenx(torque, 0.0, speed, color="tab:blue", alpha=0.12)
        ax.plot(speed, torque, color="tab:blue", lw=2, label="peak envelope (K_T I_max, bus voltage)")
        ax.plot(continuous, torque, color="tab:green", lw=2, label="continuous envelope (K_T I_cont)")
        cont = joint_result.continuous_capacity
        ax.plot([0.0, np.interp(cont, torque, speed)], [cont, cont], color="tab:green", lw=2)
        points = result.operating_points[joint_result.name]
        ax.plot(points.speed, SF * points.torque, ".", color="tab:orange", ms=5, label=f"worst move x {SF:g}")
        ax.plot(
            joint_result.peak_speed,
            SF * joint_result.nominal_torque,
            "s",
            color="tab:red",
            ms=8,
            label=f"nominal (cruise) x {SF:g}",
        )
        ax.plot(
            joint_result.peak_speed,
            SF * joint_result.peak_torque,
            "^",
            color="tab:red",
            ms=9,
            label=f"peak x {SF:g}",
        )
        ax.axhline(
            SF * joint_result.rms_torque,
            color="tab:purple",
            ls="--",
            lw=1.5,
            label=f"RMS over duty cycle x {SF:g}",
        )
        verdict = "OK" if joint_result.ok else "NOT OK"
        ax.set_title(
            f"{joint_result.name} ({joint_result.motor}): {verdict}, margin {joint_result.margin:+.0%}\n"
            f"limited by {joint_result.limiting}",
            fontsize=11,
        )
        ax.set_xlabel("motor speed (rad/s)")
        ax.set_ylabel("motor torque (N*m)")
        ax.set_xlim(0.0, 1.05 * max(speed.max(), joint_result.peak_speed))
        ax.set_ylim(0.0, 1.1 * max(torque.max(), SF * joint_result.peak_torque))
        ax.grid(True, alpha=0.3)
    legend_axis = axes.flat[-1]
    legend_axis.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    legend_axis.legend(handles, labels, loc="center", fontsize=11, frameon=False)
    legend_axis.set_title(
        f"QUIROBOT servo sizing, {result.model} model\n{result.poses} pose(s), both directions, "
        f"safety factor {SF:g}\nbus {params.drive.bus_voltage:g} V x {params.drive.voltage_headroom:g}",
        fontsize=11,
    )
    figure.savefig(path, dpi=110)
    plt.close(figure)
