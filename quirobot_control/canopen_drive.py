"""A CANopen CiA 402 servo drive behind the project's `Drive` interface (one axis, one node).

`CanopenDrive` is the master side: it talks to a real servo drive (or to
`canopen_servo_simulator.CanopenServoSimulator`) on a CAN bus through the python `canopen`
library, and offers the same protocol as `drive.SimulatedDrive` (enable, disable, quick_stop,
reset_fault, command_current, feedback), so the hardware component does not know which it has.

Object dictionary (config/quirobot_drive.eds, CiA 402 units):

    0x6040 controlword        UNSIGNED16  RPDO1        0x6041 statusword          UNSIGNED16  TPDO1
    0x6071 target torque      INTEGER16   RPDO1, per-mille of the motor rated torque 0x6076
    0x6064 position actual    INTEGER32   TPDO1, encoder increments (counts)
    0x606C velocity actual    INTEGER32   TPDO2, increments per second
    0x6078 current actual     INTEGER16   TPDO2, per-mille of the motor rated current 0x6075
    0x6075 motor rated current UNSIGNED32 mA    0x6076 motor rated torque UNSIGNED32 mN*m
    0x608F position encoder resolution: increments (sub 1) per motor revolutions (sub 2)
    0x6060 / 0x6061 modes of operation (display): 10 = cyclic synchronous torque (CST)
    0x605A quick stop option code: 6 = stop, then stay in Quick stop active
    0x603F error code: the reason of a fault (CiA 301 / CiA 402 error codes)

Units. The current command i (A, q-axis) becomes a torque K_T * i (N*m) and is sent as
round(1000 * K_T * i / T_rated) per-mille (one count = T_rated / 1000 = 2.0 mN*m on the gantry
motors, 0.042 mN*m on the wrist); the current actual comes back as I_rated / 1000 per count
(12.9 mA on the gantry). T_rated = K_T * I_continuous and I_rated = I_continuous come from the
parameter file, rounded to whole mN*m and mA as the drive stores them; `start()` reads them back
and refuses a drive that disagrees. Position: an encoder of n counts per motor revolution on a
transmission of ratio r (motor rad per joint m or rad) reports 2*pi / (n * r) m or rad per count.
The encoder's zero is the joint's zero (homing is not done here).

Cycle. At start-up the master configures the PDOs by SDO (pre-operational), sets CST mode and
starts the node (NMT operational). One SYNC per cycle (`canopen.sync_period`, produced by
whoever owns the bus: `network.sync.start(period)` or `network.sync.transmit()` in lock-step
with the control loop): each node answers with TPDO1 (statusword, position) and TPDO2
(velocity, current). RPDO1 (controlword, target torque) is event-driven: `command_current`
sends it, the drive applies the latest one at the next SYNC. State changes (enable, disable,
quick stop, fault reset) go by SDO, which is confirmed, and then travel in RPDO1 too.

Feedback timeout. Every TPDO is time-stamped with `clock` (time.monotonic unless injected). The
watchdog arms at the first TPDOs after start() (enable() waits up to canopen.transition_timeout
for them: no drive is enabled without feedback); from then on, if either TPDO is older than
`canopen.feedback_timeout` (N SYNC periods) when the feedback is read or a command written, the
drive is latched in FAULT "feedback timeout" and a quick stop is sent (RPDO, best effort: the
bus may be the problem). reset_fault() re-arms it from the time of the reset.

State mapping to `DriveState`: Operation enabled -> ENABLED; Quick stop active -> QUICK_STOP;
Fault reaction active and Fault -> FAULT (reason from 0x603F); every other state -> DISABLED.
As in `SimulatedDrive`, QUICK_STOP and FAULT are latched on the master side: `quick_stop()` on a
disabled drive (which CiA 402 leaves in Switch on disabled) still reports QUICK_STOP, and only
`reset_fault()` clears either; enable() then starts the drive again.
"""

from __future__ import annotations

import contextlib
import enum
import math
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import can
import canopen
from canopen.emcy import EmcyError
from canopen.sdo import SdoAbortedError, SdoCommunicationError

