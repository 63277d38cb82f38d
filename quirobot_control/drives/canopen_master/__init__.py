"""A CANopen CiA 402 servo drive behind the project's `Drive` interface (one axis, one node).

`CanopenDrive` is the master side: it talks to a real servo drive (or to
`drive_simulators.canopen_slave.CanopenServoSimulator`) on a CAN bus through the python `canopen`
library, and offers the same protocol as `drive_simulators.simulated_drive.SimulatedDrive`
(enable, disable, quick_stop, reset_fault, command_current, feedback), so the hardware component
does not know which it has.

Tables (object dictionary, statusword patterns, controlwords): drives.cia402; units
(`TorqueScaling`): drives.canopen_units.

Parts (one concern each, as ros2_canopen's canopen_402_driver splits its motor into the state
handler, the modes and the bus bridge; `CanopenDrive` here composes them and owns the state):
- core: the state as the host sees it (latched faults and quick stop over the last statusword)
  and the transmit path (RPDO1 now, controlword and statusword by SDO);
- configuration: the SDO configuration at start-up and the PDO mapping;
- state_machine: enable, disable, quick_stop, reset_fault, halt, resume;
- commands: the modes and setpoints (CST current, CSP position, homing run);
- feedback: TPDO, EMCY and heartbeat reception, the feedback watchdog, `feedback()`.

Modes (`DriveMode`, 0x6060): CSP (8, the default for real motors: the drive closes the
position, velocity and current loops with the joint's PID gains of config/control.yaml, written
to 0x60FB by `configure_position_loop`; `command_position(position, velocity, current)` sends
target position 0x607A and velocity offset 0x60B1 in RPDO2, the current feed-forward as torque
offset 0x60B2 in RPDO1), CST (10, the host's PID: `command_current` sends target torque 0x6071
in RPDO1) and HOMING (6: `start_homing()` runs the drive's homing, method 0x6098, speeds
0x6099, acceleration 0x609A, home offset 0x607C; statusword bit 12 homing attained -> `homed`,
bit 13 homing error -> FAULT).

Cycle. At start-up the master configures the drive by SDO (pre-operational): scaling check,
quick-stop option code 0x605A = 2 and deceleration 0x6085 (stop category 1: the drive's own
ramp, then the brake at standstill), abort-connection option 0x6007 = 3 and consumer heartbeat
0x1016 on the master's heartbeat (drive.master_timeout), these three read back (a drive that
does not keep them would go on without its master: refused), the position-loop gains, the homing
objects, the mode, the PDOs; then NMT operational. One SYNC per cycle (`canopen.sync_period`,
produced by whoever owns the bus: `network.sync.transmit()` in lock-step with the control loop,
or `network.sync.start(period)`): each node answers with TPDO1 (statusword, position) and TPDO2
(velocity, current). RPDOs are event-driven: a command sends them, the drive applies the
latest at the next SYNC. State changes (enable, disable, fault reset) go by SDO, which is
confirmed, and then travel in RPDO1 too. `MasterHeartbeat` is the master's heartbeat producer,
ticked by the control loop itself (a stalled loop stops it: the drives stop themselves).

Stopping never waits on SDO. `quick_stop()` sends the Quick stop controlword in RPDO1 and
returns: the drive's TPDO1 statusword confirms it; a drive still in Operation enabled
`canopen.feedback_timeout` after the request is a fault (and the RPDO is sent again). So a
component stopping six drives sends six RPDOs at once, even when every SDO server is dead
(an SDO request waits canopen's 0.3 s response timeout). `feedback()` does no SDO either: the
fault's error code comes from the drive's EMCY frame (CiA 301: a drive sends one when it
faults); without one the reason says so, and `read_error_code()` reads 0x603F by SDO later.

Events that are faults at once: an EMCY with a non-zero error code (logged, its code is the
fault's reason; a flood of them from a babbling node keeps the latest EMCY_LOG_LIMIT entries,
canopen's own log included, counts every one in `emcy_count` and warns once per code change or
EMCY_WARNING_INTERVAL with the count since the last warning); a boot-up frame (NMT heartbeat state
0) from a started node (it restarted and lost its configuration: power loss, reset; it boots in
Switch on disabled, power stage off, and `reset_fault()` configures it again as start() did, NMT
operational included, before clearing the fault, so it is never enabled unconfigured; a restart
whose boot-up frame was missed is found by reading the stop options back at the reset);
`latch_fault()` by the owner of the bus (a SYNC the bus refused to send: bus off).

Feedback timeout. Every TPDO is time-stamped with `clock` (time.monotonic unless injected: wall
clock, so a node that vanished is caught by elapsed time, whatever the master's cycle count). The
watchdog arms at the first TPDOs after start() (enable() waits up to canopen.transition_timeout
for them: no drive is enabled without feedback); from then on, if either TPDO is older than
`canopen.feedback_timeout` (N SYNC periods) when the feedback is read or a command written, the
drive is latched in FAULT "feedback timeout" and a quick stop is sent (RPDO, best effort: the
bus may be the problem). reset_fault() re-arms it from the time of the reset.

State mapping to `DriveState`: Operation enabled -> ENABLED; Quick stop active -> QUICK_STOP;
Fault reaction active and Fault -> FAULT (reason from 0x603F); every other state -> DISABLED.
As in `SimulatedDrive`, QUICK_STOP and FAULT are latched on the master side: `quick_stop()` on a
disabled drive (which CiA 402 leaves in Switch on disabled) still reports QUICK_STOP, and only
`reset_fault()` clears either; enable() then starts the drive again. The latch is the host's view:
`DriveFeedback.confirmed` says whether the drive's own statusword agrees (False while it still
reports Operation enabled: the quick stop has not reached it, e.g. a node not operational), and
`DriveFeedback.stopping` whether it still carries the stop out (Quick stop active, Fault reaction
active). `reset_fault()` is refused, sending nothing, in either case: its Disable voltage would
switch the power stage off mid-ramp (CiA 402 transition 12).
"""

