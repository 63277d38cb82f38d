"""The CiA 402 tables: the drive's object dictionary, PDO mappings, controlwords, states, error codes.

What the master (drives.canopen_master) and the simulated slave (drive_simulators.canopen_slave) share,
as data: the object indices they exchange, the statusword (mask, value) of each state of the
CiA 402 state machine, the controlwords of its transitions and the error codes' meanings
(test_canopen_units.py checks them against canopen's own CiA 402 profile).

Object dictionary (config/quirobot_drive.eds, CiA 402 units):

    0x6040 controlword        UNSIGNED16  RPDO1        0x6041 statusword          UNSIGNED16  TPDO1
    0x6071 target torque      INTEGER16   RPDO1, per-mille of the motor rated torque 0x6076
    0x6064 position actual    INTEGER32   TPDO1, encoder increments (counts)
    0x606C velocity actual    INTEGER32   TPDO2, increments per second
    0x6078 current actual     INTEGER16   TPDO2, per-mille of the motor rated current 0x6075
    0x6075 motor rated current UNSIGNED32 mA    0x6076 motor rated torque UNSIGNED32 mN*m
    0x608F position encoder resolution: increments (sub 1) per motor revolutions (sub 2)
    0x6060 / 0x6061 modes of operation (display): 8 = cyclic synchronous position (CSP, the
                      default on real motors), 10 = cyclic synchronous torque (CST), 6 = homing
    0x607A target position    INTEGER32   RPDO2, counts     0x60B1 velocity offset INTEGER32 RPDO2, counts/s
    0x60B2 torque offset      INTEGER16   RPDO1, per-mille of 0x6076 (CSP current feed-forward)
    0x605A quick stop option code: 2 = ramp at 0x6085 then Switch on disabled (stop category 1)
    0x6085 quick stop deceleration UNSIGNED32, counts/s^2
    0x6007 abort connection option code: 3 = quick stop when the master is lost
    0x1016 consumer heartbeat time: sub 1 = master node id << 16 | time in ms (CiA 301)
    0x60FB position control parameter set (REAL32, the project's PID in SI units: sub 1 kp A/m
           or A/rad, 2 ki, 3 kd, 4 derivative filter s, 5 output limit A; CiA 402 names the index,
           the sub-entries are the manufacturer's)
    0x607C home offset INTEGER32: the position (counts) the drive reports at the home switch's edge
    0x6098 homing method, 0x6099 homing speeds (sub 1 switch search, sub 2 zero search, counts/s),
    0x609A homing acceleration (counts/s^2)
    0x603F error code: the reason of a fault (CiA 301 / CiA 402 error codes)

`drive_state` maps a CiA 402 state to the project's `DriveState`: Operation enabled -> ENABLED;
Quick stop active -> QUICK_STOP; Fault reaction active and Fault -> FAULT; every other state ->
DISABLED.
"""

from __future__ import annotations

import enum
import struct

from canopen.emcy import EmcyError

from quirobot_control.drives.interface import DriveState
from quirobot_description.data_files import find_data_file

#: The object dictionary of the drive (CiA 306 EDS), shipped with this package.
DEFAULT_EDS = find_data_file("config/quirobot_drive.eds")

# --- object dictionary indices (CiA 301, CiA 402) ------------------------------------------------
CONSUMER_HEARTBEAT_TIME = 0x1016
PRODUCER_HEARTBEAT_TIME = 0x1017
ABORT_CONNECTION_OPTION_CODE = 0x6007
ERROR_CODE = 0x603F
CONTROLWORD = 0x6040
STATUSWORD = 0x6041
QUICK_STOP_OPTION_CODE = 0x605A
MODES_OF_OPERATION = 0x6060
MODES_OF_OPERATION_DISPLAY = 0x6061
POSITION_ACTUAL = 0x6064
VELOCITY_ACTUAL = 0x606C
TARGET_TORQUE = 0x6071
TARGET_POSITION = 0x607A
HOME_OFFSET = 0x607C  # the joint coordinate of the home position (counts)
QUICK_STOP_DECELERATION = 0x6085
HOMING_METHOD = 0x6098
HOMING_SPEEDS = 0x6099  # sub 1: search for the switch, sub 2: search for zero
HOMING_ACCELERATION = 0x609A
VELOCITY_OFFSET = 0x60B1
TORQUE_OFFSET = 0x60B2
POSITION_CONTROL_PARAMETERS = 0x60FB
#: 0x60FB sub-indices (REAL32): the fields of drives.pid.PIDGains, in SI units.
POSITION_CONTROL_SUBINDICES = {"kp": 1, "ki": 2, "kd": 3, "derivative_filter": 4, "output_limit": 5}
MOTOR_RATED_CURRENT = 0x6075
MOTOR_RATED_TORQUE = 0x6076
CURRENT_ACTUAL = 0x6078
POSITION_ENCODER_RESOLUTION = 0x608F