from quirobot_control.drive import DRILL_FEED_JOINT, DriveError, DriveFeedback, DriveState
from quirobot_control.encoder import Encoder
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import (
    CANOPEN_AXES,
    CanopenParameters,
    DriveParameters,
    MotorParameters,
    RobotParameters,
    TransmissionParameters,
)

#: The object dictionary of the drive (CiA 306 EDS), shipped with this package.
DEFAULT_EDS = find_data_file("config/quirobot_drive.eds")

# --- object dictionary indices (CiA 301, CiA 402) ------------------------------------------------
ERROR_CODE = 0x603F
CONTROLWORD = 0x6040
STATUSWORD = 0x6041
QUICK_STOP_OPTION_CODE = 0x605A
MODES_OF_OPERATION = 0x6060
MODES_OF_OPERATION_DISPLAY = 0x6061
POSITION_ACTUAL = 0x6064
VELOCITY_ACTUAL = 0x606C
TARGET_TORQUE = 0x6071
MOTOR_RATED_CURRENT = 0x6075
MOTOR_RATED_TORQUE = 0x6076
CURRENT_ACTUAL = 0x6078
POSITION_ENCODER_RESOLUTION = 0x608F

#: PDO mappings: (object index, bits) in frame order; PDO COB-ID = base + node id (CiA 301).
RPDO1_MAPPING = ((CONTROLWORD, 16), (TARGET_TORQUE, 16))
TPDO1_MAPPING = ((STATUSWORD, 16), (POSITION_ACTUAL, 32))
TPDO2_MAPPING = ((VELOCITY_ACTUAL, 32), (CURRENT_ACTUAL, 16))
RPDO1_COB_BASE, TPDO1_COB_BASE, TPDO2_COB_BASE = 0x200, 0x180, 0x280
SYNC_COB_ID = 0x80
#: CiA 301 transmission types: 1 = on every SYNC; 255 = event-driven (applied on reception).
TRANSMISSION_SYNCHRONOUS = 1
TRANSMISSION_EVENT = 255

#: 0x6060 value of cyclic synchronous torque mode (CiA 402).
MODE_CYCLIC_SYNCHRONOUS_TORQUE = 10
#: 0x605A value: stop (torque to zero in CST) and stay in Quick stop active (CiA 402 codes 5-8).
QUICK_STOP_AND_STAY = 6

# --- controlword commands (CiA 402, bits: 0 switch on, 1 enable voltage, 2 quick stop (low
# active), 3 enable operation, 7 fault reset) -------------------------------------------------------
CW_DISABLE_VOLTAGE = 0x0000
CW_QUICK_STOP = 0x0002
CW_SHUTDOWN = 0x0006
CW_SWITCH_ON = 0x0007  # also "disable operation" from Operation enabled
CW_ENABLE_OPERATION = 0x000F
CW_FAULT_RESET = 0x0080  # on the rising edge of bit 7


class Cia402State(enum.Enum):
    """The states of the CiA 402 drive state machine."""

    NOT_READY_TO_SWITCH_ON = "Not ready to switch on"
    SWITCH_ON_DISABLED = "Switch on disabled"
    READY_TO_SWITCH_ON = "Ready to switch on"
    SWITCHED_ON = "Switched on"
    OPERATION_ENABLED = "Operation enabled"
    QUICK_STOP_ACTIVE = "Quick stop active"
    FAULT_REACTION_ACTIVE = "Fault reaction active"
    FAULT = "Fault"


#: Statusword (mask, value) of each state, CiA 402 (bits 0-3 and 5-6).
STATUSWORD_PATTERNS = {
    Cia402State.NOT_READY_TO_SWITCH_ON: (0x4F, 0x00),
    Cia402State.SWITCH_ON_DISABLED: (0x4F, 0x40),
    Cia402State.READY_TO_SWITCH_ON: (0x6F, 0x21),
    Cia402State.SWITCHED_ON: (0x6F, 0x23),
    Cia402State.OPERATION_ENABLED: (0x6F, 0x27),
    Cia402State.QUICK_STOP_ACTIVE: (0x6F, 0x07),
    Cia402State.FAULT_REACTION_ACTIVE: (0x4F, 0x0F),
    Cia402State.FAULT: (0x4F, 0x08),
}


