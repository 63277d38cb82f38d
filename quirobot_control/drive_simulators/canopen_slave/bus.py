"""The simulated drive's CANopen side: joining the network, NMT, PDO mapping read on entering
operational, the RPDOs, the SDO server's read and write callbacks, the master's heartbeat and the
SYNC that advances the drive (network thread).
"""

from __future__ import annotations

import struct
import time

import can
import canopen
from canopen.sdo import SdoAbortedError

from quirobot_control.drive_simulators.canopen_slave.profile import (
    CONFIGURATION_OBJECTS,
    ERROR_REGISTER,
    ERROR_REGISTER_GENERIC,
    MODES,
    SDO_STATE_CONFLICT,
    SDO_VALUE_RANGE_EXCEEDED,
)
from quirobot_control.drives.cia402 import (
    ABORT_CONNECTION_OPTION_CODE,
    CONSUMER_HEARTBEAT_TIME,
    CONTROLWORD,
    CURRENT_ACTUAL,
    ERROR_CODE,
    HEARTBEAT_COB_BASE,
    HOMING_METHOD,
    MODES_OF_OPERATION,
    MODES_OF_OPERATION_DISPLAY,
    POSITION_ACTUAL,
    QUICK_STOP_DECELERATION,
    QUICK_STOP_OPTION_CODE,
    STATUSWORD,
    SYNC_COB_ID,
    TARGET_POSITION,
    TARGET_TORQUE,
    TORQUE_OFFSET,
    TPDO1_MAPPING,
    TPDO_LAYOUTS,
    VELOCITY_ACTUAL,
    VELOCITY_OFFSET,
    Cia402State,
)
from quirobot_description.parameters import HOMING_METHOD_DIRECTIONS


