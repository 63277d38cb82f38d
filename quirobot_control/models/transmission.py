"""Motor-to-joint transmissions: ball screws (prismatic joints) and gearboxes (revolute joints).

Convention (report ch.6): motor angle = ratio * joint coordinate, so `ratio` is rad/m for a
screw and dimensionless for a gearbox; motor torque = joint effort / ratio before losses.
Efficiency eta in (0, 1] models the friction losses: when the motor drives the load (power flows
motor -> joint), joint effort = eta * ratio * motor torque; when the load back-drives the motor,
joint effort = ratio * motor torque / eta. The rotor inertia J reflects to the joint as the
armature J * ratio^2 (kg*m^2, or kg for a screw).
"""

from __future__ import annotations

import numpy as np

from quirobot_description.parameters import TransmissionParameters


def motor_position(
    transmission: TransmissionParameters, joint_position: float | np.ndarray
) -> float | np.ndarray:
    """Motor shaft angle (rad) for a joint position (m or rad)."""
    return transmission.ratio * joint_position


def motor_speed(
    transmission: TransmissionParameters, joint_velocity: float | np.ndarray
) -> float | np.ndarray:
    """Motor shaft speed (rad/s) for a joint velocity (m/s or rad/s)."""
    return transmission.ratio * joint_velocity


def joint_effort(
    transmission: TransmissionParameters, motor_torque: float | np.ndarray, *, efficiency: bool = True
) -> float | np.ndarray:
    """Joint force (N) or torque (N*m) delivered for a motor torque (N*m) while driving the load.

    With `efficiency` the losses reduce it: eta * ratio * tau_motor (the drive model's convention).
    """
    eta = transmission.efficiency if efficiency else 1.0
    return eta * transmission.ratio * motor_torque


def motor_torque(
    transmission: TransmissionParameters,
    joint_effort: float | np.ndarray,
    joint_velocity: float | np.ndarray | None = None,
    *,
    efficiency: bool = True,
) -> float | np.ndarray:
    """Motor torque (N*m) needed for a joint effort (N or N*m), losses by power-flow direction.

    Driving (effort * velocity >= 0, or velocity unknown): tau_motor = effort / (ratio * eta);
    back-driven (effort * velocity < 0): tau_motor = effort * eta / ratio. Shapes broadcast.
    """
    effort = np.asarray(joint_effort, dtype=float)
    eta = transmission.efficiency if efficiency else 1.0
    if joint_velocity is None:
        driving = np.ones_like(effort, dtype=bool)
    else:
        driving = effort * np.asarray(joint_velocity, dtype=float) >= 0.0
    result = np.where(driving, effort / (transmission.ratio * eta), effort * eta / transmission.ratio)
    return float(result) if result.ndim == 0 else result


def reflected_inertia(transmission: TransmissionParameters, rotor_inertia: float) -> float:
    """Rotor inertia (kg*m^2) seen at the joint: J * ratio^2 (kg*m^2 for a gearbox, kg for a screw)."""
    return rotor_inertia * transmission.ratio**2