class StatuswordError(ValueError):
    """A statusword that matches no CiA 402 state."""


def decode_statusword(statusword: int) -> Cia402State:
    """The CiA 402 state a statusword (0x6041) reports; StatuswordError if it matches none."""
    for state, (mask, value) in STATUSWORD_PATTERNS.items():
        if statusword & mask == value:
            return state
    raise StatuswordError(f"statusword 0x{statusword:04X} matches no CiA 402 state")


def drive_state(state: Cia402State) -> DriveState:
    """The project's DriveState for a CiA 402 state (before the master's own latches)."""
    if state in (Cia402State.FAULT, Cia402State.FAULT_REACTION_ACTIVE):
        return DriveState.FAULT
    if state is Cia402State.QUICK_STOP_ACTIVE:
        return DriveState.QUICK_STOP
    if state is Cia402State.OPERATION_ENABLED:
        return DriveState.ENABLED
    return DriveState.DISABLED


#: Error codes (0x603F, EMCY) a servo drive reports, CiA 301 table 21 and CiA 402 annex.
ERROR_CODES = {
    0x0000: "no error",
    0x1000: "generic error",
    0x2310: "continuous over-current",
    0x2320: "short circuit at the power stage",
    0x3210: "DC link over-voltage",
    0x3220: "DC link under-voltage",
    0x4210: "excess temperature of the device",
    0x4310: "excess temperature of the drive",
    0x5530: "data storage (non-volatile memory) fault",
    0x7305: "incremental sensor 1 fault (encoder)",
    0x8130: "life guard or heartbeat error",
    0x8400: "velocity speed controller (overspeed)",
    0x8611: "following error",
}


def describe_error_code(code: int) -> str:
    """'error code 0x2310: continuous over-current' (CiA tables; the class name if not listed)."""
    text = ERROR_CODES.get(code)
    if text is None:
        text = EmcyError(code, 0, b"", 0.0).get_desc().lower() or "unknown"
    return f"error code 0x{code:04X}: {text}"


class CanopenConfigurationError(ValueError):
    """A drive's configuration disagrees with the parameter file, or a setting is invalid."""


# --- units ----------------------------------------------------------------------------------------
MILLI = 1000.0  # mA per A, mN*m per N*m
PER_MILLE = 1000.0
INT16_MAX = 2**15 - 1


@dataclass(frozen=True)
class TorqueScaling:
    """CiA 402 torque and current units of one drive.

    `rated_current_milliamps` (0x6075, mA) and `rated_torque_millinewton_metres` (0x6076, mN*m)
    as the drive stores them; `torque_constant` K_T in N*m/A. Target torque and current actual
    are per-mille of them.
    """

    rated_current_milliamps: int
    rated_torque_millinewton_metres: int
    torque_constant: float

    def __post_init__(self) -> None:
        if self.rated_current_milliamps <= 0 or self.rated_torque_millinewton_metres <= 0:
            raise CanopenConfigurationError(
                f"motor rated current ({self.rated_current_milliamps} mA) and rated torque "
                f"({self.rated_torque_millinewton_metres} mN*m) must be > 0"
            )

    @classmethod
    def for_motor(cls, motor: MotorParameters) -> TorqueScaling:
        """The values a drive commissioned from the parameter file holds: I_cont, K_T * I_cont."""
        return cls(
            rated_current_milliamps=round(motor.continuous_current * MILLI),
            rated_torque_millinewton_metres=round(motor.continuous_torque * MILLI),
            torque_constant=motor.torque_constant,
        )

    @property
    def rated_current(self) -> float:
        """A."""
        return self.rated_current_milliamps / MILLI

    @property
    def rated_torque(self) -> float:
        """N*m."""
        return self.rated_torque_millinewton_metres / MILLI

    def target_torque(self, current: float) -> int:
        """0x6071 value (per-mille of rated torque, int16) for a q-axis current command in A."""
        value = round(PER_MILLE * self.torque_constant * current / self.rated_torque)
        return max(-INT16_MAX, min(INT16_MAX, value))

    def current_for_target_torque(self, target_torque: int) -> float:
        """q-axis current (A) that a 0x6071 value asks for: (per-mille * T_rated / 1000) / K_T."""
        return target_torque * self.rated_torque / PER_MILLE / self.torque_constant

    def current_actual(self, current: float) -> int:
        """0x6078 value (per-mille of rated current, int16) for a current in A."""
        value = round(PER_MILLE * current / self.rated_current)
        return max(-INT16_MAX, min(INT16_MAX, value))

    def current(self, current_actual: int) -> float:
        """Current (A) that a 0x6078 value reports."""
        return current_actual * self.rated_current / PER_MILLE


