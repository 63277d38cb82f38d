"""The drive side of the topic bridge to ros2_control (ROS-free core of `drive_node`).

topic_based_ros2_control/TopicBasedSystem publishes the controllers' commands as a
sensor_msgs/JointState (names, position, velocity) and reads the robot's state back the same
way. `DriveBridge` receives those commands (`command`) and, once per control period (`step`),
runs `QuirobotHardware` (safety layer, one PID per joint) on the drives of a `DriveBackend` and
returns the joint state to publish:

    backend.before_read()   feedback ready (plant sensed / one SYNC per CAN bus, answered)
    hardware.read(), hardware.write()
    backend.after_write()   the period elapses (physics / nothing: the drives act on the bus)

Backends (`open_backend`, DRIVE_BACKENDS): "simulated", SimulatedDrives on the MuJoCo plant
(drive_backend.SimulatedBackend), and "canopen", the CiA 402 servo drives on the CAN buses of
the parameter file (canopen_backend.CanopenBackend). `close()` stops every drive and releases
the backend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from quirobot_control.canopen_backend import CanBusConfig, CanopenBackend
from quirobot_control.control_config import ControlConfig
from quirobot_control.drive import Drive
from quirobot_control.drive_backend import DriveBackend, DriveStartupError, SimulatedBackend
from quirobot_control.hardware import CallbackReturn, QuirobotHardware, ReturnType, hardware_info_from_urdf
from quirobot_control.simulation import gravity_model
from quirobot_control.trajectory import TRAJECTORY_JOINTS
from quirobot_description.parameters import RobotParameters
from quirobot_description.urdf import robot_description

#: Names of the drive backends, for the node's `drive_backend` parameter.
DRIVE_BACKENDS = ("simulated", "canopen")

__all__ = [
    "DRIVE_BACKENDS",
    "BridgeError",
    "DriveBridge",
    "DriveStartupError",
    "JointStateSample",
    "open_backend",
]


class BridgeError(ValueError):
    """A request the bridge refuses: a malformed command (unknown joint, mismatched lengths), or
    a step after close()."""


@dataclass(frozen=True)
class JointStateSample:
    time: float  # s since the bridge started
    names: tuple[str, ...]
    position: list[float]
    velocity: list[float]
    effort: list[float]
    stop_reason: str | None


def open_backend(
    name: str,
    params: RobotParameters,
    control: ControlConfig,
    *,
    can: CanBusConfig | None = None,
    initial: Sequence[float] | None = None,
) -> DriveBackend:
    """The backend called `name` (DRIVE_BACKENDS).

    simulated: `initial` (6,) start pose, m and rad (default mid-range); canopen: `can` (the
    python-can interface and channels, default socketcan on the parameter file's bus names).
    """
    if name == "simulated":
        return SimulatedBackend(params, control, initial)
    if name == "canopen":
        if initial is not None:
            raise ValueError("an initial pose is for the simulated backend: real drives start where they are")
        return CanopenBackend(params, control, can)
    raise ValueError(f"drive backend must be one of {', '.join(DRIVE_BACKENDS)}, got {name!r}")


class DriveBridge:
    """Commands in, joint states out, at the control rate (see the module docstring).

    Construction brings the hardware component up on the backend's drives (the drives are
    enabled, commands start at the measured positions); if that fails the backend is closed and
    DriveStartupError says why. The bridge owns the backend: close() it (or use `with`).
    """

    def __init__(self, params: RobotParameters, control: ControlConfig, backend: DriveBackend):
        self.params = params
        self.control = control
        self.dt = control.dt
        self.time = 0.0
        self.backend = backend
        self._closed = False
        try:
            self.hardware = self._start_hardware()
        except BaseException:
            self.close()
            raise

    def _start_hardware(self) -> QuirobotHardware:
        missing = [name for name in TRAJECTORY_JOINTS if name not in self.backend.drives]
        if missing:
            raise DriveStartupError(f"the drive backend has no drive for {', '.join(missing)}")
        drives = self.backend.drives
        hardware = QuirobotHardware(
            self.params, self.control, lambda name: drives[name], gravity=gravity_model(self.params)
        )
        info = hardware_info_from_urdf(robot_description("drill", "real"))
        for start_step in (lambda: hardware.on_init(info), hardware.on_configure, hardware.on_activate):
            if start_step() is not CallbackReturn.SUCCESS:
                raise DriveStartupError(f"hardware start-up failed: {hardware.stop_reason}")
        # Prime the drives with the holding currents (PID integrators pre-loaded with gravity at
        # activation): on a bus the command written in a period acts from the next SYNC, and the
        # first period must not run at the zero torque the drives were enabled with.
        if hardware.write(self.time, self.dt) is not ReturnType.OK:
            raise DriveStartupError(f"hardware start-up failed: {hardware.stop_reason}")
        return hardware

    @property
    def drives(self) -> dict[str, Drive]:
        """The backend's drives, by joint name."""
        return self.backend.drives

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
        """One control period: feedback, read, write (PID, safety), the period; the state at its end."""
        if self._closed:
            raise BridgeError("the drive bridge is closed")
        hw = self.hardware
        self.backend.before_read()
        hw.read(self.time, self.dt)
        hw.write(self.time, self.dt)
        self.backend.after_write()
        self.time += self.dt
        return JointStateSample(
            time=self.time,
            names=TRAJECTORY_JOINTS,
            position=[hw.state(n, "position") for n in TRAJECTORY_JOINTS],
            velocity=[hw.state(n, "velocity") for n in TRAJECTORY_JOINTS],
            effort=[hw.state(n, "effort") for n in TRAJECTORY_JOINTS],
            stop_reason=hw.stop_reason,
        )

    def close(self) -> list[str]:
        """Stop every drive and release the backend (idempotent); the problems met, as text."""
        if self._closed:
            return []
        self._closed = True
        return self.backend.close()

    def __enter__(self) -> DriveBridge:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def finite(values: Sequence[float]) -> bool:
    return all(math.isfinite(v) for v in values)
