"""The slave side of the CiA 402 profile, as data and pure functions: the objects and error codes
the simulated drive serves, the state machine on a controlword write (`next_state`) and the
statusword reporting a state (`statusword_for`). The shared tables are drives.cia402's.
"""

from __future__ import annotations

from quirobot_control.drives.cia402 import (
    HOME_OFFSET,
    HOMING_ACCELERATION,
    HOMING_METHOD,
    HOMING_SPEEDS,
    MODE_CYCLIC_SYNCHRONOUS_POSITION,
    MODE_CYCLIC_SYNCHRONOUS_TORQUE,
    MODE_HOMING,
    MODES_OF_OPERATION,
    MOTOR_RATED_CURRENT,
    MOTOR_RATED_TORQUE,
    POSITION_CONTROL_PARAMETERS,
    POSITION_ENCODER_RESOLUTION,
    QUICK_STOP_DECELERATION,
    STATUSWORD_PATTERNS,
    SW_REMOTE,
    SW_VOLTAGE_ENABLED,
    Cia402State,
)
from quirobot_control.drives.interface import DriveMode
from quirobot_description.machine_identity import SERIAL_NUMBER_OBJECT

ERROR_REGISTER = 0x1001
#: Error code of the SimulatedDrive's own overspeed fault (CiA 402: velocity speed controller).
OVERSPEED_ERROR_CODE = 0x8400
#: Error register bit 0: generic error (CiA 301), set while a fault is active.
ERROR_REGISTER_GENERIC = 0x01
#: Error register bit 4: communication error (CiA 301), with a master-loss EMCY.
ERROR_REGISTER_COMMUNICATION = 0x10
#: EMCY error codes of a lost master (CiA 301): heartbeat consumer event; SYNC loss (generic
#: communication error: CiA 301 has no code of its own for it).
HEARTBEAT_ERROR_CODE = 0x8130
SYNC_LOST_ERROR_CODE = 0x8100
#: Modes of operation (0x6060) this drive runs.
MODES = {
    MODE_HOMING: DriveMode.HOMING,
    MODE_CYCLIC_SYNCHRONOUS_POSITION: DriveMode.CSP,
    MODE_CYCLIC_SYNCHRONOUS_TORQUE: DriveMode.CST,
}
#: Objects written only while the drive is not Operation enabled (the drive's configuration).
CONFIGURATION_OBJECTS = (
    MODES_OF_OPERATION,
    POSITION_CONTROL_PARAMETERS,
    QUICK_STOP_DECELERATION,
    HOMING_METHOD,
    HOMING_SPEEDS,
    HOMING_ACCELERATION,
    HOME_OFFSET,
)
FAULT_STATES = (Cia402State.FAULT, Cia402State.FAULT_REACTION_ACTIVE)
#: Objects a restart keeps (the drive's rating and its identity 0x1018, serial number included,
#: written at the factory; everything else is volatile).
FACTORY_OBJECTS = (
    MOTOR_RATED_CURRENT,
    MOTOR_RATED_TORQUE,
    POSITION_ENCODER_RESOLUTION,
    SERIAL_NUMBER_OBJECT[0],
)
SDO_VALUE_RANGE_EXCEEDED = 0x06090030  # CiA 301 SDO abort codes
SDO_STATE_CONFLICT = 0x08000022  # data cannot be transferred in the present device state


def next_state(state: Cia402State, controlword: int, previous_controlword: int) -> Cia402State:
    """The CiA 402 state after a controlword write (before automatic transitions).

    Commands (CiA 402 controlword bits 7, 3, 2, 1, 0): shutdown x110 (bit 7 = 0), switch on
    0111, enable operation 1111, disable voltage xx0x, quick stop x01x, fault reset = rising
    edge of bit 7. "Switch on" from Ready to switch on with bit 3 set enables operation at once
    (transitions 3 + 4); Quick stop active -> Operation enabled (16) is left to the caller's
    option code.
    """
    fault_reset = bool(controlword & 0x80) and not previous_controlword & 0x80
    if state is Cia402State.FAULT:
        return Cia402State.SWITCH_ON_DISABLED if fault_reset else state
    if state in (Cia402State.FAULT_REACTION_ACTIVE, Cia402State.NOT_READY_TO_SWITCH_ON):
        return state
    if controlword & 0x80:  # bit 7 set outside Fault: no command
        return state
    disable_voltage = controlword & 0x02 == 0
    quick_stop = controlword & 0x06 == 0x02
    shutdown = controlword & 0x07 == 0x06
    switch_on = controlword & 0x0F == 0x07
    enable_operation = controlword & 0x0F == 0x0F
    if state is Cia402State.SWITCH_ON_DISABLED:
        return Cia402State.READY_TO_SWITCH_ON if shutdown else state
    if state is Cia402State.READY_TO_SWITCH_ON:
        if disable_voltage or quick_stop:
            return Cia402State.SWITCH_ON_DISABLED
        if switch_on:
            return Cia402State.SWITCHED_ON
        return Cia402State.OPERATION_ENABLED if enable_operation else state
    if state is Cia402State.SWITCHED_ON:
        if disable_voltage or quick_stop:
            return Cia402State.SWITCH_ON_DISABLED
        if shutdown:
            return Cia402State.READY_TO_SWITCH_ON
        return Cia402State.OPERATION_ENABLED if enable_operation else state
    if state is Cia402State.OPERATION_ENABLED:
        if disable_voltage:
            return Cia402State.SWITCH_ON_DISABLED
        if quick_stop:
            return Cia402State.QUICK_STOP_ACTIVE
        if shutdown:
            return Cia402State.READY_TO_SWITCH_ON
        return Cia402State.SWITCHED_ON if switch_on else state
    # Quick stop active
    if disable_voltage:
        return Cia402State.SWITCH_ON_DISABLED
    return Cia402State.OPERATION_ENABLED if enable_operation else state


def statusword_for(state: Cia402State) -> int:
    """A statusword reporting `state`: its CiA 402 pattern, plus voltage enabled and remote bits."""
    value = STATUSWORD_PATTERNS[state][1] | SW_REMOTE
    if state in (
        Cia402State.READY_TO_SWITCH_ON,
        Cia402State.SWITCHED_ON,
        Cia402State.OPERATION_ENABLED,
        Cia402State.QUICK_STOP_ACTIVE,
    ):
        value |= SW_VOLTAGE_ENABLED
    return value