# --- bus load -------------------------------------------------------------------------------------
def can_frame_bits(data_bytes: int, *, worst_case_stuffing: bool = False) -> int:
    """Bits on the wire of a CAN 2.0A data frame with `data_bytes` (0-8), interframe space included.

    47 + 8n bits (SOF, 11-bit id, RTR, IDE, r0, DLC, data, CRC, delimiters, ACK, EOF, 3-bit
    intermission); bit stuffing adds at most one bit per 4 after the first over the 34 + 8n bits
    from SOF to the CRC.
    """
    if not 0 <= data_bytes <= 8:
        raise ValueError(f"a CAN frame carries 0 to 8 data bytes, got {data_bytes}")
    bits = 47 + 8 * data_bytes
    if worst_case_stuffing:
        bits += (34 + 8 * data_bytes - 1) // 4
    return bits


@dataclass(frozen=True)
class BusLoad:
    frames_per_cycle: int
    bits_per_cycle: int  # nominal, no stuff bits
    worst_bits_per_cycle: int  # worst-case bit stuffing
    cycle_time: float  # s, the SYNC period
    bitrate: int  # bit/s

    @property
    def load(self) -> float:
        """Fraction of the bus busy per cycle, nominal."""
        return self.bits_per_cycle / self.bitrate / self.cycle_time

    @property
    def worst_load(self) -> float:
        """Fraction of the bus busy per cycle with worst-case bit stuffing."""
        return self.worst_bits_per_cycle / self.bitrate / self.cycle_time


def bus_load(canopen_parameters: CanopenParameters, nodes: int | None = None) -> BusLoad:
    """Load of one cycle on one bus: SYNC + RPDO1, TPDO1, TPDO2 of `nodes` drives.

    Default: the busiest bus of the parameter file (canopen.channels).
    """
    if nodes is None:
        channels = canopen_parameters.channels
        count = max(len(canopen_parameters.axes_on(c)) for c in set(channels.values()))
    else:
        count = nodes
    payloads = [0] + [
        sum(bits for _, bits in m) // 8 for m in (RPDO1_MAPPING, TPDO1_MAPPING, TPDO2_MAPPING)
    ] * count
    return BusLoad(
        frames_per_cycle=len(payloads),
        bits_per_cycle=sum(can_frame_bits(n) for n in payloads),
        worst_bits_per_cycle=sum(can_frame_bits(n, worst_case_stuffing=True) for n in payloads),
        cycle_time=canopen_parameters.sync_period,
        bitrate=canopen_parameters.bitrate,
    )


