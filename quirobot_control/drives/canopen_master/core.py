"""The CANopen drive's common ground: its state as the host sees it, and the frames it sends.

The state (`_state`: the latched faults and quick stop over the last statusword) and the
transmit path (RPDO1 now, one preallocated frame; a controlword by SDO; the statusword read by
SDO) that the state machine, the commands and the feedback watchdog all use.
"""

from __future__ import annotations

import functools
import struct

import can
from canopen.sdo import SdoAbortedError, SdoCommunicationError

from quirobot_control.drives.cia402 import (
    CONTROLWORD,
    STATUSWORD,
    TARGET_TORQUE,
    TORQUE_OFFSET,
    TPDO1_MAPPING,
    TPDO2_MAPPING,
    TPDO_LAYOUTS,
    Cia402State,
    StatuswordError,
    decode_statusword,
    drive_state,
)
from quirobot_control.drives.interface import DriveError, DriveState

COMMUNICATION_ERRORS = (SdoCommunicationError, SdoAbortedError, can.CanError, OSError)
#: CiA 402 states of a drive still carrying out a stop (its ramp, or the brake engaging under power).
STOPPING_STATES = (Cia402State.QUICK_STOP_ACTIVE, Cia402State.FAULT_REACTION_ACTIVE)

#: decode_statusword, memoized: a drive reports a handful of statuswords, and the per-cycle path
#: decodes the latest one several times per period (a StatuswordError is raised every time, not
#: cached).
decode_statusword_cached = functools.lru_cache(maxsize=256)(decode_statusword)


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
TPDO1_LAYOUT, TPDO2_LAYOUT = TPDO_LAYOUTS[TPDO1_MAPPING], TPDO_LAYOUTS[TPDO2_MAPPING]


class CanopenDriveCore:
    """The drive's state as the host sees it, and the frames it sends (RPDO, controlword SDO).

    A part of `CanopenDrive` (quirobot_control.drives.canopen_master): its state is set up in
    `CanopenDrive.__init__`.
    """

    def latch_fault(self, reason: str) -> None:
        """Latch a fault found by the owner of the bus (e.g. bus off); no bus I/O."""
        self._latch_fault(reason)

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
                return decode_statusword_cached(self._statusword)
            except StatuswordError:
                return None

    def _latch_fault(self, reason: str) -> None:
        with self._mutex:
            if self._master_fault is None:
                self._master_fault = reason

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
        except COMMUNICATION_ERRORS as error:
            if not best_effort:
                self._latch_fault(f"RPDO not sent: {error}")
                raise DriveError(f"{self._who()}: RPDO not sent: {error}") from error

    def _write_controlword(self, controlword: int) -> None:
        try:
            self.node.sdo[CONTROLWORD].raw = controlword
        except COMMUNICATION_ERRORS as error:
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
        except COMMUNICATION_ERRORS as error:
            raise DriveError(f"{self._who()}: statusword 0x6041 not readable: {error}") from error
        with self._mutex:
            self._statusword = statusword
        try:
            return decode_statusword(statusword)
        except StatuswordError as error:
            self._latch_fault(f"invalid statusword from the drive: {error}")
            raise DriveError(f"{self._who()}: {error}") from error
