"""Single-joint closed loop (the report's ch.7 test bench): PID -> simulated drive -> joint inertia.

The joint is a rigid inertia M_eff (the control configuration's effective inertia: link side
plus reflected rotor) with its viscous friction, driven by the joint's `SimulatedDrive` (current
loop, motor, transmission with efficiency, encoder) and integrated with a fine time step. The
PID runs at the control rate with the configured gains. A step command either goes straight to
the PID (`profile=False`, the report's raw step) or through the drive's profile generator
(`profile=True`: a time-optimal jerk-limited ruckig profile at the joint's limits, with velocity
and inertia feed-forward, as CiA 402 profile-position mode does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from quirobot_control.axes.limits import JointLimits
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.pid import PID
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.planning.trajectory import rest_to_rest_profile
from quirobot_description.parameters import RobotParameters


@dataclass(frozen=True)
class StepResponse:
    time: np.ndarray  # (N,) s, control instants
    position: np.ndarray  # (N,) true joint position, m or rad
    reference: np.ndarray  # (N,) position reference given to the PID
    current: np.ndarray  # (N,) current command, A
    step: float  # commanded step, m or rad
    settling_time: float  # s until the position stays within 2 % of the step around the target
    overshoot: float  # largest excursion past the target, m or rad (>= 0)
    profile_duration: float  # s, duration of the reference profile (0 for a raw step)


def simulate_step(
    params: RobotParameters,
    control: ControlConfig,
    joint: str,
    step: float,
    *,
    duration: float,
    profile: bool = True,
    disturbance: float = 0.0,
    disturbance_time: float = 0.0,
    substeps: int = 20,
) -> StepResponse:
    """Step of `step` (m or rad) from 0 at t = 0; optional constant `disturbance` force/torque
    (N or N*m, opposing positive motion) from `disturbance_time` s."""
    settings = control.joint(joint)
    dt = control.dt
    drive = drive_for_joint(params, joint)
    inertia = settings.effective_inertia
    damping = params.axis(joint).damping
    current_gain = drive.motor.torque_constant * drive.transmission.ratio * drive.efficiency
    count = int(round(duration / dt)) + 1
    if profile:
        limits = JointLimits.from_parameters(params, (joint,))
        p, v, a = rest_to_rest_profile(
            np.array([0.0]),
            np.array([step]),
            limits.velocity,
            limits.acceleration,
            limits.jerk,
            dt,
        )
        profile_duration = (len(p) - 1) * dt
        reference = np.full(count, step)
        velocity_ref = np.zeros(count)
        acceleration_ref = np.zeros(count)
        n = min(len(p), count)
        reference[:n], velocity_ref[:n], acceleration_ref[:n] = p[:n, 0], v[:n, 0], a[:n, 0]
    else:
        profile_duration = 0.0
        reference = np.full(count, step)
        velocity_ref = np.zeros(count)
        acceleration_ref = np.zeros(count)
    acceleration_mid = 0.5 * (acceleration_ref + np.append(acceleration_ref[1:], acceleration_ref[-1]))
    pid = PID(settings.gains, dt)
    pid.reset(0.0)
    drive.advance(0.0, 0.0, 0.0)
    drive.enable()
    x = v = 0.0
    h = dt / substeps
    position = np.zeros(count)
    current = np.zeros(count)
    for k in range(count):
        t = k * dt
        drive.advance(0.0, x, v)  # encoder sampled at the control instant
        position[k] = x
        feedforward = 0.0
        if profile:
            feedforward = (inertia * acceleration_mid[k] + damping * velocity_ref[k]) / current_gain
        current[k] = pid.update(reference[k], drive.feedback().position, velocity_ref[k], feedforward)
        drive.command_current(current[k])
        load = disturbance if t >= disturbance_time else 0.0
        for _ in range(substeps):
            effort = drive.advance(h, x, v)
            v += h * (effort - damping * v - load) / inertia  # semi-implicit Euler
            x += h * v
    time = np.arange(count) * dt
    sign = 1.0 if step >= 0 else -1.0
    overshoot = max(float(np.max(sign * (position - step))), 0.0)
    outside = np.nonzero(np.abs(position - step) > 0.02 * abs(step))[0] if step else np.array([], dtype=int)
    settling = float(time[outside[-1] + 1]) if outside.size and outside[-1] + 1 < count else 0.0
    if outside.size and outside[-1] + 1 >= count:
        settling = float("inf")
    return StepResponse(
        time=time,
        position=position,
        reference=reference,
        current=current,
        step=step,
        settling_time=settling,
        overshoot=overshoot,
        profile_duration=profile_duration,
    )