# --- the master-side drive ------------------------------------------------------------------------
_COMMUNICATION_ERRORS = (SdoCommunicationError, SdoAbortedError, can.CanError, OSError)


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
    ) -> None:
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
        self.clock = clock
        self.node = canopen.RemoteNode(self.node_id, str(eds))
        network.add_node(self.node)
        self._lock = threading.Condition()
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
        self._drive_fault_text: str | None = None  # cached 0x603F text of the current fault

    def __repr__(self) -> str:
        return f"CanopenDrive({self.name!r}, node {self.node_id})"

    # --- start-up ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Check the drive's scaling, set CST mode and the PDO mapping by SDO, then NMT start.

        Raises CanopenConfigurationError if the drive's rated current/torque or encoder
        resolution differ from the parameter file, DriveError if the bus does not answer.
        """
        if self.node.network.bus is None:
            raise DriveError(f"{self._who()}: the CANopen network is not connected (call network.connect())")
        try:
            self.node.nmt.state = "PRE-OPERATIONAL"
            self._check_scaling()
            self.node.sdo[QUICK_STOP_OPTION_CODE].raw = QUICK_STOP_AND_STAY
            self.node.sdo[MODES_OF_OPERATION].raw = MODE_CYCLIC_SYNCHRONOUS_TORQUE
            mode = self.node.sdo[MODES_OF_OPERATION_DISPLAY].raw
            if mode != MODE_CYCLIC_SYNCHRONOUS_TORQUE:
                raise CanopenConfigurationError(
                    f"{self._who()}: modes of operation display 0x6061 is {mode} after setting "
                    f"cyclic synchronous torque ({MODE_CYCLIC_SYNCHRONOUS_TORQUE})"
                )
            self._configure_pdos()
            statusword = self.node.sdo[STATUSWORD].raw
            position = self.node.sdo[POSITION_ACTUAL].raw
            velocity = self.node.sdo[VELOCITY_ACTUAL].raw
            current = self.node.sdo[CURRENT_ACTUAL].raw
            self.node.nmt.state = "OPERATIONAL"
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: start-up failed: {error}") from error
        with self._lock:
            self._statusword = statusword
            self._position_counts, self._velocity_counts, self._current_actual = position, velocity, current
            self._tpdo_times = [None, None]  # the watchdog arms at the first TPDOs
            self._started = True

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

    def _configure_pdos(self) -> None:
        for pdo, mapping, cob_base, transmission in (
            (self.node.rpdo[1], RPDO1_MAPPING, RPDO1_COB_BASE, TRANSMISSION_EVENT),
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
        self.node.tpdo[1].callbacks = [self._on_tpdo1]
        self.node.tpdo[2].callbacks = [self._on_tpdo2]
        self.node.rpdo[1][CONTROLWORD].raw = self._controlword
        self.node.rpdo[1][TARGET_TORQUE].raw = 0

    # --- TPDO reception (network thread) ------------------------------------------------------------
    def _on_tpdo1(self, pdo: canopen.pdo.PdoMap) -> None:
        statusword, position = pdo[STATUSWORD].raw, pdo[POSITION_ACTUAL].raw
        now = self.clock()
        with self._lock:
            self._statusword, self._position_counts = statusword, position
            self._tpdo_times[0] = now
            self._tpdo_counts[0] += 1
            self._lock.notify_all()

    def _on_tpdo2(self, pdo: canopen.pdo.PdoMap) -> None:
        velocity, current = pdo[VELOCITY_ACTUAL].raw, pdo[CURRENT_ACTUAL].raw
        now = self.clock()
        with self._lock:
            self._velocity_counts, self._current_actual = velocity, current
            self._tpdo_times[1] = now
            self._tpdo_counts[1] += 1
            self._lock.notify_all()

    @property
    def feedback_count(self) -> int:
        """Complete feedback sets (TPDO1 and TPDO2) received since construction."""
        with self._lock:
            return min(self._tpdo_counts)

    def wait_for_feedback(self, count: int, timeout: float) -> bool:
        """Wait until `feedback_count` >= count or `timeout` s (wall clock) pass; True if reached."""
        with self._lock:
            return self._lock.wait_for(lambda: min(self._tpdo_counts) >= count, timeout)

    @property
    def cia402_state(self) -> Cia402State:
        """The drive's CiA 402 state from the last statusword received."""
        with self._lock:
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
        try:
            self.node.sdo[TARGET_TORQUE].raw = 0
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: cannot zero the target torque 0x6071: {error}") from error
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
                raise DriveError(f"{self._who()} faulted while enabling ({self._fault_reason()})")
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
        """ENABLED -> DISABLED (Disable voltage: power stage off). QUICK_STOP and FAULT stay latched."""
        self._check_watchdog()
        if self._state() is DriveState.ENABLED:
            self._write_controlword(CW_DISABLE_VOLTAGE)
            self._read_state()

    def quick_stop(self) -> None:
        """Quick stop: torque to zero, the drive stays in Quick stop active; latched until reset_fault().

        Sent at once by RPDO (best effort, also when the feedback timed out), then confirmed by
        SDO while the bus answers. A FAULT is kept as it is.
        """
        self._controlword = CW_QUICK_STOP
        self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)
        if self._state() is DriveState.FAULT:
            return
        self._quick_stop_latched = True
        try:
            self.node.sdo[CONTROLWORD].raw = CW_QUICK_STOP
            self._read_state()
        except _COMMUNICATION_ERRORS as error:
            self._latch_fault(f"quick stop not confirmed, the drive does not answer: {error}")

    def reset_fault(self) -> None:
        """FAULT or QUICK_STOP -> DISABLED: CiA 402 fault reset (rising edge of bit 7) or Disable voltage.

        No-op otherwise. Re-arms the feedback watchdog. DriveError if the drive does not answer
        or stays faulted (the cause persists).
        """
        if self._state() not in (DriveState.FAULT, DriveState.QUICK_STOP):
            return
        state = self._read_state()
        if state in (Cia402State.FAULT, Cia402State.FAULT_REACTION_ACTIVE):
            self._write_controlword(CW_DISABLE_VOLTAGE)
            self._write_controlword(CW_FAULT_RESET)
        self._write_controlword(CW_DISABLE_VOLTAGE)
        deadline = time.monotonic() + self.bus.transition_timeout
        while (state := self._read_state()) is not Cia402State.SWITCH_ON_DISABLED:
            if time.monotonic() > deadline:
                raise DriveError(
                    f"{self._who()}: fault reset did not reach Switch on disabled within "
                    f"{self.bus.transition_timeout} s: it is in {state.value} ({self._fault_reason()})"
                )
        now = self.clock()
        with self._lock:
            self._master_fault = None
            self._drive_fault_text = None
            self._quick_stop_latched = False
            self._tpdo_times = [now, now]

    def command_current(self, current: float) -> None:
        """Send the q-axis current reference (A) as target torque 0x6071 in RPDO1.

        Clipped to +-max_current, then quantized to one per-mille of the rated torque.
        Non-finite or not a number: quick stop, then DriveError. In FAULT: DriveError. While
        DISABLED or QUICK_STOP the command is ignored (nothing is sent).
        """
        try:
            value = float(current)
        except (TypeError, ValueError) as error:
            self.quick_stop()
            raise DriveError(f"{self._who()}: current command must be a number, got {current!r}") from error
        if not math.isfinite(value):
            self.quick_stop()
            raise DriveError(f"{self._who()}: non-finite current command {current!r}: quick stop")
        self._check_watchdog()
        state = self._state()
        if state is DriveState.FAULT:
            raise DriveError(f"{self._who()} is in FAULT ({self._fault_reason()}): command refused")
        if state is DriveState.ENABLED:
            limit = self.motor.max_current
            clipped = min(max(value, -limit), limit)
            self._send_rpdo(CW_ENABLE_OPERATION, self.scaling.target_torque(clipped))

    def feedback(self) -> DriveFeedback:
        """The latest TPDO values in joint units, and the state (checks the feedback timeout)."""
        self._check_watchdog()
        with self._lock:
            counts, velocity_counts, current_actual = (
                self._position_counts,
                self._velocity_counts,
                self._current_actual,
            )
        state = self._state()
        current = self.scaling.current(current_actual)
        return DriveFeedback(
            position=self.encoder.position(counts),
            velocity=velocity_counts * self.encoder.resolution,
            current=current,
            effort=self.motor.torque_constant * current * self.transmission.ratio * self.efficiency,
            state=state,
            fault=self._fault_reason() if state is DriveState.FAULT else None,
        )

    def stop(self) -> None:
        """Quick stop if the drive is enabled, then NMT pre-operational (no more PDOs); best effort."""
        if self._started and self._state() is DriveState.ENABLED:
            self.quick_stop()
        with contextlib.suppress(*_COMMUNICATION_ERRORS):
            self.node.nmt.state = "PRE-OPERATIONAL"
        self._started = False

    # --- internals ----------------------------------------------------------------------------------
    def _who(self) -> str:
        return f"drive {self.name} (CANopen node {self.node_id})"

    def _state(self) -> DriveState:
        with self._lock:
            if self._master_fault is not None:
                return DriveState.FAULT
            try:
                state = drive_state(decode_statusword(self._statusword))
            except StatuswordError as error:
                self._master_fault = f"invalid statusword from the drive: {error}"
                return DriveState.FAULT
        if state is DriveState.FAULT:
            return state
        return DriveState.QUICK_STOP if self._quick_stop_latched else state

    def _latch_fault(self, reason: str) -> None:
        with self._lock:
            if self._master_fault is None:
                self._master_fault = reason

    def _wait_for_first_feedback(self) -> None:
        """Feedback must flow before the drive is enabled: wait for the first TPDOs after start()."""
        with self._lock:
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
        with self._lock:
            if self._master_fault is not None or None in self._tpdo_times:
                return
            age = now - min(self._tpdo_times)
            stale = age > self.bus.feedback_timeout
            if stale:
                self._master_fault = (
                    f"feedback timeout: no TPDO from node {self.node_id} for {age:.4f} s (limit "
                    f"{self.bus.feedback_timeout:.4f} s = {self.bus.feedback_timeout_periods} SYNC periods)"
                )
        if stale:
            self._controlword = CW_QUICK_STOP
            self._send_rpdo(CW_QUICK_STOP, 0, best_effort=True)

    def _fault_reason(self) -> str:
        with self._lock:
            if self._master_fault is not None:
                return self._master_fault
            if self._drive_fault_text is not None:
                return self._drive_fault_text
        try:
            text = describe_error_code(self.node.sdo[ERROR_CODE].raw)
        except _COMMUNICATION_ERRORS as error:
            return f"drive fault, error code 0x603F unreadable: {error}"
        with self._lock:
            self._drive_fault_text = text
        return text

    def _send_rpdo(self, controlword: int, target_torque: int, *, best_effort: bool = False) -> None:
        if not self._started:
            return
        rpdo = self.node.rpdo[1]
        try:
            rpdo[CONTROLWORD].raw = controlword
            rpdo[TARGET_TORQUE].raw = target_torque
            rpdo.transmit()
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

    def _read_state(self) -> Cia402State:
        try:
            statusword = self.node.sdo[STATUSWORD].raw
        except _COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: statusword 0x6041 not readable: {error}") from error
        with self._lock:
            self._statusword = statusword
        try:
            return decode_statusword(statusword)
        except StatuswordError as error:
            self._latch_fault(f"invalid statusword from the drive: {error}")
            raise DriveError(f"{self._who()}: {error}") from error


