"""The drive side of the topic bridge to ros2_control (ROS-free core of `drive_node`).

The robot description's <ros2_control> block (hardware:=real) loads
joint_state_topic_hardware_interface/JointStateTopicSystem in the controller manager. On every
controller-manager cycle its write() publishes the command interfaces of every joint of the block
as one sensor_msgs/JointState (names, position, velocity), provided the summed
|position state - position command| exceeds its `trigger_joint_command_threshold` (the block
sets -1: always, so that a robot holding still keeps receiving commands and the watchdog below
sees a live stream); its read() takes the robot's state back from the latest JointState we
publish. `DriveBridge` receives those commands (`command`) and, once per control period
(`step`), runs `QuirobotHardware` (safety layer, one PID per joint) on the drives of a
`DriveBackend` and returns the joint state to publish:

    backend.before_read()   feedback ready (plant sensed / one SYNC per CAN bus, answered)
    hardware.read(), hardware.write()
    backend.after_write()   the period elapses (physics / nothing: the drives act on the bus)

The joints, their interfaces and so the drives come from the launched robot description
(`open_bridge`: hardware info from its <ros2_control> block; tool:=arthroscope has no drill_feed).

Start-up handshake. Construction enables the drives and holds the measured positions (commands
at the measured positions, PID integrators preloaded with the gravity load). The plugin
publishes from its first cycle on, before any controller has written a command interface, with
the interfaces' initial values: NaN in joint_state_topic_hardware_interface (a command handle
without initial_value), 0.0 or the state's initial_value in the older topic_based_ros2_control.
Those are not commands. The first command accepted is the first message whose positions and
velocities are all finite and whose positions are each within the joint's following-error
limit of the measured position: what a controller writes when it takes over
(joint_trajectory_controller commands the current state on activation). Before it, messages are
ignored (a finite one far from the measured pose is noted once in `events`) and the drives hold.
The hardware's command watchdog (loop.safety.SafetyMonitor) is armed at activation, here at
construction: it gives the first command control.yaml's safety.watchdog_startup_timeout (a
controller manager and its spawners take seconds) and stops every drive after it ("no command
since activation"); the handshake decides what counts as that first command. From it on every
message is a command: a non-finite value stops every drive with a reason naming the joint, the
interface and the value, and the running stream's timeouts (watchdog_timeout, hold;
watchdog_stop_timeout, stop) apply.

Time: `command` and `step` take `now`, the adapter's clock in s (drive_node passes
time.monotonic()): the watchdog measures the age of the last command on it, and on the control
periods counted since, whichever is larger, so neither a late loop nor a frozen clock hides a
stale command stream; a non-finite clock stops every drive.

Backends (`open_backend`, DRIVE_BACKENDS): "simulated", SimulatedDrives on the MuJoCo plant
(simulation.simulated_backend.SimulatedBackend, imported only when asked for: the real robot's path loads
neither MuJoCo nor the planner), and "canopen", the CiA 402 servo drives on the CAN buses of the
parameter file (bridge.canopen_backend.CanopenBackend). `close()` stops every drive and releases the
backend.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from quirobot_control.bridge.backend import DriveBackend, DriveStartupError
from quirobot_control.bridge.canopen_backend import CanBusConfig, CanopenBackend
from quirobot_control.drives.interface import Drive
from quirobot_control.loop.control_config import ControlConfig
from quirobot_control.loop.hardware import (
    CallbackReturn,
    HardwareInfo,
    QuirobotHardware,
    ReturnType,
    hardware_info_from_urdf,
)
from quirobot_control.models.dynamics import gravity_model
from quirobot_description.parameters import AXES, RobotParameters

#: Names of the drive backends, for the node's `drive_backend` parameter.
DRIVE_BACKENDS = ("simulated", "canopen")

__all__ = [
    "DRIVE_BACKENDS",
    "BridgeError",
    "DriveBridge",
    "DriveStartupError",
    "JointStateSample",
    "open_backend",
    "open_bridge",
]


class BridgeError(ValueError):
    """A request the bridge refuses: a malformed command (unknown joint, mismatched lengths), or
    a step after close()."""


@dataclass(frozen=True)
class JointStateSample:
    time: float  # s of control periods run since the bridge started
    names: tuple[str, ...]
    position: list[float]
    velocity: list[float]
    effort: list[float]
    stop_reason: str | None


def open_backend(
    name: str,
    params: RobotParameters,
    control: ControlConfig,
    joints: Sequence[str] = AXES,
    *,
    can: CanBusConfig | None = None,
    initial: Sequence[float] | None = None,
) -> DriveBackend:
    """The backend called `name` (DRIVE_BACKENDS), with a drive for each of `joints`.

    simulated: `initial` (6,) start pose of the plant, AXES order, m and rad
    (default mid-range); canopen: `can` (the python-can interface and channels, default
    socketcan on the parameter file's bus names).
    """
    if name == "simulated":
        from quirobot_control.simulation.simulated_backend import SimulatedBackend  # MuJoCo: simulation only

        return SimulatedBackend(params, control, initial, joints=joints)
    if name == "canopen":
        if initial is not None:
            raise ValueError("an initial pose is for the simulated backend: real drives start where they are")
        return CanopenBackend(params, control, can, joints=joints)
    raise ValueError(f"drive backend must be one of {', '.join(DRIVE_BACKENDS)}, got {name!r}")


def open_bridge(
    backend: str,
    params: RobotParameters,
    control: ControlConfig,
    robot_description: str,
    *,
    now: float,
    can: CanBusConfig | None = None,
    initial: Sequence[float] | None = None,
) -> DriveBridge:
    """The bridge for the <ros2_control> block of `robot_description` (URDF XML): its joints'
    drives from the backend called `backend` (see open_backend), the hardware component on them.
    `now`: the adapter's clock, s. Raises HardwareError (a malformed description),
    DriveStartupError, ValueError."""
    info = hardware_info_from_urdf(robot_description)
    drives = open_backend(backend, params, control, [j.name for j in info.joints], can=can, initial=initial)
    return DriveBridge(params, control, drives, info, now=now)


class DriveBridge:
    """Commands in, joint states out, at the control rate (see the module docstring).

    Construction brings the hardware component of `info` (the robot description's <ros2_control>
    block) up on the backend's drives (the drives are enabled, commands start at the measured
    positions); if that fails the backend is closed and DriveStartupError says why. The bridge
    owns the backend: close() it (or use `with`).
    """

    def __init__(
        self,
        params: RobotParameters,
        control: ControlConfig,
        backend: DriveBackend,
        info: HardwareInfo,
        *,
        now: float,
    ):
        self.params = params
        self.control = control
        self.dt = control.dt
        self.time = 0.0
        self.backend = backend
        self.info = info
        self.names = tuple(joint.name for joint in info.joints)
        self.started = False  # the start-up handshake is done (see the module docstring)
        self.events: list[str] = []  # start-up handshake notes (the safety layer's are hardware.events)
        self._noted: set[str] = set()
        self._closed = False
        try:
            self.hardware = self._start_hardware(now)
        except BaseException:
            self.close()
            raise

    def _start_hardware(self, now: float) -> QuirobotHardware:
        missing = [name for name in self.names if name not in self.backend.drives]
        if missing:
            raise DriveStartupError(f"the drive backend has no drive for {', '.join(missing)}")
        drives = self.backend.drives
        hardware = QuirobotHardware(
            self.params, self.control, lambda name: drives[name], gravity=self._holding_efforts()
        )
        for start_step in (lambda: hardware.on_init(self.info), hardware.on_configure, hardware.on_activate):
            if start_step() is not CallbackReturn.SUCCESS:
                raise DriveStartupError(f"hardware start-up failed: {hardware.stop_reason}")
        # Prime the drives with the holding currents (PID integrators pre-loaded with gravity at
        # activation): on a bus the command written in a period acts from the next SYNC, and the
        # first period must not run at the zero torque the drives were enabled with.
        if hardware.write(now, self.dt) is not ReturnType.OK:
            raise DriveStartupError(f"hardware start-up failed: {hardware.stop_reason}")
        return hardware

    def _holding_efforts(self) -> Callable[[np.ndarray], np.ndarray]:
        """q (n,) of this bridge's joints -> efforts (n,) holding them against gravity (the
        robot model's gravity_model; the feed position does not enter the arm's gravity)."""
        model = gravity_model(self.params)
        index = [AXES.index(name) for name in self.names]

        def holding(q: np.ndarray) -> np.ndarray:
            full = np.zeros(len(AXES))
            full[index] = q
            return model(full)[index]

        return holding

    @property
    def drives(self) -> dict[str, Drive]:
        """The backend's drives, by joint name."""
        return self.backend.drives

    def command(
        self,
        names: Sequence[str],
        position: Sequence[float],
        velocity: Sequence[float] = (),
        *,
        now: float,
    ) -> None:
        """A JointState command: position (and optionally velocity) per named joint, received at
        `now` (s, the adapter's clock). Before the start-up handshake it may be ignored (see the
        module docstring)."""
        if len(position) != len(names) or (velocity and len(velocity) != len(names)):
            raise BridgeError(
                f"command has {len(names)} names, {len(position)} positions and {len(velocity)} velocities"
            )
        for name in names:
            if name not in self.names:
                raise BridgeError(
                    f"command for unknown joint {name!r}; the joints are {', '.join(self.names)}"
                )
        if not self.started and not self._takes_over(names, position, velocity):
            return
        for k, name in enumerate(names):
            self.hardware.set_command(name, "position", position[k])
            self.hardware.set_command(name, "velocity", velocity[k] if velocity else 0.0)
        self.hardware.command_received(now)

    def _takes_over(self, names: Sequence[str], position: Sequence[float], velocity: Sequence[float]) -> bool:
        """The start-up handshake: is this the first command a controller wrote?"""
        if not (finite(position) and finite(velocity)):
            return False
        for name, q in zip(names, position, strict=True):
            measured = self.hardware.state(name, "position")
            distance = abs(q - measured)
            if distance > self.control.joint(name).following_error:
                if name not in self._noted:
                    self._noted.add(name)
                    self.events.append(
                        f"start-up: ignored a command of {name} at {q:.6g}, {distance:.3g} from its measured "
                        f"{measured:.6g} (a controller taking over commands the measured position)"
                    )
                return False
        self.started = True
        self.events.append("start-up: first controller command accepted, command watchdog armed")
        return True

    def step(self, now: float) -> JointStateSample:
        """One control period at `now` (s, the adapter's clock): feedback, read, write (PID,
        safety), the period; the state at its end."""
        if self._closed:
            raise BridgeError("the drive bridge is closed")
        hw = self.hardware
        self.backend.before_read()
        hw.read(now, self.dt)
        hw.write(now, self.dt)
        self.backend.after_write()
        self.time += self.dt
        return JointStateSample(
            time=self.time,
            names=self.names,
            position=[hw.state(n, "position") for n in self.names],
            velocity=[hw.state(n, "velocity") for n in self.names],
            effort=[hw.state(n, "effort") for n in self.names],
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
