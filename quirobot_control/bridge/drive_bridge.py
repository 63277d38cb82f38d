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
Those are not commands, nor, after an enable, are the stopped controllers' last commands the plugin
still sends: the first command is a controller taking over at the measured pose (within
control.yaml's takeover_tolerance; bridge.takeover says why). Before it, messages are ignored
(noted in `events`) and the drives hold.
The hardware's command watchdog (safety.motion_monitor.SafetyMonitor) is armed at activation, here at
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

Process safety (bridge.hole_in_force): with a drill feed, each active period after write runs
the drilling monitor of the hole the DrillHole executor decided (`set_drilling_context(goal_id,
context)`), swapped in at a period boundary; a fault stops every drive with the monitor's reason,
a breakthrough stops the feed (safety.feed_stop), and a hole belongs to one goal.

Lifecycle from outside (drive_node's services): `acknowledge_stop(note)` clears a latched stop
through the hardware's acknowledge_stop (the drives' faults reset, logged), `enable(now)` activates
the hardware (drives enabled, commands at the measured positions, watchdog armed) and runs the
start-up handshake again (a controller's first command must be within the following-error limit
of the measured pose), `disable()` deactivates it (inverters off, brakes). While the hardware is
not active `step` publishes the drives' own feedback (a stopped robot's pose stays measured).
`home()` starts the hardware's homing sequence (drives with incremental encoders start
not homed: the hardware refuses activation until every drive is homed), run by `step` one period at
a time while the hardware is inactive. `status()` is the drives' state for /diagnostics and
task_node (DrivesStatus).

The bridge is handed its backend (`open_bridge(backend, ...)`, a bridge.backend.DriveBackend):
the CiA 402 servo drives on the CAN buses of the parameter file (bridge.canopen_backend.
CanopenBackend), or the simulated drives on the MuJoCo plant (simulation.simulated_backend, which
sits above this module: `simulated_bridge` there). It imports neither the simulation nor the
planner. `close()` stops every drive and releases the backend.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from quirobot_control.bridge.backend import DriveBackend, DriveStartupError
from quirobot_control.bridge.bridge_error import BridgeError
from quirobot_control.bridge.drilling_context import HoleSetup, HoleStatus
from quirobot_control.bridge.hole_in_force import HoleInForce
from quirobot_control.bridge.pin_in_force import PinInForce
from quirobot_control.bridge.takeover import Takeover
from quirobot_control.drives.interface import Drive, DriveMode
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_control.hardware.hardware_info import HardwareError, HardwareInfo, hardware_info_from_urdf
from quirobot_control.hardware.homing import HomingError
from quirobot_control.hardware.lifecycle import CallbackReturn, LifecycleState, ReturnType
from quirobot_control.models.dynamics import gravity_model
from quirobot_control.safety.feed_stop import BreakthroughHold
from quirobot_control.safety.stop_codes import StopCode
from quirobot_description.parameters import DrillParameters, RobotParameters, axes_for
from quirobot_description.records import frozen_record

FEED_JOINT = DrillParameters.feed_joint

#: Names of the drive backends, for the node's `drive_backend` parameter.
DRIVE_BACKENDS = ("simulated", "canopen")
#: How drive_node's log line begins once its drives are up.
DRIVES_UP = "drives up"
#: How drive_node's log line begins once a joint state went out to the controller manager's
#: hardware component (its node subscribed): bringup.launch.py starts the controllers' spawner on
#: it. "drives up" was not enough: under load the subscription matched more than 1.3 s later, the
#: trajectory controller activated on the description's initial pose and held it (CI).
STATES_AT_HARDWARE = "joint states reach the hardware"

#: s: commands further apart than this (a stalled stream) give the hold no acceleration (design
#: assumption: ten periods of the slowest controller rate offered, 100 Hz; beyond, the velocity
#: difference is not an acceleration of the plan).
HOLD_ACCELERATION_GAP = 0.1

__all__ = [
    "DRIVE_BACKENDS",
    "DRIVES_UP",
    "STATES_AT_HARDWARE",
    "BridgeError",
    "DriveBridge",
    "DriveStartupError",
    "DriveStatus",
    "DrivesStatus",
    "JointStateSample",
    "open_bridge",
]