def canopen_drives_for_robot(
    params: RobotParameters,
    network: canopen.Network,
    *,
    axes: Iterable[str] = CANOPEN_AXES,
    start: bool = True,
    efficiency: bool = True,
    eds: str | Path = DEFAULT_EDS,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, CanopenDrive]:
    """One CanopenDrive per axis (joints and the drill feed), node ids from params.canopen.

    `network` must be connected; with `start` each drive is configured and started (SDO, NMT).
    The SYNC producer (`network.sync.start(params.canopen.sync_period)`) is the caller's.
    """
    drives: dict[str, CanopenDrive] = {}
    for axis in axes:
        if axis not in params.canopen.node_ids:
            raise ValueError(f"no CANopen node id for axis {axis!r}: axes are {', '.join(CANOPEN_AXES)}")
        if axis == DRILL_FEED_JOINT:
            motor, transmission = params.drill.motor, params.drill.transmission
        else:
            joint = params.joint(axis)
            motor, transmission = joint.motor, joint.transmission
        drives[axis] = CanopenDrive(
            axis,
            network,
            params.canopen.node_ids[axis],
            motor,
            transmission,
            params.drive,
            params.canopen,
            efficiency=efficiency,
            eds=eds,
            clock=clock,
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
    return {axis: drives[axis] for axis in CANOPEN_AXES}
