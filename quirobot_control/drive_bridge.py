"""The drive side of the topic bridge to ros2_control (ROS-free core of `drive_node`).

topic_based_ros2_control/TopicBasedSystem publishes the controllers' commands as a
sensor_msgs/JointState (names, position, velocity) and reads the robot's state back the same
way. `DriveBridge` receives those commands (`command`) and, once per control period (`step`),
runs `QuirobotHardware` (safety layer, one PID per joint) on the drives and returns the joint
state to publish. The drives are the simulated brushless drives on the MuJoCo plant until the
CANopen drives replace them behind the same `Drive` interface.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from quirobot_control.control_config import ControlConfig
from quirobot_control.drive import drive_for_joint
from quirobot_control.hardware import CallbackReturn, QuirobotHardware, hardware_info_from_urdf
from quirobot_control.simulation import MujocoPlant, gravity_model
from quirobot_control.trajectory import TRAJECTORY_JOINTS, JointLimits
from quirobot_description.parameters import RobotParameters
from quirobot_description.urdf import robot_description


class BridgeError(ValueError):
    """A malformed command message (unknown joint, mismatched lengths)."""


@dataclass(frozen=True)
class JointStateSample:
    time: float  # s since the bridge started
    names: tuple[str, ...]
    position: list[float]
    velocity: list[float]
    effort: list[float]
    stop_reason: str | None


class DriveBridge:
    """Commands in, joint states out, at the control rate (see the module docstring)."""

    def __init__(
        self, params: RobotParameters, control: ControlConfig, initial: Sequence[float] | None = None
    ):
        self.params = params
        self.control = control
        self.dt = control.dt
        self.time = 0.0
        self.drives = {name: drive_for_joint(params, name) for name in TRAJECTORY_JOINTS}
        armature = np.array([d.reflected_inertia for d in self.drives.values()])
        self.substeps = control.physics_substeps
        self.plant = MujocoPlant(params, armature, self.dt / self.substeps)
        limits = JointLimits.from_parameters(params)
        if initial is not None:
            q0 = np.array(initial, dtype=float)
        else:  # mid-range, the drill retracted to its soft limit
            q0 = 0.5 * (limits.soft_lower + limits.soft_upper)
            q0[-1] = limits.soft_lower[-1]
        limits.check_position(q0, "drive bridge: initial pose")
        self.plant.reset(q0)
        for j, drive in enumerate(self.drives.values()):
            drive.advance(0.0, q0[j], 0.0)
        self.hardware = QuirobotHardware(
            params, control, lambda name: self.drives[name], gravity=gravity_model(params)
        )
        info = hardware_info_from_urdf(robot_description("drill", "real"))
        for step in (
            lambda: self.hardware.on_init(info),
            self.hardware.on_configure,
            self.hardware.on_activate,
        ):
            if step() is not CallbackReturn.SUCCESS:
                raise BridgeError(f"hardware start-up failed: {self.hardware.stop_reason}")
        self._efforts = np.zeros(len(TRAJECTORY_JOINTS))

    def command(
        self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float] = ()
    ) -> None:
        """A JointState command: position (and optionally velocity) per named joint."""
        if len(position) != len(names) or (velocity and len(velocity) != len(names)):
            raise BridgeError(
                f"command has {len(names)} names, {len(position)} positions and {len(velocity)} velocities"
            )
        for k, name in enumerate(names):
            if name not in TRAJECTORY_JOINTS:
                raise BridgeError(f"command for unknown joint {name!r}")
            self.hardware.set_command(name, "position", position[k])
            self.hardware.set_command(name, "velocity", velocity[k] if velocity else 0.0)
        self.hardware.command_received(self.time)

    def step(self) -> JointStateSample:
        """One control period: read, write (PID, safety), physics; the state at its end."""
        plant, hw = self.plant, self.hardware
        drives = list(self.drives.values())
        q, v = plant.position, plant.velocity
        for j, drive in enumerate(drives):
            drive.advance(0.0, q[j], v[j])
        hw.read(self.time, self.dt)
        hw.write(self.time, self.dt)
        h = self.dt / self.substeps
        for _ in range(self.substeps):
            q, v = plant.position, plant.velocity
            for j, drive in enumerate(drives):
                self._efforts[j] = drive.advance(h, q[j], v[j])
            plant.step(self._efforts)
        self.time += self.dt
        return JointStateSample(
            time=self.time,
            names=TRAJECTORY_JOINTS,
            position=[hw.state(n, "position") for n in TRAJECTORY_JOINTS],
            velocity=[hw.state(n, "velocity") for n in TRAJECTORY_JOINTS],
            effort=[hw.state(n, "effort") for n in TRAJECTORY_JOINTS],
            stop_reason=hw.stop_reason,
        )


def finite(values: Sequence[float]) -> bool:
    return all(math.isfinite(v) for v in values)
