"""The CiA 402 tables: the drive's object dictionary, PDO mappings, controlwords, states, error codes.

What the master (drives.canopen_master) and the simulated slave (drives.slave_simulator) share,
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
    0x6060 / 0x6061 modes of operation (display): 10 = cyclic synchronous torque (CST)
    0x605A quick stop option code: 6 = stop, then stay in Quick stop active
    0x603F error code: the reason of a fault (CiA 301 / CiA 402 error codes)

`drive_state` maps a CiA 402 state to the project's `DriveState`: Operation enabled -> ENABLED;
Quick stop active -> QUICK_STOP; Fault reaction active and Fault -> FAULT; every other state ->
DISABLED.
"""

from __future__ import annotations

import enum

from canopen.emcy import EmcyError

from quirobot_control.drives.interface import DriveState
from quirobot_description.data_files import find_data_file

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