@frozen_record  # built at every cycle
class JointStateSample:
    time: float  # s of control periods run since the bridge started
    names: tuple[str, ...]
    position: list[float]
    velocity: list[float]
    effort: list[float]
    stop_reason: str | None


@dataclass(frozen=True)
class DriveStatus:
    """One drive as /diagnostics shows it."""

    name: str
    state: str  # DriveState value: disabled, enabled, quick_stop, fault
    fault: str | None  # the drive's own fault text
    position: float  # m or rad, measured
    current: float  # A, measured
    homed: bool  # the drive knows its absolute position


@dataclass(frozen=True)
class DrivesStatus:
    """The hardware component and its drives (`DriveBridge.status`)."""

    lifecycle: str  # the hardware's LifecycleState value: unconfigured, inactive, active
    stop_reason: str | None  # the latched stop (until acknowledge_stop)
    drives: tuple[DriveStatus, ...]
    #: The far-cortex breakthrough of the hole in force (the drilling monitor's message), None: none
    #: (a monitor fault is the stop_reason). The executor stops holding the feed to its plan on it.
    breakthrough: str | None = None
    stop_code: StopCode = StopCode.NONE  # the latched stop's kind (safety.stop_codes)
    #: That breakthrough came short of the imaged far cortex' exit: the same feed stop and retract,
    #: but no success (safety.drilling_monitor's EARLY_BREAKTHROUGH).
    breakthrough_early: bool = False
    #: The hole in force as the drive side measures it (bridge.drilling_context.HoleStatus: its
    #: goal, the kinematics of the tip's depth, that depth); None: no drill feed.
    hole: HoleStatus | None = None
    #: The start-up handshake is done: the drives take a controller's commands (until the next enable).
    commanded: bool = False
    #: The last hole refused (DriveBridge.hole_refused): (its goal_id, why), None: none.
    hole_refused: tuple[str, str] | None = None

    @property
    def enabled(self) -> bool:
        """The hardware is active: the drives are enabled and take commands."""
        return self.lifecycle == LifecycleState.ACTIVE.value

    @property
    def homed(self) -> bool:
        return all(drive.homed for drive in self.drives)


def open_bridge(
    backend: DriveBackend,
    params: RobotParameters,
    control: ControlConfig,
    robot_description: str,
    *,
    now: float,
    drive_mode: DriveMode | None = None,
    thrust_feedforward: bool = False,
) -> DriveBridge:
    """The bridge for the <ros2_control> block of `robot_description` (URDF XML) on `backend`'s
    drives (a drive for each of the block's joints), the hardware component on them; the bridge
    owns the backend (closed if start-up fails). `drive_mode`, `thrust_feedforward`: see
    DriveBridge. `now`: the adapter's clock, s. Raises HardwareError (a malformed description),
    DriveStartupError."""
    try:
        info = hardware_info_from_urdf(robot_description)
    except BaseException:
        backend.close()
        raise
    return DriveBridge(
        params, control, backend, info, now=now, drive_mode=drive_mode, thrust_feedforward=thrust_feedforward
    )


