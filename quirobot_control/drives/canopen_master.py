"""A CANopen CiA 402 servo drive behind the project's `Drive` interface (one axis, one node).

`CanopenDrive` is the master side: it talks to a real servo drive (or to
`drive_simulators.canopen_slave.CanopenServoSimulator`) on a CAN bus through the python `canopen`
library, and offers the same protocol as `drive_simulators.simulated_drive.SimulatedDrive`
(enable, disable, quick_stop, reset_fault, command_current, feedback), so the hardware component
does not know which it has.

Tables (object dictionary, statusword patterns, controlwords): drives.cia402; units
(`TorqueScaling`): drives.canopen_units.

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
import functools
import logging
import math
import struct
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import can
import canopen
from canopen.sdo import SdoAbortedError, SdoCommunicationError

from quirobot_control.drives.canopen_units import CanopenConfigurationError, MotionScaling, TorqueScaling
from quirobot_control.drives.cia402 import (
    ABORT_CONNECTION_OPTION_CODE,
    ABORT_CONNECTION_QUICK_STOP,
    CONSUMER_HEARTBEAT_TIME,
    CONTROLWORD,
    CURRENT_ACTUAL,
    CW_DISABLE_VOLTAGE,
    CW_ENABLE_OPERATION,
    CW_FAULT_RESET,
    CW_HALT,
    CW_HOMING_START,
    CW_QUICK_STOP,
    CW_SHUTDOWN,
    CW_SWITCH_ON,
    DEFAULT_EDS,
    ERROR_CODE,
    HEARTBEAT_COB_BASE,
    HOME_OFFSET,
    HOMING_ACCELERATION,
    HOMING_METHOD,
    HOMING_SPEEDS,
    MODE_CYCLIC_SYNCHRONOUS_POSITION,
    MODE_CYCLIC_SYNCHRONOUS_TORQUE,
    MODE_HOMING,
    MODES_OF_OPERATION,
    MODES_OF_OPERATION_DISPLAY,
    MOTOR_RATED_CURRENT,
    MOTOR_RATED_TORQUE,
    NMT_OPERATIONAL_STATE,
    POSITION_ACTUAL,
    POSITION_CONTROL_PARAMETERS,
    POSITION_CONTROL_SUBINDICES,
    POSITION_ENCODER_RESOLUTION,
    POSITION_LOST_ERROR_CODES,
    QUICK_STOP_DECELERATION,
    QUICK_STOP_OPTION_CODE,
    QUICK_STOP_RAMP_THEN_DISABLE,
    RPDO1_COB_BASE,
    RPDO1_MAPPING,
    RPDO2_COB_BASE,
    RPDO2_MAPPING,
    STATUSWORD,
    STATUSWORD_PATTERNS,
    SW_HOMING_ATTAINED,
    SW_HOMING_ERROR,
    TARGET_POSITION,
    TARGET_TORQUE,
    TORQUE_OFFSET,
    TPDO1_COB_BASE,
    TPDO1_MAPPING,
    TPDO2_COB_BASE,
    TPDO2_MAPPING,
    TPDO_LAYOUTS,
    TRANSMISSION_EVENT,
    TRANSMISSION_SYNCHRONOUS,
    VELOCITY_ACTUAL,
    VELOCITY_OFFSET,
    Cia402State,
    StatuswordError,
    decode_statusword,
    describe_error_code,
    drive_state,
)
from quirobot_control.drives.interface import DriveError, DriveFeedback, DriveMode, DriveState
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

_COMMUNICATION_ERRORS = (SdoCommunicationError, SdoAbortedError, can.CanError, OSError)
#: CiA 402 states of a drive still carrying out a stop (its ramp, or the brake engaging under power).
_STOPPING_STATES = (Cia402State.QUICK_STOP_ACTIVE, Cia402State.FAULT_REACTION_ACTIVE)
#: NMT heartbeat state of a boot-up frame (CiA 301).
NMT_BOOT_UP = 0
#: 0x6060 value of each mode.
MODE_CODES = {
    DriveMode.CSP: MODE_CYCLIC_SYNCHRONOUS_POSITION,
    DriveMode.CST: MODE_CYCLIC_SYNCHRONOUS_TORQUE,
    DriveMode.HOMING: MODE_HOMING,
}

logger = logging.getLogger(__name__)

#: decode_statusword, memoized: a drive reports a handful of statuswords, and the per-cycle path
#: decodes the latest one several times per period (a StatuswordError is raised every time, not
#: cached).
_decode = functools.lru_cache(maxsize=256)(decode_statusword)


@functools.lru_cache(maxsize=256)
def _drive_state_of(statusword: int) -> DriveState:
    """drive_state(decode_statusword(statusword)), memoized (StatuswordError is not cached)."""
    return drive_state(decode_statusword(statusword))


#: RPDO1 (controlword UNSIGNED16, target torque INTEGER16, torque offset INTEGER16) and RPDO2
#: (target position INTEGER32, velocity offset INTEGER32) as CiA 301 lays them out: little-endian,
#: in the order of cia402.RPDO1_MAPPING / RPDO2_MAPPING. Packed into preallocated frames by a
#: precompiled struct: the per-cycle path does no object-dictionary look-up and builds nothing
#: (canopen's PdoMap.transmit encodes variable by variable and builds a can.Message per frame:
#: about 5x the CPU, bench/drive_loop.py).
RPDO1_LAYOUT = struct.Struct("<Hhh")
RPDO2_LAYOUT = struct.Struct("<ii")
_TPDO1, _TPDO2 = TPDO_LAYOUTS[TPDO1_MAPPING], TPDO_LAYOUTS[TPDO2_MAPPING]
#: EMCY entries a drive keeps, the latest (its `emcy_log`, and canopen's own `node.emcy.log` and
#: `active`, which canopen grows by one per frame without bound: 44 MB per 100,000 frames): a
#: babbling node cannot fill the memory; `emcy_count` counts every one.
EMCY_LOG_LIMIT = 1000
#: s (the drive's clock) between two EMCY warnings of one drive with the same error code: a flood
#: is one line a second, saying how many came since the last; a new code is warned at once.
EMCY_WARNING_INTERVAL = 1.0


class CanopenDrive:
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

    def _configure_node(self, what: str) -> None:
        """Everything start() writes, by SDO in pre-operational, then NMT operational; the
        feedback watchdog re-arms at the first TPDOs after it (enable() waits for them)."""
        try:
            self.node.nmt.state = "PRE-OPERATIONAL"
            self._check_scaling()
            self._configure_stops()
            if self._gains is not None:
                self._write_gains(self._gains)
            if self.homing is not None:
                self._configure_homing(self.homing)
            self._write_mode(self._mode)
            self._configure_pdos()
            statusword = self.node.sdo[STATUSWORD].raw
            position = self.node.sdo[POSITION_ACTUAL].raw
            velocity = self.node.sdo[VELOCITY_ACTUAL].raw
            current = self.node.sdo[CURRENT_ACTUAL].raw
            self.node.nmt.state = "OPERATIONAL"
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: {what} failed: {error}") from error
        with self._mutex:
            self._statusword = statusword
            self._position_counts, self._velocity_counts, self._current_actual = position, velocity, current
            self._tpdo_times = [None, None]  # the watchdog arms at the first TPDOs
            self._rebooted = False

    def _check_scaling(self) -> None:
        expected = {
            (MOTOR_RATED_CURRENT, 0): (self.scaling.rated_current_milliamps, "motor rated current", "mA"),
            (MOTOR_RATED_TORQUE, 0): (
                self.scaling.rated_torque_millinewton_metres,
                "motor rated torque",
                "mN*m",
            ),
            (POSITION_ENCODER_RESOLUTION, 1): (self.encoder.counts_per_rev, "encoder increments", "counts"),
            (POSITION_ENCODER_RESOLUTION, 2): (1, "motor revolutions of the encoder resolution", "rev"),
        }
        for (index, subindex), (value, label, unit) in expected.items():
            entry = self.node.sdo[index] if subindex == 0 else self.node.sdo[index][subindex]
            actual = entry.raw
            if actual != value:
                raise CanopenConfigurationError(
                    f"{self._who()}: {label} 0x{index:04X}:{subindex} is {actual} {unit}, the "
                    f"parameter file says {value} {unit} (commission the drive, or fix the file)"
                )

    def _configure_stops(self) -> None:
        """Category-1 quick stop on the drive's ramp; the drive watches the master's heartbeat and
        quick-stops itself when it is lost, in every mode (0x6007 = 3). Each watchdog object is
        read back: a drive that does not keep one (CiA 402 0x6007 = 0 is "no action") would go
        on without its master, and is refused (CanopenConfigurationError naming the object)."""
        sdo = self.node.sdo
        sdo[QUICK_STOP_DECELERATION].raw = self.units.positive_counts(
            self.quick_stop_deceleration, "quick-stop deceleration"
        )
        expected = self._master_watch()
        for (index, subindex, _), value in expected.items():
            entry = sdo[index] if subindex == 0 else sdo[index][subindex]
            entry.raw = value
        for (index, subindex, label), actual in self._read_master_watch().items():
            if actual != expected[index, subindex, label]:
                raise CanopenConfigurationError(
                    f"{self._who()}: {label} 0x{index:04X}:{subindex} reads {actual} after "
                    f"{expected[index, subindex, label]} was written: the drive would not stop itself on "
                    "a lost master (commission it to keep the value)"
                )

    def _master_watch(self) -> dict[tuple[int, int, str], int]:
        """What start() writes for the drive to stop itself on a lost master, by (index,
        subindex, name): the quick-stop option (category 1), the abort-connection option (quick
        stop) and the consumer heartbeat on the master's (node id << 16 | ms; none without a
        finite drive.master_timeout)."""
        watch = {
            (QUICK_STOP_OPTION_CODE, 0, "quick-stop option code"): QUICK_STOP_RAMP_THEN_DISABLE,
            (ABORT_CONNECTION_OPTION_CODE, 0, "abort-connection option code"): ABORT_CONNECTION_QUICK_STOP,
        }
        if math.isfinite(self.master_timeout):
            milliseconds = round(self.master_timeout * 1000.0)
            if not 1 <= milliseconds <= 0xFFFF:
                raise CanopenConfigurationError(
                    f"{self._who()}: master timeout {self.master_timeout} s is not 1..65535 ms (0x1016)"
                )
            watch[CONSUMER_HEARTBEAT_TIME, 1, "consumer heartbeat time"] = (
                self.bus.master_node_id << 16 | milliseconds
            )
        return watch

    def _read_master_watch(self) -> dict[tuple[int, int, str], int]:
        """The drive's values of the `_master_watch` objects, read by SDO."""
        sdo = self.node.sdo
        return {
            key: (sdo[key[0]] if key[1] == 0 else sdo[key[0]][key[1]]).raw for key in self._master_watch()
        }

    def _configure_homing(self, homing: HomingParameters) -> None:
        sdo = self.node.sdo
        sdo[HOMING_METHOD].raw = homing.method
        sdo[HOMING_SPEEDS][1].raw = self.units.positive_counts(homing.switch_speed, "homing switch speed")
        sdo[HOMING_SPEEDS][2].raw = self.units.positive_counts(homing.zero_speed, "homing zero speed")
        sdo[HOMING_ACCELERATION].raw = self.units.positive_counts(homing.acceleration, "homing acceleration")
        sdo[HOME_OFFSET].raw = self.units.counts(homing.home_offset)

    def _write_gains(self, gains: PIDGains) -> None:
        entry = self.node.sdo[POSITION_CONTROL_PARAMETERS]
        for field, subindex in POSITION_CONTROL_SUBINDICES.items():
            entry[subindex].raw = getattr(gains, field)

    def _write_mode(self, mode: DriveMode) -> None:
        code = MODE_CODES[mode]
        self.node.sdo[MODES_OF_OPERATION].raw = code
        display = self.node.sdo[MODES_OF_OPERATION_DISPLAY].raw
        if display != code:
            raise CanopenConfigurationError(
                f"{self._who()}: modes of operation display 0x6061 is {display} after setting "
                f"{mode.value} ({code})"
            )

    def _configure_pdos(self) -> None:
        for pdo, mapping, cob_base, transmission in (
            (self.node.rpdo[1], RPDO1_MAPPING, RPDO1_COB_BASE, TRANSMISSION_EVENT),
            (self.node.rpdo[2], RPDO2_MAPPING, RPDO2_COB_BASE, TRANSMISSION_EVENT),
            (self.node.tpdo[1], TPDO1_MAPPING, TPDO1_COB_BASE, TRANSMISSION_SYNCHRONOUS),
            (self.node.tpdo[2], TPDO2_MAPPING, TPDO2_COB_BASE, TRANSMISSION_SYNCHRONOUS),
        ):
            pdo.clear()
            for index, bits in mapping:
                pdo.add_variable(index, 0, bits)
            pdo.cob_id = cob_base + self.node_id
            pdo.trans_type = transmission
            pdo.rtr_allowed = False
            pdo.enabled = True
            pdo.save()
        # The feedback decoded by precompiled structs (cia402.TPDO_LAYOUTS), not by canopen's
        # PdoMap: the cycle takes 12 TPDOs per SYNC with six drives.
        network = self.node.network
        for pdo, handler in ((self.node.tpdo[1], self._on_tpdo1), (self.node.tpdo[2], self._on_tpdo2)):
            if pdo.cob_id in network.subscribers and pdo.on_message in network.subscribers[pdo.cob_id]:
                network.unsubscribe(pdo.cob_id, pdo.on_message)
            network.subscribe(pdo.cob_id, handler)
        self.node.rpdo[1][CONTROLWORD].raw = self._controlword
        self.node.rpdo[1][TARGET_TORQUE].raw = 0
        self.node.rpdo[1][TORQUE_OFFSET].raw = 0

    # --- TPDO reception (network thread) ------------------------------------------------------------
    def _on_tpdo1(self, can_id: int, data: bytes, timestamp: float) -> None:
        if len(data) < _TPDO1.size:
            return  # too short for the mapping: not a feedback frame (the watchdog sees none)
        statusword, position = _TPDO1.unpack_from(data)
        now = self.clock()
        with self._mutex:
            self._statusword, self._position_counts = statusword, position
            if self._mode is DriveMode.HOMING and self._homing_started:
                if statusword & SW_HOMING_ERROR and self._master_fault is None:
                    self._master_fault = "homing error (statusword bit 13): the home switch was not found"
                elif statusword & SW_HOMING_ATTAINED:
                    self._homed = True
            self._tpdo_times[0] = now
            self._tpdo_counts[0] += 1
            self._lock.notify_all()

    def _on_tpdo2(self, can_id: int, data: bytes, timestamp: float) -> None:
        if len(data) < _TPDO2.size:
            return
        velocity, current = _TPDO2.unpack_from(data)
        now = self.clock()
        with self._mutex:
            self._velocity_counts, self._current_actual = velocity, current
            self._tpdo_times[1] = now
            self._tpdo_counts[1] += 1
            self._lock.notify_all()

    def _on_emcy(self, entry: canopen.emcy.EmcyError) -> None:
        """EMCY (network thread): a non-zero error code is a fault at once, its code the reason.
        Logs bounded and warnings throttled (EMCY_LOG_LIMIT, EMCY_WARNING_INTERVAL)."""
        now = self.clock()
        consumer = self.node.emcy
        with consumer.emcy_received:  # canopen appended to its own lists under this lock
            for entries in (consumer.log, consumer.active):
                if len(entries) > EMCY_LOG_LIMIT:
                    del entries[: len(entries) - EMCY_LOG_LIMIT]
        with self._mutex:
            self.emcy_log.append((now, entry.code, entry.register))
            self.emcy_count += 1
            if entry.code == 0:  # "error reset / no error": the drive left its fault
                return
            self._drive_fault_text = describe_error_code(entry.code)
            self._emcy_fault = True
            if entry.code in POSITION_LOST_ERROR_CODES:
                self._homed = False  # the position is not trusted: home again after the reset
            last = self._emcy_warned
            if last is not None and last[1] == entry.code and now - last[0] < EMCY_WARNING_INTERVAL:
                self._emcy_unwarned += 1
                return
            unwarned, self._emcy_unwarned = self._emcy_unwarned, 0
            self._emcy_warned = (now, entry.code)
            count = self.emcy_count
        logger.warning(
            "%s: EMCY %s, error register 0x%02X%s",
            self._who(),
            describe_error_code(entry.code),
            entry.register,
            f" ({unwarned} more EMCYs since the last warning, {count} in all)" if unwarned else "",
        )

    def _on_heartbeat(self, state: int) -> None:
        """NMT heartbeat / boot-up (network thread): a started node that boots again is a fault."""
        if state == NMT_BOOT_UP and self._started:
            with self._mutex:
                if not self.absolute:
                    self._homed = False  # an incremental position restarts from zero
                # A node boots in Switch on disabled, power stage off; it sends no TPDO until it
                # is configured and started again (reset_fault() does that).
                self._statusword = STATUSWORD_PATTERNS[Cia402State.SWITCH_ON_DISABLED][1]
                self._rebooted = True
            self._latch_fault(
                f"node {self.node_id} sent a boot-up frame: it restarted (power loss or reset) and "
                f"lost its configuration"
            )
            logger.error("%s: boot-up frame while running", self._who())

    def latch_fault(self, reason: str) -> None:
        """Latch a fault found by the owner of the bus (e.g. bus off); no bus I/O."""
        self._latch_fault(reason)

    @property
    def feedback_count(self) -> int:
        """Complete feedback sets (TPDO1 and TPDO2) received since construction."""
        with self._mutex:
            return min(self._tpdo_counts)

    def wait_for_feedback(self, count: int, timeout: float) -> bool:
        """Wait until `feedback_count` >= count or `timeout` s (wall clock) pass; True if reached."""
        with self._mutex:
            return self._lock.wait_for(lambda: min(self._tpdo_counts) >= count, timeout)

    @property
    def cia402_state(self) -> Cia402State:
        """The drive's CiA 402 state from the last statusword received."""
        with self._mutex:
            return decode_statusword(self._statusword)

    # --- Drive protocol -----------------------------------------------------------------------------
    def enable(self) -> None:
        """Shutdown -> Switch on -> Enable operation (by SDO, each confirmed by the statusword).

        No-op if ENABLED; DriveError in QUICK_STOP or FAULT (reset_fault() first) or if the drive
        does not follow within canopen.transition_timeout.
        """
        if not self._started:
            self.start()
        self._wait_for_first_feedback()
        self._check_watchdog()
        state = self._state()
        if state in (DriveState.QUICK_STOP, DriveState.FAULT):
            reason = f" ({self._fault_reason()})" if state is DriveState.FAULT else ""
            raise DriveError(f"{self._who()} is in {state.name}{reason}: call reset_fault() before enable()")
        if state is DriveState.ENABLED:
            return
        if self._mode is not DriveMode.CST and self._gains is None:
            raise DriveError(
                f"{self._who()}: {self._mode.name} needs the drive's position loop: call "
                f"configure_position_loop() before enable()"
            )
        try:
            self.node.sdo[TARGET_TORQUE].raw = 0
            with self._mutex:
                here = self._position_counts
            self.node.sdo[TARGET_POSITION].raw = here  # CSP starts where the axis is
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: cannot zero the targets 0x6071/0x607A: {error}") from error
        self._halted = False
        self._torque = (0, 0)
        with self._mutex:
            self._homing_started = False  # a run ends when the drive leaves Operation enabled
        if self._started:
            self.node.rpdo[2][TARGET_POSITION].raw = here
            self.node.rpdo[2][VELOCITY_OFFSET].raw = 0
        steps = {
            Cia402State.SWITCH_ON_DISABLED: CW_SHUTDOWN,
            Cia402State.READY_TO_SWITCH_ON: CW_SWITCH_ON,
            Cia402State.SWITCHED_ON: CW_ENABLE_OPERATION,
        }
        deadline = time.monotonic() + self.bus.transition_timeout
        commanded: Cia402State | None = None  # state in which the last step command was written
        while True:
            current = self._read_state()
            if current is Cia402State.OPERATION_ENABLED:
                return
            if current in (Cia402State.FAULT, Cia402State.FAULT_REACTION_ACTIVE):
                raise DriveError(f"{self._who()} faulted while enabling ({self._fault_reason_read()})")
            if time.monotonic() > deadline:
                raise DriveError(
                    f"{self._who()} did not reach Operation enabled within "
                    f"{self.bus.transition_timeout} s: it is in {current.value}"
                )
            if current in steps:
                if current is not commanded:  # else: written, poll until the drive follows
                    self._write_controlword(steps[current])
                    commanded = current
            elif current is Cia402State.QUICK_STOP_ACTIVE:
                raise DriveError(f"{self._who()} is in Quick stop active: call reset_fault() before enable()")

    def disable(self) -> None:
        """ENABLED -> DISABLED (Disable operation 0x07, to Switched on: with 0x605C = 1 the drive ramps,
        holds under power until its brake holds, then switches off; Disable voltage would drop a
        vertical axis until the brake holds). QUICK_STOP and FAULT stay latched."""
        self._check_watchdog()
        if self._state() is DriveState.ENABLED:
            self._write_controlword(CW_SWITCH_ON)
            self._read_state()

    def quick_stop(self) -> None:
        """Quick stop (stop category 1): the drive ramps down at its quick-stop deceleration
        0x6085 under its own PID, brakes at standstill and switches off (0x605A = 2); latched as
        QUICK_STOP until reset_fault().

        Sent by RPDO only (no SDO: it returns at once, see the module doc); the TPDO statusword
        confirms it. A RPDO the bus refuses is a fault. A FAULT is kept as it is.
        """
        self._controlword = CW_QUICK_STOP
        try:
            self._send_rpdo(CW_QUICK_STOP, 0)
        except DriveError:
            return  # latched as a fault by _send_rpdo
        if self._state() is DriveState.FAULT:
            return
        if not self._quick_stop_latched:
            self._quick_stop_time = self.clock()
        self._quick_stop_latched = True

    def reset_fault(self) -> None:
        """FAULT or QUICK_STOP -> DISABLED: CiA 402 fault reset (rising edge of bit 7) or Disable voltage.

        No-op otherwise. Re-arms the feedback watchdog. DriveError if the drive does not answer
        or stays faulted (the cause persists), and, with nothing sent, while the drive reports its
        stop still in progress (Quick stop active, Fault reaction active) or still Operation
        enabled (the quick stop did not reach it: sent again). A node that restarted (boot-up
        frame, or its stop configuration read back changed) is configured again as at start()
        before its fault is cleared; enable() then waits for its first TPDOs.
        """
        if self._state() not in (DriveState.FAULT, DriveState.QUICK_STOP):
            return
        state = self._read_state()
        if state in _STOPPING_STATES or state is Cia402State.OPERATION_ENABLED:
            # Disable voltage now would switch the power stage off mid-ramp (CiA 402 transition
            # 12): refused until the drive reports its stop complete. Operation enabled: the stop
            # has not reached it; it is sent again.
            if state is Cia402State.OPERATION_ENABLED:
                self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)
            raise DriveError(
                f"{self._who()}: stop still in progress (the drive reports {state.value}): fault "
                "reset refused until it is at standstill with its brake holding"
            )
        if state is Cia402State.FAULT:
            self._write_controlword(CW_DISABLE_VOLTAGE)
            self._write_controlword(CW_FAULT_RESET)
        self._write_controlword(CW_DISABLE_VOLTAGE)
        deadline = time.monotonic() + self.bus.transition_timeout
        while (state := self._read_state()) is not Cia402State.SWITCH_ON_DISABLED:
            if time.monotonic() > deadline:
                raise DriveError(
                    f"{self._who()}: fault reset did not reach Switch on disabled within "
                    f"{self.bus.transition_timeout} s: it is in {state.value} ({self._fault_reason_read()})"
                )
        with self._mutex:
            reconfigure = self._rebooted
        if reconfigure or self._configuration_lost():
            reconfigure = True
            # The node restarted: its PDOs, stop options and heartbeat watch are gone, and a quick
            # stop by RPDO would not reach it. Configured again (the fault stays latched if that
            # fails); the feedback watchdog re-arms at its first TPDOs, which enable() waits for.
            self._configure_node("reconfiguration after a restart")
            logger.warning("%s: reconfigured after a restart", self._who())
        now = self.clock()
        with self._mutex:
            self._master_fault = None
            self._drive_fault_text = None
            self._emcy_fault = False
            self._quick_stop_latched = False
            self._quick_stop_time = None
            if not reconfigure:
                self._tpdo_times = [now, now]
        logger.info("%s: fault reset", self._who())

    def _configuration_lost(self) -> bool:
        """The stop and master-watch configuration read back by SDO differs from what start()
        wrote (a restart whose boot-up frame was missed)."""
        try:
            return self._read_master_watch() != self._master_watch()
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: configuration not readable: {error}") from error

    def command_current(self, current: float) -> None:
        """CST: send the q-axis current reference (A) as target torque 0x6071 in RPDO1.

        Clipped to +-max_current, then quantized to one per-mille of the rated torque.
        Non-finite or not a number: quick stop, then DriveError. In another mode or in FAULT:
        DriveError. While DISABLED or QUICK_STOP the command is ignored (nothing is sent).
        """
        (value,) = self._numbers("current", current)
        self._check_mode(DriveMode.CST, "command_current")
        if self._commandable():
            self._torque = (self.scaling.target_torque(self._clip(value)), 0)
            RPDO1_LAYOUT.pack_into(self._rpdo1_frame.data, 0, self._operation_controlword(), *self._torque)
            self._setpoint(self._cst_frames)

    def command_position(self, position: float, velocity: float = 0.0, current: float = 0.0) -> None:
        """CSP: target position 0x607A (m or rad) and velocity offset 0x60B1 (m/s or rad/s) in
        RPDO2, the current feed-forward (A, clipped to +-max_current) as torque offset 0x60B2 in
        RPDO1; the drive's PID follows them from the next SYNC.

        Non-finite or not a number: quick stop, then DriveError. In another mode or in FAULT:
        DriveError. While DISABLED or QUICK_STOP the command is ignored (nothing is sent).
        """
        position, velocity, current = self._numbers(
            "position command", position, velocity, current, labels=("position", "velocity", "current")
        )
        self._check_mode(DriveMode.CSP, "command_position")
        if not self._commandable():
            return
        try:
            counts = self.units.counts(position), self.units.counts(velocity)
        except CanopenConfigurationError as error:
            self.quick_stop()
            raise DriveError(f"{self._who()}: {error}: quick stop") from error
        self._torque = (0, self.scaling.target_torque(self._clip(current)))
        RPDO2_LAYOUT.pack_into(self._rpdo2_frame.data, 0, *counts)
        RPDO1_LAYOUT.pack_into(self._rpdo1_frame.data, 0, self._operation_controlword(), *self._torque)
        self._setpoint(self._csp_frames)

    def _setpoint(self, frames: tuple[can.Message, ...]) -> None:
        """Send the packed setpoint frames now, or leave them to flush_setpoints (defer_setpoints)."""
        self._commands += 1
        if self.defer_setpoints:
            self._pending = frames
            return
        self._pending = ()
        for frame in frames:
            self._transmit(frame)

    def flush_setpoints(self) -> int:
        """Send the setpoint frames packed since the last flush (defer_setpoints), if the drive is
        still ENABLED; the number of frames sent. The bus owner calls it just before its SYNC."""
        frames, self._pending = self._pending, ()
        if not frames or self._state() is not DriveState.ENABLED:
            return 0
        for frame in frames:
            self._transmit(frame)
        return len(frames)

    @property
    def setpoint_commands(self) -> int:
        """Setpoint commands (command_position / command_current) accepted since construction."""
        return self._commands

    def configure_position_loop(self, gains: PIDGains, period: float) -> None:
        """The joint's PID gains (config/control.yaml) for the drive's own position loop, 0x60FB.

        `period` (s) must be the drive's loop period (1 / drive.control_rate: the gains are
        discrete at it). Written by SDO now if the drive is started, else at start().
        """
        if not isinstance(gains, PIDGains):
            raise CanopenConfigurationError(f"{self._who()}: gains must be PIDGains, got {gains!r}")
        if not math.isclose(float(period), self.control_period, rel_tol=1e-9):
            raise CanopenConfigurationError(
                f"{self._who()}: the drive's position loop runs every {self.control_period} s "
                f"(drive.control_rate), the gains are for {period} s"
            )
        self._gains = gains
        if self._started:
            try:
                self._write_gains(gains)
            except _COMMUNICATION_ERRORS as error:
                raise DriveError(f"{self._who()}: position-loop gains 0x60FB not written: {error}") from error

    @property
    def mode(self) -> DriveMode:
        return self._mode

    def set_mode(self, mode: DriveMode) -> None:
        """Modes of operation 0x6060 (checked in 0x6061); DriveError while ENABLED."""
        mode = DriveMode(mode)
        if self._state() is DriveState.ENABLED:
            raise DriveError(
                f"{self._who()}: the mode changes only while not enabled ({self._mode.name} -> {mode.name})"
            )
        if self._started and mode is not self._mode:
            try:
                self._write_mode(mode)
            except _COMMUNICATION_ERRORS as error:
                raise DriveError(f"{self._who()}: mode {mode.name} not set: {error}") from error
        self._mode = mode
        self._homing_started = False

    def halt(self) -> None:
        """Stop category 2: controlword bit 8 by RPDO; the drive ramps down at 0x6085 and holds
        under power (state stays ENABLED, feedback `halted`). No-op unless ENABLED."""
        if self._state() is DriveState.ENABLED:
            self._halted = True
            self._send_rpdo(self._operation_controlword(), *self._torque)

    def resume(self) -> None:
        """Leave a halt: bit 8 cleared; the drive follows the commands again from where it holds
        (send a target near the held position). DriveError in QUICK_STOP or FAULT."""
        state = self._state()
        if state in (DriveState.QUICK_STOP, DriveState.FAULT):
            raise DriveError(f"{self._who()} is in {state.name}: resume() refused (reset_fault() first)")
        if self._halted and state is DriveState.ENABLED:
            self._halted = False
            self._send_rpdo(self._operation_controlword(), *self._torque)
        self._halted = False

    def start_homing(self) -> None:
        """Run the drive's homing (HOMING mode, ENABLED): controlword bit 4 by RPDO; `homed` once
        the statusword reports homing attained (bit 12), FAULT on a homing error (bit 13). Called
        again while the run is in progress (the homing sequence holds its command every period):
        the run goes on and nothing is sent (the drive keeps bit 4 set as received; a new rising
        edge would restart it; its watchdog on the master is the bus's SYNC and heartbeat)."""
        self._check_mode(DriveMode.HOMING, "start_homing")
        if self.homing is None:
            raise DriveError(f"{self._who()}: no homing configured for this axis")
        self._check_watchdog()
        state = self._state()
        if state is not DriveState.ENABLED:
            raise DriveError(f"{self._who()} is {state.name}: homing needs the drive enabled")
        with self._mutex:
            if self._homing_started and not self._homed:
                return  # the run in progress goes on
            self._homed = False
            self._homing_started = True
        self._send_rpdo(CW_ENABLE_OPERATION, 0)  # bit 4 low first: the start is its rising edge
        self._send_rpdo(CW_ENABLE_OPERATION | CW_HOMING_START, 0)

    @property
    def homed(self) -> bool:
        with self._mutex:
            return self._homed

    def feedback(self) -> DriveFeedback:
        """The latest TPDO values in joint units, and the state (checks the feedback timeout)."""
        self._check_watchdog()
        with self._mutex:
            counts, velocity_counts, current_actual, homed = (
                self._position_counts,
                self._velocity_counts,
                self._current_actual,
                self._homed,
            )
        state = self._state()
        current = self.scaling.current(current_actual)
        stopped = state is DriveState.QUICK_STOP or state is DriveState.FAULT
        # The drive's own word (a latched stop is not it): read only when a stop is latched.
        reported = self._reported_state() if stopped else None
        return DriveFeedback(
            position=self.encoder.position(counts),
            velocity=velocity_counts * self.encoder.resolution,
            current=current,
            effort=self.motor.torque_constant * current * self.transmission.ratio * self.efficiency,
            state=state,
            fault=self._fault_reason() if state is DriveState.FAULT else None,
            homed=homed,
            mode=self._mode,
            halted=self._halted and state is DriveState.ENABLED,
            stopping=stopped and reported in _STOPPING_STATES,
            confirmed=not stopped or reported is not Cia402State.OPERATION_ENABLED,
        )

    def stop(self) -> None:
        """Quick stop if the drive is enabled, then NMT pre-operational (no more PDOs); best effort."""
        if self._started and self._state() is DriveState.ENABLED:
            self.quick_stop()
        with contextlib.suppress(*_COMMUNICATION_ERRORS):
            self.node.nmt.state = "PRE-OPERATIONAL"
        self._started = False

    # --- internals ----------------------------------------------------------------------------------
    def _numbers(self, what: str, *values: object, labels: tuple[str, ...] = ()) -> tuple[float, ...]:
        """The command's values as floats; not a number or non-finite: quick stop, DriveError."""
        with contextlib.suppress(TypeError, ValueError):  # the per-cycle case: finite numbers
            numbers = tuple(map(float, values))
            if math.isfinite(sum(numbers)):  # a sum of finite floats may overflow: checked below
                return numbers
        out = []
        for k, value in enumerate(values):
            label = labels[k] if labels else what
            try:
                number = float(value)
            except (TypeError, ValueError) as error:
                self.quick_stop()
                raise DriveError(f"{self._who()}: {label} command must be a number, got {value!r}") from error
            if not math.isfinite(number):
                self.quick_stop()
                raise DriveError(f"{self._who()}: non-finite {label} command {value!r}: quick stop")
            out.append(number)
        return tuple(out)

    def _check_mode(self, mode: DriveMode, command: str) -> None:
        if self._mode is not mode:
            raise DriveError(
                f"{self._who()}: {command} is a {mode.name} command, the drive is in {self._mode.name} "
                f"(set_mode({mode.name}) while disabled)"
            )

    def _commandable(self) -> bool:
        """True if ENABLED (send); False if DISABLED or QUICK_STOP (ignore); FAULT: DriveError."""
        self._check_watchdog()
        state = self._state()
        if state is DriveState.FAULT:
            raise DriveError(f"{self._who()} is in FAULT ({self._fault_reason()}): command refused")
        return state is DriveState.ENABLED

    def _clip(self, current: float) -> float:
        limit = self.motor.max_current
        return min(max(current, -limit), limit)

    def _operation_controlword(self) -> int:
        return CW_ENABLE_OPERATION | (CW_HALT if self._halted else 0)

    def _who(self) -> str:
        return f"drive {self.name} (CANopen node {self.node_id})"

    def _state(self) -> DriveState:
        with self._mutex:
            if self._master_fault is not None or self._emcy_fault:
                return DriveState.FAULT
            try:
                state = _drive_state_of(self._statusword)
            except StatuswordError as error:
                self._master_fault = f"invalid statusword from the drive: {error}"
                return DriveState.FAULT
        if state is DriveState.FAULT:
            return state
        return DriveState.QUICK_STOP if self._quick_stop_latched else state

    def _reported_state(self) -> Cia402State | None:
        """The CiA 402 state of the last statusword received (None: not decodable)."""
        with self._mutex:
            try:
                return _decode(self._statusword)
            except StatuswordError:
                return None

    def _latch_fault(self, reason: str) -> None:
        with self._mutex:
            if self._master_fault is None:
                self._master_fault = reason

    def _wait_for_first_feedback(self) -> None:
        """Feedback must flow before the drive is enabled: wait for the first TPDOs after start()."""
        with self._mutex:
            arrived = self._lock.wait_for(lambda: None not in self._tpdo_times, self.bus.transition_timeout)
        if not arrived:
            raise DriveError(
                f"{self._who()}: no feedback (TPDO1 and TPDO2) within {self.bus.transition_timeout} s "
                f"after start-up: is the SYNC running?"
            )

    def _check_watchdog(self) -> None:
        """Latch a feedback timeout once TPDOs have arrived and then stopped for feedback_timeout."""
        if not self._started:
            return
        now = self.clock()
        with self._mutex:
            times = self._tpdo_times
            if self._master_fault is not None or None in times:
                return
            age = now - min(times)
            stale = age > self._feedback_timeout
            if stale:
                self._master_fault = (
                    f"feedback timeout: no TPDO from node {self.node_id} for {age:.4f} s (limit "
                    f"{self.bus.feedback_timeout:.4f} s = {self.bus.feedback_timeout_periods} SYNC periods)"
                )
        if stale:
            self._controlword = CW_QUICK_STOP
            self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)
            return
        self._check_quick_stop_confirmed(now)

    def _check_quick_stop_confirmed(self, now: float) -> None:
        """A drive still in Operation enabled feedback_timeout after a quick stop is a fault."""
        if self._quick_stop_time is None:  # no quick stop requested (the per-cycle case): nothing to check
            return
        with self._mutex:
            requested = self._quick_stop_time
            if (
                requested is None
                or not self._quick_stop_latched
                or now - requested <= self.bus.feedback_timeout
            ):
                return
            try:
                running = _decode(self._statusword) is Cia402State.OPERATION_ENABLED
            except StatuswordError:
                return  # _state() latches that
            if running and self._master_fault is None:
                self._master_fault = (
                    f"quick stop not confirmed: node {self.node_id} still in Operation enabled "
                    f"{now - requested:.4f} s after the request"
                )
        if running:
            self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)

    def _fault_reason(self) -> str:
        """The fault's text without bus I/O (see the module doc: a stop never waits on SDO)."""
        with self._mutex:
            if self._master_fault is not None:
                return self._master_fault
            if self._drive_fault_text is not None:
                return self._drive_fault_text
        return "drive fault (statusword Fault, no EMCY received: error code 0x603F not read)"

    def read_error_code(self) -> str:
        """The drive's error code 0x603F by SDO (after the stop: this may wait for the SDO timeout)."""
        try:
            text = describe_error_code(self.node.sdo[ERROR_CODE].raw)
        except _COMMUNICATION_ERRORS as error:
            return f"error code 0x603F unreadable: {error}"
        with self._mutex:
            if self._drive_fault_text is None and self._state_is_fault():
                self._drive_fault_text = text
        return text

    def _fault_reason_read(self) -> str:
        """The fault's text, reading 0x603F by SDO if no EMCY told it (not for the stop path)."""
        with self._mutex:
            known = self._master_fault is not None or self._drive_fault_text is not None
        return self._fault_reason() if known else self.read_error_code()

    def _state_is_fault(self) -> bool:
        try:
            return decode_statusword(self._statusword) in (
                Cia402State.FAULT,
                Cia402State.FAULT_REACTION_ACTIVE,
            )
        except StatuswordError:
            return False

    def _send_rpdo(
        self, controlword: int, target_torque: int, torque_offset: int = 0, *, best_effort: bool = False
    ) -> None:
        """RPDO1 now: controlword, target torque, torque offset (per-mille). A setpoint packed and
        not yet flushed is dropped (it would overwrite this controlword at the drive)."""
        if not self._started:
            return
        self._pending = ()
        RPDO1_LAYOUT.pack_into(self._rpdo1_frame.data, 0, controlword, target_torque, torque_offset)
        self._transmit(self._rpdo1_frame, best_effort=best_effort)

    def _transmit(self, frame: can.Message, *, best_effort: bool = False) -> None:
        """One preallocated RPDO frame on the bus (as canopen's Network.send_message, without
        building a message). A bus that refuses it latches a fault and raises DriveError."""
        if not self._started:
            return
        network = self.node.network
        try:
            if network.bus is None:
                raise can.CanOperationError("not connected to a CAN bus")
            with network.send_lock:
                network.bus.send(frame)
        except _COMMUNICATION_ERRORS as error:
            if not best_effort:
                self._latch_fault(f"RPDO not sent: {error}")
                raise DriveError(f"{self._who()}: RPDO not sent: {error}") from error

    def _write_controlword(self, controlword: int) -> None:
        try:
            self.node.sdo[CONTROLWORD].raw = controlword
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(
                f"{self._who()}: controlword 0x{controlword:04X} not written: {error}"
            ) from error
        self._controlword = controlword
        if self._started:
            self.node.rpdo[1][CONTROLWORD].raw = controlword
            self.node.rpdo[1][TARGET_TORQUE].raw = 0
            self.node.rpdo[1][TORQUE_OFFSET].raw = 0

    def _read_state(self) -> Cia402State:
        try:
            statusword = self.node.sdo[STATUSWORD].raw
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: statusword 0x6041 not readable: {error}") from error
        with self._mutex:
            self._statusword = statusword
        try:
            return decode_statusword(statusword)
        except StatuswordError as error:
            self._latch_fault(f"invalid statusword from the drive: {error}")
            raise DriveError(f"{self._who()}: {error}") from error