#: PDO mappings: (object index, bits) in frame order; PDO COB-ID = base + node id (CiA 301).
RPDO1_MAPPING = ((CONTROLWORD, 16), (TARGET_TORQUE, 16), (TORQUE_OFFSET, 16))
RPDO2_MAPPING = ((TARGET_POSITION, 32), (VELOCITY_OFFSET, 32))
TPDO1_MAPPING = ((STATUSWORD, 16), (POSITION_ACTUAL, 32))
TPDO2_MAPPING = ((VELOCITY_ACTUAL, 32), (CURRENT_ACTUAL, 16))
#: TPDO1 (statusword UNSIGNED16, position actual INTEGER32) and TPDO2 (velocity actual INTEGER32,
#: current actual INTEGER16) as CiA 301 lays them out (little-endian, in mapping order): the
#: simulated drive packs its answers with them, the master decodes them (canopen's PdoMap
#: decodes variable by variable: about 11 us per frame against 1.4 us, bench/drive_loop.py).
#: Checked against canopen's own encoding (test_drive_cycle.py).
TPDO_LAYOUTS = {TPDO1_MAPPING: struct.Struct("<Hi"), TPDO2_MAPPING: struct.Struct("<ih")}
RPDO1_COB_BASE, RPDO2_COB_BASE, TPDO1_COB_BASE, TPDO2_COB_BASE = 0x200, 0x300, 0x180, 0x280
SYNC_COB_ID = 0x80
HEARTBEAT_COB_BASE = 0x700  # NMT error control: heartbeat of node n on 0x700 + n
NMT_OPERATIONAL_STATE = 5  # heartbeat byte of an operational node (CiA 301)
#: CiA 301 transmission types: 1 = on every SYNC; 255 = event-driven (applied on reception).
TRANSMISSION_SYNCHRONOUS = 1
TRANSMISSION_EVENT = 255

#: 0x6060 values (CiA 402 modes of operation).
MODE_HOMING = 6
MODE_CYCLIC_SYNCHRONOUS_POSITION = 8
MODE_CYCLIC_SYNCHRONOUS_TORQUE = 10
#: 0x605A values (CiA 402): 0 disable the drive function at once (stop category 0); 2 ramp at the
#: quick-stop deceleration 0x6085, then Switch on disabled (category 1: the brake engages at
#: standstill); 6 the same ramp, then stay in Quick stop active holding position (category 2).
QUICK_STOP_DISABLE = 0
QUICK_STOP_RAMP_THEN_DISABLE = 2
QUICK_STOP_AND_STAY = 6
#: 0x6007 value: on a lost connection (heartbeat, SYNC), execute the Quick stop command (CiA 402).
ABORT_CONNECTION_QUICK_STOP = 3
#: Homing methods (0x6098, CiA 402): 17 the negative limit switch, 18 the positive one, searched
#: at the switch-search speed towards it, then left at the zero-search speed: the home position
#: is the switch's edge (the axis's switch sits on the side away from the patient).
HOMING_NEGATIVE_SWITCH = 17
HOMING_POSITIVE_SWITCH = 18

# --- controlword commands (CiA 402, bits: 0 switch on, 1 enable voltage, 2 quick stop (low
# active), 3 enable operation, 7 fault reset) -------------------------------------------------------
CW_DISABLE_VOLTAGE = 0x0000
CW_QUICK_STOP = 0x0002
CW_SHUTDOWN = 0x0006
CW_SWITCH_ON = 0x0007  # also "disable operation" from Operation enabled
CW_ENABLE_OPERATION = 0x000F
CW_FAULT_RESET = 0x0080  # on the rising edge of bit 7
CW_HOMING_START = 0x0010  # bit 4 in homing mode: start homing (rising edge)
CW_HALT = 0x0100  # bit 8: halt (decelerate at the quick-stop ramp, hold: stop category 2)

# --- statusword bits on top of the state pattern (CiA 402) -------------------------------------------
SW_VOLTAGE_ENABLED = 0x0010  # bit 4
SW_REMOTE = 0x0200  # bit 9
SW_TARGET_REACHED = 0x0400  # bit 10: standstill after a halt or stop; homing finished
SW_HOMING_ATTAINED = 0x1000  # bit 12 in homing mode (and kept here once homed)
SW_HOMING_ERROR = 0x2000  # bit 13 in homing mode


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
    0x7300: "sensor",
    0x7305: "incremental sensor 1 fault (encoder)",
    0x7320: "position sensor",
    0x8130: "life guard or heartbeat error",
    0x8400: "velocity speed controller (overspeed)",
    0x8611: "following error",
}


#: Error codes after which the drive's position can no longer be trusted (an encoder or position
#: sensor fault): the axis must home again (CiA 301 sensor codes).
POSITION_LOST_ERROR_CODES = frozenset({0x7300, 0x7305, 0x7320})


def fault_reaction_ramps(code: int) -> bool:
    """The fault leaves the drive in control of its motor, so it reacts with the quick-stop ramp
    (fault reaction option 0x605E = 2: category 1): temperature (0x4xxx), communication (0x81xx)
    and following-error (0x86xx) codes. Any other (current, voltage, STO, sensor, overspeed):
    torque off and brake at once (category 0)."""
    return (code & 0xF000) == 0x4000 or (code & 0xFF00) in (0x8100, 0x8600)


def describe_error_code(code: int) -> str:
    """'error code 0x2310: continuous over-current' (CiA tables; the class name if not listed)."""
    text = ERROR_CODES.get(code)
    if text is None:
        text = EmcyError(code, 0, b"", 0.0).get_desc().lower() or "unknown"
    return f"error code 0x{code:04X}: {text}"