class DriveBridge(HoleInForce, PinInForce):
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
        drive_mode: DriveMode | None = None,
        thrust_feedforward: bool = False,
    ):
        """`drive_mode`: the hardware's (None: control.yaml's drive_mode.real, CSP).
        `thrust_feedforward`: with a hole that has a bone model, feed the bone's predicted thrust
        at each period's commanded tip forward (J^T f, hardware.thrust_feedforward), the
        realistic plant's compensation."""
        self.params = params
        self.control = control
        self.dt = control.dt
        self.time = 0.0
        self.backend = backend
        self.info = info
        self.names = tuple(joint.name for joint in info.joints)
        # The robot models' joint vectors (gravity_model, ToolGeometry, ThrustFeedForward) are the
        # drill's axes; a joint not driven here is 0 in them. _axes_columns: each joint's column.
        self._model_axes = axes_for("drill")
        self._axes_columns = [self._model_axes.index(name) for name in self.names]
        self.started = False  # the start-up handshake is done (see the module docstring)
        self.events: list[str] = []  # start-up handshake notes (the safety layer's are hardware.events)
        self.homing = False  # the hardware's homing sequence runs in `step` (see home())
        tolerances = {name: control.joint(name).takeover_tolerance for name in self.names}
        self.takeover = Takeover(tolerances, self.events)  # the start-up handshake (bridge.takeover)
        self._closed = False
        # The last command accepted: joint names, positions, velocities, receipt time (s).
        self._command: tuple[tuple[str, ...], list[float], list[float], float] | None = None
        self._command_acceleration: list[float] = []  # per joint of _command (_acceleration_between)
        self.thrust_feedforward = thrust_feedforward
        #: The hole being drilled (set_drilling_context) and the feed's drilling monitor from it
        #: (module docstring); no monitor without a feed (arthroscope).
        self.hole: HoleSetup = self._setup(None)
        #: The hole waiting for the next period boundary (set by the caller's thread, swapped in by
        #: step's; guarded by _hole_lock), None: none waiting.
        self._pending_hole: HoleSetup | None = None
        self._hole_lock = threading.Lock()
        #: The last hole refused (set_drilling_context): (its goal_id, why), None: none. The
        #: executor, which sent it, ends its goal on it (DrivesStatus.hole_refused).
        self.hole_refused: tuple[str, str] | None = None
        #: The feed after a breakthrough of the hole in force (safety.feed_stop), None: none.
        self._breakthrough: BreakthroughHold | None = None
        self.drive_mode = drive_mode
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
            self.params,
            self.control,
            lambda name: drives[name],
            gravity=self._holding_efforts(),
            drive_mode=self.drive_mode,
        )
        for start_step in (lambda: hardware.on_init(self.info), hardware.on_configure):
            if start_step() is not CallbackReturn.SUCCESS:
                raise DriveStartupError(f"hardware start-up failed: {hardware.stop_reason}")
        if hardware.on_activate() is not CallbackReturn.SUCCESS:
            if hardware.stop_reason is None and hardware.unhomed:
                # Motion before homing is refused: the drives stay disabled and braked, waiting
                # for home() and enable().
                self.events.append(f"start-up: {', '.join(hardware.unhomed)} not homed: home, then enable")
                return hardware
            raise DriveStartupError(f"hardware start-up failed: {hardware.stop_reason or hardware.refused}")
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
        index = self._axes_columns
        size = len(self._model_axes)

        def holding(q: np.ndarray) -> np.ndarray:
            full = np.zeros(size)
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
        if not (type(names) is tuple and names == self.names):  # (else every name is known)
            for name in names:
                if name not in self.names:
                    raise BridgeError(
                        f"command for unknown joint {name!r}; the joints are {', '.join(self.names)}"
                    )
        if not self.started:
            if not self.takeover.takes_over(names, position, velocity, self._measured_position):
                return
            self.started = True
        velocities = list(velocity) if velocity else [0.0] * len(names)
        self.hardware.set_motion_commands(names, position, velocities)
        self.hardware.command_received(now)
        self._command_acceleration = self._acceleration_between(names, velocities, now)
        self._command = (tuple(names), list(position), velocities, now)

    def _measured_position(self, name: str) -> float:
        return self.hardware.state(name, "position")

    def _acceleration_between(self, names: Sequence[str], velocity: list[float], now: float) -> list[float]:
        """Per joint, the commanded acceleration (m/s^2 or rad/s^2) between the last command and this
        one (received at `now`, s): their velocity difference over their interval, for the hold
        between commands (_hold_command). 0 for the first command, after a gap of more than
        HOLD_ACCELERATION_GAP, or for another joint set."""
        last = self._command
        if last is None or tuple(names) != last[0]:
            return [0.0] * len(names)
        interval = now - last[3]
        if not 0.0 < interval <= HOLD_ACCELERATION_GAP:
            return [0.0] * len(names)
        return [
            (v - v0) / interval if math.isfinite(v) and math.isfinite(v0) else 0.0
            for v, v0 in zip(velocity, last[2], strict=True)
        ]

    def step(self, now: float) -> JointStateSample:
        """One control period at `now` (s, the adapter's clock): feedback, read, write (PID,
        safety), the period; the state at its end. With the hardware not active (stopped,
        disabled) the state is the drives' own feedback: the hardware reads nothing then."""
        return self.sample(self.run_period(now))

    def run_period(self, now: float) -> bool:
        """`step` without its state (an adapter that publishes one state per several periods
        samples once, after the last): whether the hardware was active in the period."""
        if self._closed:
            raise BridgeError("the drive bridge is closed")
        hw = self.hardware
        self._swap_in_hole()
        self._swap_in_pin()
        self.backend.before_read()
        active = hw.lifecycle is LifecycleState.ACTIVE
        if active:
            self._hold_command(now)
            self._hold_feed_after_breakthrough()
            self._gear_feed_to_pin()
            self._feed_thrust_forward()
            feed_velocity = None
            for joint in hw.joints:
                if joint.name == FEED_JOINT:
                    feed_velocity = joint.last_velocity_command
                    break
            hw.read(now, self.dt)
            hw.write(now, self.dt)
            if not self.started:  # the positions a controller taking over may have read
                self.takeover.observe(self.names, self._measured_position)
            self._run_thrust_monitor(feed_velocity)
        elif self.homing:
            self._home_one_period(now)
        self._run_pin_monitor()
        self.backend.after_write()
        self._advance_pin()
        self.time += self.dt
        return active

    def sample(self, active: bool | None = None) -> JointStateSample:
        """The joint state as the last period left it (running none): the hardware's state
        interfaces if `active` (default: the hardware is active now), else the drives' own
        feedback."""
        hw = self.hardware
        keys = ("position", "velocity", "effort")
        if active is None:
            active = hw.lifecycle is LifecycleState.ACTIVE
        if active:  # the hardware's joints are this bridge's, in its order (both info.joints)
            state = {key: hw.states(key) for key in keys}
        else:
            feedback = [self.drives[n].feedback() for n in self.names]
            state = {key: [getattr(f, key) for f in feedback] for key in keys}
        return JointStateSample(
            time=self.time,
            names=self.names,
            position=state["position"],
            velocity=state["velocity"],
            effort=state["effort"],
            stop_reason=hw.stop_reason,
        )

    def _hold_command(self, now: float) -> None:
        """The last command carried on for its age (`now` minus its receipt, s) with its velocity
        and the acceleration since the command before (second order: position q + v t + a t^2 / 2,
        velocity v + a t), between commands that come slower than the control period (a controller
        cycle late under load, or several periods run per command, bridge.lockstep). A
        zero-order hold would command a staircase that the drive follows a step behind; a
        first-order one (position only) left the velocity command a staircase, which the PID's
        velocity term and the acceleration feed-forward (its difference) turned into a 57 um
        feed error at 250 Hz (docs/drive_from_another_node.md). The watchdog still sees the
        command's true age (hold after watchdog_timeout)."""
        if self._command is None:
            return
        names, position, velocity, received = self._command
        age = now - received
        if not age > 0.0:
            return
        for name, q, v, a in zip(names, position, velocity, self._command_acceleration, strict=True):
            if math.isfinite(q) and math.isfinite(v):
                self.hardware.set_command(name, "position", q + v * age + 0.5 * a * age * age)
                self.hardware.set_command(name, "velocity", v + a * age)

    # --- the hardware's lifecycle from outside (drive_node's services) -------------------------
    def acknowledge_stop(self, note: str) -> str:
        """Clear the latched stop (the hardware's acknowledge_stop: every drive's fault reset,
        logged with `note`); what was cleared. BridgeError if the hardware refuses (e.g. while
        active: disable first)."""
        hw = self.hardware
        if hw.stop_reason is None and hw.lifecycle is LifecycleState.ACTIVE:
            return "no stop latched"
        cleared = hw.stop_reason
        if hw.acknowledge_stop(note) is not CallbackReturn.SUCCESS:
            raise BridgeError(hw.refused or "acknowledge_stop refused")
        ended = self._end_hole()
        pin_ended = self._end_pin()
        text = f"stop acknowledged: {cleared}" if cleared else "no stop latched"
        if ended is not None:
            text += f"; goal {ended!r}'s hole ended (the goal cannot go on after a stop)"
        if pin_ended is not None:
            text += f"; goal {pin_ended!r}'s pin insertion ended (the goal cannot go on after a stop)"
        return text

    def _active_goal(self) -> tuple[str, str] | None:
        """The goal whose hole or pin insertion is active or waiting, with what it does ("is
        drilling", "is inserting a pin"); None: none."""
        with self._hole_lock:
            hole = (self._pending_hole or self.hole).context
            pin = self._next_pin
        if hole is not None:
            return hole.goal_id, "is drilling"
        return (pin.goal_id, "is inserting a pin") if pin is not None else None

    def _refuse_mid_goal(self, service: str) -> None:
        """BridgeError naming the goal if a goal's hole or pin insertion is active (issue 33 item 2:
        a drive-level service called mid-goal bypasses task_node's busy guard)."""
        active = self._active_goal()
        if active is not None:
            goal, doing = active
            raise BridgeError(
                f"{service} refused: goal {goal!r} {doing} (cancel the goal: it retracts the bit; "
                "an emergency stop stops every drive)"
            )

    def enable(self, now: float) -> str:
        """Activate the hardware (drives enabled, commands at the measured positions, watchdog
        armed at `now`, s) and restart the start-up handshake. No-op if active; BridgeError if
        refused (a latched stop: acknowledge_stop first)."""
        hw = self.hardware
        if hw.lifecycle is LifecycleState.ACTIVE:
            return "already enabled"
        self._refuse_mid_goal("enable")
        if hw.on_activate() is not CallbackReturn.SUCCESS:
            raise BridgeError(hw.refused or f"activation failed: {hw.stop_reason}")
        self.started = False
        self._command = None
        self.takeover.reset()
        with self._hole_lock:  # a fresh monitor for the hole in force (its latched fault was acknowledged)
            self._pending_hole = self._setup((self._pending_hole or self.hole).context)
        self._breakthrough = None
        self.events.append("enabled: waiting for the first controller command near the measured pose")
        if hw.write(now, self.dt) is not ReturnType.OK:  # the holding currents at once (see start-up)
            raise BridgeError(f"activation failed: {hw.stop_reason}")
        return "enabled"

    def home(self) -> str:
        """Start the hardware's homing sequence (hardware.homing: each axis in the parameter file's
        order, the others held under power); `step` runs it one period at a time until every
        drive is homed (then enable). BridgeError while enabled or with a stop latched."""
        hw = self.hardware
        if hw.lifecycle is LifecycleState.ACTIVE:
            raise BridgeError("home refused: the drives are enabled; disable first")
        if hw.stop_reason is not None:
            raise BridgeError(f"home refused: a stop is latched ({hw.stop_reason}); acknowledge_stop first")
        if self.homing:
            return "homing already running"
        self._refuse_mid_goal("home")
        self.homing = True
        self.events.append(f"homing: {', '.join(hw.unhomed) or 'every drive already homed'}")
        return "homing started"

    def _home_one_period(self, now: float) -> None:
        try:
            progress = self.hardware.home(now)
        except (HardwareError, HomingError) as error:
            self.homing = False
            self.events.append(f"homing failed: {error}")
            return
        if progress.done:
            self.homing = False
            self.events.append("homing done: every drive homed; enable to drive")

    def disable(self) -> str:
        """Deactivate the hardware (every drive disabled: inverters off, brakes). No-op if not
        active; BridgeError while a goal's hole is active (nothing changes: the bit may be in
        bone) or if a drive failed to disable (then every drive is quick-stopped)."""
        hw = self.hardware
        if hw.lifecycle is not LifecycleState.ACTIVE:
            return "already disabled"
        self._refuse_mid_goal("disable")
        if hw.on_deactivate() is not CallbackReturn.SUCCESS:
            raise BridgeError(hw.stop_reason or hw.refused or "deactivate refused")
        return "disabled"

    def status(self) -> DrivesStatus:
        """The hardware's lifecycle and latched stop, and each drive's state, fault, measured
        position and current, and whether it is homed."""
        drives = []
        for name in self.names:
            feedback = self.drives[name].feedback()
            drives.append(
                DriveStatus(
                    name=name,
                    state=feedback.state.value,
                    fault=feedback.fault,
                    position=feedback.position,
                    current=feedback.current,
                    homed=feedback.homed,
                )
            )
        hw = self.hardware
        return DrivesStatus(
            lifecycle=hw.lifecycle.value,
            stop_reason=hw.stop_reason,
            drives=tuple(drives),
            breakthrough=self.breakthrough,
            stop_code=hw.stop_code,
            breakthrough_early=self.breakthrough_early,
            hole=self.hole.status(),
            commanded=self.started,
            hole_refused=self.hole_refused,
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