class MasterHeartbeat:
    """The master's CiA 301 heartbeat producer on one network: 0x700 + master node id, state 5.

    `tick(now)` sends it when `period` s have passed since the last one. The control loop calls
    it every cycle, next to its SYNC, so a loop that stalls (or a process that dies or freezes)
    stops the heartbeat with the SYNCs; a timer thread, or SocketCAN's broadcast manager in the
    kernel, would keep it going and hide the failure from the drives' consumer heartbeat.
    """

    def __init__(self, network: canopen.Network, node_id: int, period: float) -> None:
        if not 1 <= int(node_id) <= 127:
            raise CanopenConfigurationError(f"master node id must be 1..127, got {node_id!r}")
        if not math.isfinite(period) or period <= 0.0:
            raise CanopenConfigurationError(f"heartbeat period must be > 0 s, got {period!r}")
        self.network = network
        self.cob_id = HEARTBEAT_COB_BASE + int(node_id)
        self.period = period
        self.sent = 0
        self._last: float | None = None

    def tick(self, now: float) -> bool:
        """Send the heartbeat if it is due at `now` (s, any monotonic clock); True if sent."""
        if self._last is not None and now - self._last < self.period * (1.0 - 1e-9):
            return False
        self.network.send_message(self.cob_id, bytes([NMT_OPERATIONAL_STATE]))
        self._last = now
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