class SlaveBus:
    """NMT, PDOs, SDO callbacks, heartbeat and SYNC of the simulated drive.

    A part of `CanopenServoSimulator` (drive_simulators.canopen_slave), whose state it uses.
    """

    def attach(self, network: canopen.Network) -> None:
        """Join `network` (connected, its own bus on the master's channel) and boot pre-operational."""
        self.network = network
        network.add_node(self.node)
        network.subscribe(SYNC_COB_ID, self._on_sync)
        network.subscribe(0, self._on_nmt)
        if self._heartbeat_subscription is not None:
            network.subscribe(self._heartbeat_subscription, self._on_heartbeat)
        self.node.nmt.state = "PRE-OPERATIONAL"

    def detach(self) -> None:
        """Leave the network (no more answers: the master sees a dead node)."""
        if self.network is None:
            return
        self.network.unsubscribe(SYNC_COB_ID, self._on_sync)
        self.network.unsubscribe(0, self._on_nmt)
        if self._heartbeat_subscription is not None:
            self.network.unsubscribe(self._heartbeat_subscription, self._on_heartbeat)
        self._unsubscribe_rpdos()
        del self.network[self.node.id]
        self.network = None

    def _on_nmt(self, can_id: int, data: bytes, timestamp: float) -> None:
        if self.node.nmt.state == "OPERATIONAL":
            with self._lock:
                self._unsubscribe_rpdos()
                self.node.tpdo.read()
                self.node.rpdo.read()
                self._tpdo_frames = self._precompiled_tpdos()
                for pdo in self.node.rpdo.map.values():
                    pdo.callbacks = [self._on_rpdo]
                    if pdo.enabled:
                        self._rpdo_subscriptions.append((pdo.cob_id, pdo.on_message))

    def _precompiled_tpdos(self) -> list[tuple[can.Message, struct.Struct]] | None:
        """A preallocated frame and layout per enabled TPDO (its mapping as read from the object
        dictionary), or None if any mapping is not one of TPDO_LAYOUTS."""
        frames = []
        for pdo in self.node.tpdo.map.values():
            if not pdo.enabled:
                continue
            mapping = tuple((variable.index, variable.length) for variable in pdo.map)
            layout = TPDO_LAYOUTS.get(mapping)
            if layout is None or any(variable.subindex for variable in pdo.map):
                return None
            data = bytearray(layout.size)
            frames.append((can.Message(arbitration_id=pdo.cob_id, data=data, is_extended_id=False), layout))
        return frames

    def _send_tpdos(self, frames: list[tuple[can.Message, struct.Struct]]) -> None:
        """The SYNC's answers in their preallocated frames (as canopen's Network.send_message)."""
        network = self.network
        if network is None or network.bus is None:
            return
        for frame, layout in frames:
            if layout is TPDO_LAYOUTS[TPDO1_MAPPING]:
                layout.pack_into(frame.data, 0, self._statusword(), self._position_counts)
            else:
                layout.pack_into(frame.data, 0, self._velocity_counts, self._current_actual)
            with network.send_lock:
                network.bus.send(frame)

    def _unsubscribe_rpdos(self) -> None:
        for cob_id, callback in self._rpdo_subscriptions:
            if self.network is not None and callback in self.network.subscribers.get(cob_id, []):
                self.network.unsubscribe(cob_id, callback)
        self._rpdo_subscriptions.clear()

    def _on_rpdo(self, pdo: canopen.pdo.PdoMap) -> None:
        if self.node.nmt.state != "OPERATIONAL":
            return
        with self._lock:
            for variable in pdo.map:
                self._apply(variable.index, variable.raw)

    def _on_heartbeat(self, can_id: int, data: bytes, timestamp: float) -> None:
        with self._lock:
            self._last_heartbeat = self.time  # CiA 301: monitoring starts with the first one

    def _on_read(self, index: int, subindex: int, od: object) -> int | None:
        with self._lock:
            values = {
                STATUSWORD: self._statusword(),
                POSITION_ACTUAL: self._position_counts,
                VELOCITY_ACTUAL: self._velocity_counts,
                CURRENT_ACTUAL: self._current_actual,
                ERROR_CODE: self._error_code,
                ERROR_REGISTER: ERROR_REGISTER_GENERIC if self._error_code else 0,
                MODES_OF_OPERATION_DISPLAY: self._mode,
                MODES_OF_OPERATION: self._mode,
                TARGET_TORQUE: self._target_torque,
                TORQUE_OFFSET: self._torque_offset,
                TARGET_POSITION: self._target_position,
                VELOCITY_OFFSET: self._velocity_offset,
                CONTROLWORD: self._controlword,
            }
            return values.get(index)

    def _on_write(
        self, index: int, subindex: int, od: canopen.objectdictionary.ODVariable, data: bytes
    ) -> None:
        value = od.decode_raw(data)
        valid = {
            QUICK_STOP_OPTION_CODE: lambda v: 0 <= v <= 8,
            ABORT_CONNECTION_OPTION_CODE: lambda v: 0 <= v <= 3,
            MODES_OF_OPERATION: lambda v: v == 0 or v in MODES,
            HOMING_METHOD: lambda v: v in HOMING_METHOD_DIRECTIONS,
            QUICK_STOP_DECELERATION: lambda v: v > 0,
        }.get(index)
        if valid is not None and not valid(value):
            raise SdoAbortedError(SDO_VALUE_RANGE_EXCEEDED)
        with self._lock:
            running = self._state is Cia402State.OPERATION_ENABLED
            if running and index in CONFIGURATION_OBJECTS:
                raise SdoAbortedError(SDO_STATE_CONFLICT)  # configured only while not enabled
            if index == CONSUMER_HEARTBEAT_TIME and subindex == 1:
                self._watch_heartbeat_of((int(value) >> 16) & 0x7F if value else None)
            self._apply(index, value)

    def _watch_heartbeat_of(self, node_id: int | None) -> None:
        if self._heartbeat_subscription is not None and self.network is not None:
            self.network.unsubscribe(self._heartbeat_subscription, self._on_heartbeat)
        self._heartbeat_subscription = None if node_id is None else HEARTBEAT_COB_BASE + node_id
        self._last_heartbeat = None
        if self._heartbeat_subscription is not None and self.network is not None:
            self.network.subscribe(self._heartbeat_subscription, self._on_heartbeat)

    def _on_sync(self, can_id: int, data: bytes, timestamp: float) -> None:
        if self.node.nmt.state != "OPERATIONAL":
            return
        with self._lock:
            self._last_sync = self.time
            self._last_sync_wall = time.monotonic()
            self._latch_command()
            self._advance()
            self.sync_count += 1
            if not self._feedback_on:
                return
            if self._tpdo_frames is not None:
                self._send_tpdos(self._tpdo_frames)
                return
            for pdo in self.node.tpdo.map.values():
                if not pdo.enabled:
                    continue
                for variable in pdo.map:
                    value = self._on_read(variable.index, variable.subindex, variable.od)
                    if value is not None:
                        variable.raw = value
                pdo.transmit()