from __future__ import annotations

import collections
import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import can
import canopen

from quirobot_control.drives.canopen_master.commands import CanopenDriveCommands
from quirobot_control.drives.canopen_master.configuration import CanopenDriveConfiguration
from quirobot_control.drives.canopen_master.core import (
    COMMUNICATION_ERRORS,
    CanopenDriveCore,
)
from quirobot_control.drives.canopen_master.feedback import EMCY_LOG_LIMIT, CanopenDriveFeedback
from quirobot_control.drives.canopen_master.sdo_answers import SdoAnswers
from quirobot_control.drives.canopen_master.state_machine import CanopenDriveStateMachine
from quirobot_control.drives.canopen_units import CanopenConfigurationError, MotionScaling, TorqueScaling
from quirobot_control.drives.cia402 import (
    CW_DISABLE_VOLTAGE,
    DEFAULT_EDS,
    HEARTBEAT_COB_BASE,
    NMT_OPERATIONAL_STATE,
    RPDO1_COB_BASE,
    RPDO2_COB_BASE,
    STATUSWORD_PATTERNS,
    Cia402State,
)
from quirobot_control.drives.interface import DriveError, DriveMode, DriveState
from quirobot_control.drives.pid import PIDGains
from quirobot_control.models.encoder import Encoder
from quirobot_description.parameters import (
    CanopenParameters,
    DriveParameters,
    HomingParameters,
    MotorParameters,
    RobotParameters,
    TransmissionParameters,
    drive_axes,
)

__all__ = ["CanopenDrive", "MasterHeartbeat", "canopen_drives_for_buses", "canopen_drives_for_robot"]


class CanopenDrive(
    CanopenDriveStateMachine,
    CanopenDriveCommands,
    CanopenDriveFeedback,
    CanopenDriveConfiguration,
    CanopenDriveCore,
):
    """One axis's CiA 402 servo drive on a CANopen network, as a `Drive` (see the module doc).

    Construction adds the node to `network` and does no bus I/O; `start()` configures it (and
    `enable()` starts it if that was not done).
    """

    def __init__(
        self,
        name: str,
        network: canopen.Network,
        node_id: int,
        motor: MotorParameters,
        transmission: TransmissionParameters,
        drive: DriveParameters,
        bus: CanopenParameters,
        *,
        efficiency: bool = True,
        eds: str | Path = DEFAULT_EDS,
        clock: Callable[[], float] = time.monotonic,
        mode: DriveMode = DriveMode.CSP,
        homing: HomingParameters | None = None,
        homed: bool = False,
    ) -> None:
        """`drive`: the electronics, with this axis's quick-stop deceleration
        (drive.quick_stop_deceleration[name], m/s^2 or rad/s^2) and the master timeout (consumer
        heartbeat time, s); `mode`: the mode set at start(); `homing`: the axis's homing (None:
        start_homing() is refused); `homed`: True only for an encoder that needs no homing."""
        if not 1 <= int(node_id) <= 127 or int(node_id) != node_id:
            raise CanopenConfigurationError(f"drive {name}: node id must be 1..127, got {node_id!r}")
        self.name = name
        self.node_id = int(node_id)
        self.motor = motor
        self.transmission = transmission
        self.efficiency = transmission.efficiency if efficiency else 1.0
        self.bus = bus
        self.encoder = Encoder(drive.encoder_counts_per_rev, transmission.ratio)
        self.scaling = TorqueScaling.for_motor(motor)
        self.units = MotionScaling(self.encoder.resolution)
        self.control_period = 1.0 / drive.control_rate  # s, the drive's position loop
        if name not in drive.quick_stop_deceleration:
            raise CanopenConfigurationError(f"drive {name}: no drive.quick_stop_deceleration for it")
        self.quick_stop_deceleration = drive.quick_stop_deceleration[name]
        self.master_timeout = drive.master_timeout
        self._feedback_timeout = bus.feedback_timeout  # s, read every period (a computed property)
        self.homing = homing
        self.clock = clock
        self._mode = DriveMode(mode)
        self._gains: PIDGains | None = None
        self._halted = False
        self._homed = bool(homed)
        self.absolute = bool(homed)  # an absolute encoder: referenced at power-up
        self._homing_started = False
        self._torque = (0, 0)  # (target torque, torque offset) per-mille, of the latest RPDO1
        # The RPDO frames, preallocated (RPDO*_LAYOUT); their data are packed in place.
        self._rpdo1_frame = can.Message(
            arbitration_id=RPDO1_COB_BASE + self.node_id, data=bytearray(6), is_extended_id=False
        )
        self._rpdo2_frame = can.Message(
            arbitration_id=RPDO2_COB_BASE + self.node_id, data=bytearray(8), is_extended_id=False
        )
        self._csp_frames = (self._rpdo2_frame, self._rpdo1_frame)
        self._cst_frames = (self._rpdo1_frame,)
        #: True: command_position / command_current only pack their frames, and the bus owner
        #: sends them by flush_setpoints() just before its next SYNC (the drive applies only the
        #: latest RPDOs at a SYNC: the setpoints of the control periods between SYNCs would be
        #: sent for nothing). False (default): a command is sent at once.
        self.defer_setpoints = False
        self._pending: tuple[can.Message, ...] = ()  # frames packed, not yet sent
        self._commands = 0  # setpoint commands accepted (packed) since construction
        self.node = canopen.RemoteNode(self.node_id, str(eds))
        network.add_node(self.node)
        # Its SDO answers matched to their request (a late answer to an earlier one is dropped).
        self.sdo_answers = SdoAnswers(self.node.sdo)
        # The state's lock: `with self._mutex` (C-level enter/exit on the per-cycle path); the
        # condition over the same lock (`_lock`) for wait_for_feedback and the TPDOs' notify.
        self._mutex = threading.RLock()
        self._lock = threading.Condition(self._mutex)
        self._started = False
        self._controlword = CW_DISABLE_VOLTAGE
        self._statusword = STATUSWORD_PATTERNS[Cia402State.SWITCH_ON_DISABLED][1]
        self._position_counts = 0
        self._velocity_counts = 0  # counts/s
        self._current_actual = 0  # per-mille of rated current
        self._tpdo_times: list[float | None] = [None, None]  # clock() at the last TPDO1, TPDO2
        self._tpdo_counts = [0, 0]
        self._master_fault: str | None = None  # feedback timeout or lost communication
        self._quick_stop_latched = False
        self._quick_stop_time: float | None = None  # clock() when the quick stop was requested
        self._drive_fault_text: str | None = None  # text of the current fault's error code
        self._emcy_fault = False  # an EMCY with a non-zero error code arrived
        self._rebooted = False  # a boot-up frame since the last configuration: reconfigure first
        self.serial_number: int | None = None  # 0x1018:04, once read_serial_number() has read it
        # (clock(), error code, error register) of the latest EMCY_LOG_LIMIT EMCYs; every one counted
        self.emcy_log: collections.deque[tuple[float, int, int]] = collections.deque(maxlen=EMCY_LOG_LIMIT)
        self.emcy_count = 0
        self._emcy_warned: tuple[float, int] | None = None  # (clock(), code) of the last warning
        self._emcy_unwarned = 0  # EMCYs with a non-zero code since the last warning
        self.node.emcy.add_callback(self._on_emcy)
        self.node.nmt.add_heartbeat_callback(self._on_heartbeat)

    def __repr__(self) -> str:
        return f"CanopenDrive({self.name!r}, node {self.node_id})"

    # --- start-up ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Configure the drive by SDO (see the module doc), set its mode and PDOs, then NMT start.

        Raises CanopenConfigurationError if the drive's rated current/torque or encoder
        resolution differ from the parameter file, DriveError if the bus does not answer.
        """
        if self.node.network.bus is None:
            raise DriveError(f"{self._who()}: the CANopen network is not connected (call network.connect())")
        self._configure_node("start-up")
        with self._mutex:
            self._started = True

    def stop(self) -> None:
        """Quick stop if the drive is enabled, then NMT pre-operational (no more PDOs); best effort."""
        if self._started and self._state() is DriveState.ENABLED:
            self.quick_stop()
        with contextlib.suppress(*COMMUNICATION_ERRORS):
            self.node.nmt.state = "PRE-OPERATIONAL"
        self._started = False


class MasterHeartbeat:
    """The master's CiA 301 heartbeat producer on one network: 0x700 + master node id, state 5.

    `tick(now)` sends it when due. The control loop calls it every cycle, next to its SYNC, so a
    loop that stalls (or a process that dies or freezes) stops the heartbeat with the SYNCs; a
    timer thread, or SocketCAN's broadcast manager in the kernel, would keep it going and hide the
    failure from the drives' consumer heartbeat.

    Due on a grid of `period` s from the first heartbeat, `early` s ahead of it at most (half the
    interval between ticks): a tick that comes a little early or late (the loop's jitter) sends on
    time, and one late heartbeat does not delay the next. Before, "`period` since the last one"
    skipped a tick due at 3.99 ms for a 4 ms period, and heartbeats went out every third 2 ms SYNC
    (6 ms) instead of every second: 1.7 of them per 10 ms consumer time, where the parameter file
    counts on 2.5 (one lost frame passes); a single late SYNC then tripped the drives.
    """

    def __init__(self, network: canopen.Network, node_id: int, period: float, early: float = 0.0) -> None:
        if not 1 <= int(node_id) <= 127:
            raise CanopenConfigurationError(f"master node id must be 1..127, got {node_id!r}")
        if not math.isfinite(period) or period <= 0.0:
            raise CanopenConfigurationError(f"heartbeat period must be > 0 s, got {period!r}")
        if not (math.isfinite(early) and 0.0 <= early < period):
            raise CanopenConfigurationError(f"heartbeat lead must be 0 <= early < {period} s, got {early!r}")
        self.network = network
        self.cob_id = HEARTBEAT_COB_BASE + int(node_id)
        self.period = period
        self.early = early
        self.sent = 0
        self._due: float | None = None  # s: when the next heartbeat is due (None: at once)

    def tick(self, now: float) -> bool:
        """Send the heartbeat if it is due at `now` (s, any monotonic clock); True if sent."""
        due = self._due
        if due is not None and now < due - self.early:
            return False
        self.network.send_message(self.cob_id, bytes([NMT_OPERATIONAL_STATE]))
        # The next on the grid; after a stall longer than a period, a new grid from now.
        self._due = due + self.period if due is not None and now < due + self.period else now + self.period
        self.sent += 1
        return True


def canopen_drives_for_robot(
    params: RobotParameters,
    network: canopen.Network,
    *,
    axes: Iterable[str] | None = None,
    start: bool = True,
    efficiency: bool = True,
    eds: str | Path = DEFAULT_EDS,
    clock: Callable[[], float] = time.monotonic,
    mode: DriveMode = DriveMode.CSP,
    homed: bool = False,
) -> dict[str, CanopenDrive]:
    """One CanopenDrive per axis of `axes` (default every drive, drive_axes()), node ids from
    params.canopen.

    `network` must be connected; with `start` each drive is configured and started (SDO, NMT)
    in `mode` (the position-loop gains can follow by configure_position_loop: they are written
    at once). The SYNC and heartbeat producers are the caller's (`network.sync.transmit()` and
    `MasterHeartbeat.tick` in its loop). `homed`: the axes' position needs no homing.
    """
    drives: dict[str, CanopenDrive] = {}
    for axis in drive_axes() if axes is None else axes:
        if axis not in params.canopen.node_ids:
            raise ValueError(f"no CANopen node id for axis {axis!r}: axes are {', '.join(drive_axes())}")
        drive_train = params.axis(axis)
        drives[axis] = CanopenDrive(
            axis,
            network,
            params.canopen.node_ids[axis],
            drive_train.motor,
            drive_train.transmission,
            params.drive,
            params.canopen,
            efficiency=efficiency,
            eds=eds,
            clock=clock,
            mode=mode,
            homing=params.homing.get(axis),
            homed=homed,
        )
    if start:
        for drive in drives.values():
            drive.start()
    return drives


def canopen_drives_for_buses(
    params: RobotParameters,
    networks: dict[str, canopen.Network],
    **options,
) -> dict[str, CanopenDrive]:
    """Every axis's CanopenDrive, each on the network of its bus (params.canopen.channels).

    `networks` maps each channel name (e.g. "can0") to its connected network; `options` are
    those of canopen_drives_for_robot. One SYNC producer per network is the caller's.
    """
    missing = [c for c in params.canopen.channel_names if c not in networks]
    if missing:
        raise ValueError(
            f"no network for CAN bus(es) {', '.join(missing)} (axes need {params.canopen.channels})"
        )
    drives: dict[str, CanopenDrive] = {}
    for channel in params.canopen.channel_names:
        drives.update(
            canopen_drives_for_robot(
                params, networks[channel], axes=params.canopen.axes_on(channel), **options
            )
        )
    return {axis: drives[axis] for axis in drive_axes()}
