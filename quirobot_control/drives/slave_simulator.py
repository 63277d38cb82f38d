"""A CiA 402 servo drive on a CAN bus, simulated: the slave that `CanopenDrive` talks to.

`CanopenServoSimulator` serves the object dictionary of config/quirobot_drive.eds on a
`canopen.LocalNode` and is backed by the project's `SimulatedDrive` (motor, current loop,
transmission, encoder) driving a `JointModel` (inertia and viscous damping, no gravity). It is
for tests and bench-top demos without hardware: put it on its own `canopen.Network` on the same
CAN channel as the master (python-can's virtual bus, or a real one such as vcan0/can0).

What it does, as a real drive would:
- NMT: boots pre-operational; PDOs are processed only while operational. On entering
  operational it reads its PDO mapping from its own object dictionary (written by the master by
  SDO), so the mapping really goes over the bus.
- CiA 402 state machine on every controlword write (SDO or RPDO), see `next_state`; the
  quick stop option code 0x605A decides whether Quick stop active is kept (5-8) or left for
  Switch on disabled (0-4) once the torque is zero.
- Modes of operation: only cyclic synchronous torque (10) is accepted (SDO abort otherwise).
- On every SYNC: applies the latest target torque (per-mille of 0x6076 -> A through K_T) to the
  SimulatedDrive when Operation enabled in CST, advances the drive and joint by
  `sync_period` (in control-rate sub-steps, the SimulatedDrive integrating the current loop
  exactly within each), then sends TPDO1/TPDO2 (transmission type 1). Simulated time advances
  one SYNC period per SYNC, whatever the wall clock does, so tests are deterministic.
- Faults: `inject_fault(code)` (or the SimulatedDrive's own overspeed fault, code 0x8400) puts
  the drive in Fault, sets 0x603F and the error register 0x1001, and sends an EMCY; a fault
  reset (rising edge of controlword bit 7) clears it.
- Test hooks: `stop_feedback()` silences the TPDOs (a dead node seen from the master),
  `stop_sdo_server()` leaves SDO requests unanswered (a hung SDO server).

Bench-top demo: `python -m quirobot_cli.canopen_servo_simulator --channel vcan0` serves every
axis on a (virtual) SocketCAN bus until Ctrl-C (`serve`); see docs/canopen.md.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path

import canopen
from canopen.sdo import SdoAbortedError

from quirobot_control.drives.canopen_units import TorqueScaling
from quirobot_control.drives.cia402 import (
    CONTROLWORD,
    CURRENT_ACTUAL,
    DEFAULT_EDS,
    ERROR_CODE,
    MODE_CYCLIC_SYNCHRONOUS_TORQUE,
    MODES_OF_OPERATION,
    MODES_OF_OPERATION_DISPLAY,
    MOTOR_RATED_CURRENT,
    MOTOR_RATED_TORQUE,
    POSITION_ACTUAL,
    POSITION_ENCODER_RESOLUTION,
    QUICK_STOP_OPTION_CODE,
    STATUSWORD,
    STATUSWORD_PATTERNS,
    SYNC_COB_ID,
    TARGET_TORQUE,
    VELOCITY_ACTUAL,
    Cia402State,
    describe_error_code,
)
from quirobot_control.drives.interface import DriveState
from quirobot_control.drives.simulated import SimulatedDrive, drive_for_joint
from quirobot_description.parameters import AXES, FEED_JOINT, RobotParameters

ERROR_REGISTER = 0x1001
#: Error code of the SimulatedDrive's own overspeed fault (CiA 402: velocity speed controller).
OVERSPEED_ERROR_CODE = 0x8400
#: Error register bit 0: generic error (CiA 301), set while a fault is active.
ERROR_REGISTER_GENERIC = 0x01
#: Statusword bits set on top of the state pattern: 4 voltage enabled, 9 remote (CiA 402).
STATUSWORD_VOLTAGE_ENABLED = 0x0010
STATUSWORD_REMOTE = 0x0200
#: Quick stop option codes that stay in Quick stop active (CiA 402 codes 5 to 8).
QUICK_STOP_STAY_CODES = range(5, 9)
_SDO_VALUE_RANGE_EXCEEDED = 0x06090030  # CiA 301 SDO abort code


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
    value = STATUSWORD_PATTERNS[state][1] | STATUSWORD_REMOTE
    if state in (
        Cia402State.READY_TO_SWITCH_ON,
        Cia402State.SWITCHED_ON,
        Cia402State.OPERATION_ENABLED,
        Cia402State.QUICK_STOP_ACTIVE,
    ):
        value |= STATUSWORD_VOLTAGE_ENABLED
    return value


@dataclass
class JointModel:
    """One joint as a rigid inertia with viscous damping: inertia * a = effort - damping * v.

    `inertia` kg (prismatic) or kg*m^2 (revolute), including the reflected rotor inertia;
    `damping` N*s/m or N*m*s/rad; `position` m or rad; `velocity` m/s or rad/s.
    """

    inertia: float
    damping: float
    position: float = 0.0
    velocity: float = 0.0

    def __post_init__(self) -> None:
        for label, value in (("inertia", self.inertia), ("damping", self.damping)):
            if not math.isfinite(value):
                raise ValueError(f"joint {label} must be a finite number, got {value!r}")
        if self.inertia <= 0.0 or self.damping < 0.0:
            raise ValueError(
                f"joint inertia must be > 0 and damping >= 0, got {self.inertia}, {self.damping}"
            )

    def step(self, effort: float, dt: float) -> None:
        """Advance by `dt` s with `effort` (N or N*m) held: the exact solution of the linear ODE."""
        a = self.damping / self.inertia  # 1/s
        x = a * dt
        if x < 1e-4:  # series, free of cancellation: g = (1 - e^-x)/a, h = (dt - g)/a
            g = dt * (1.0 - x / 2.0 + x * x / 6.0)
            h = dt * dt * (0.5 - x / 6.0 + x * x / 24.0)
        else:
            g = -math.expm1(-x) / a
            h = (dt - g) / a
        acceleration = effort / self.inertia
        self.position += self.velocity * g + acceleration * h
        self.velocity += (acceleration - a * self.velocity) * g


class CanopenServoSimulator:
    """A CiA 402 slave (canopen.LocalNode) backed by a SimulatedDrive and a JointModel."""

    def __init__(
        self,
        node_id: int,
        drive: SimulatedDrive,
        joint: JointModel,
        sync_period: float,
        *,
        eds: str | Path = DEFAULT_EDS,
    ) -> None:
        """`sync_period`: simulated seconds per SYNC; `drive` starts as it is (normally DISABLED)."""
        if not math.isfinite(sync_period) or sync_period <= 0.0:
            raise ValueError(f"SYNC period must be a positive number of seconds, got {sync_period!r}")
        self.node = canopen.LocalNode(node_id, str(eds))
        self.drive = drive
        self.joint = joint
        self.sync_period = sync_period
        self.scaling = TorqueScaling.for_motor(drive.motor)
        substep_rate = drive.drive.control_rate  # Hz, the drive's velocity-estimate rate
        self._substeps = max(1, math.ceil(sync_period * substep_rate - 1e-9))
        self._lock = threading.RLock()
        self._state = Cia402State.SWITCH_ON_DISABLED
        self._controlword = 0
        self._target_torque = 0  # per-mille of rated torque
        self._mode = 0
        self._error_code = 0
        self._feedback_on = True
        self.sync_count = 0
        self._rpdo_subscriptions: list[tuple[int, object]] = []
        self.network: canopen.Network | None = None
        store = self.node.data_store
        store[MOTOR_RATED_CURRENT] = {
            0: self._encode(MOTOR_RATED_CURRENT, self.scaling.rated_current_milliamps)
        }
        store[MOTOR_RATED_TORQUE] = {
            0: self._encode(MOTOR_RATED_TORQUE, self.scaling.rated_torque_millinewton_metres)
        }
        store[POSITION_ENCODER_RESOLUTION] = {
            1: self._encode(POSITION_ENCODER_RESOLUTION, drive.encoder.counts_per_rev, 1),
            2: self._encode(POSITION_ENCODER_RESOLUTION, 1, 2),
        }
        self.node.add_read_callback(self._on_read)
        self.node.add_write_callback(self._on_write)
        drive.advance(0.0, joint.position, joint.velocity)  # latch the encoder at the start position
        self._sense()

    # --- bus ------------------------------------------------------------------------------------------
    def attach(self, network: canopen.Network) -> None:
        """Join `network` (connected, its own bus on the master's channel) and boot pre-operational."""
        self.network = network
        network.add_node(self.node)
        network.subscribe(SYNC_COB_ID, self._on_sync)
        network.subscribe(0, self._on_nmt)
        self.node.nmt.state = "PRE-OPERATIONAL"

    def detach(self) -> None:
        """Leave the network (no more answers: the master sees a dead node)."""
        if self.network is None:
            return
        self.network.unsubscribe(SYNC_COB_ID, self._on_sync)
        self.network.unsubscribe(0, self._on_nmt)
        self._unsubscribe_rpdos()
        del self.network[self.node.id]
        self.network = None

    # --- test hooks -------------------------------------------------------------------------------------
    def inject_fault(self, error_code: int) -> None:
        """Go to Fault with `error_code` (0x603F), the SimulatedDrive's power stage off, EMCY sent."""
        with self._lock:
            self._enter_fault(error_code)

    def stop_feedback(self) -> None:
        """Stop sending TPDOs (the simulation keeps running on SYNC)."""
        with self._lock:
            self._feedback_on = False

    def resume_feedback(self) -> None:
        with self._lock:
            self._feedback_on = True

    def stop_sdo_server(self) -> None:
        """Stop answering SDO requests (PDOs, NMT and SYNC go on): a hung SDO server."""
        if self.network is not None:
            self.network.unsubscribe(self.node.sdo.rx_cobid, self.node.sdo.on_request)

    @property
    def state(self) -> Cia402State:
        with self._lock:
            return self._state

    @property
    def target_torque(self) -> int:
        """The last target torque received, per-mille of the rated torque."""
        with self._lock:
            return self._target_torque

    @property
    def error_code(self) -> int:
        with self._lock:
            return self._error_code

    @property
    def nmt_state(self) -> str:
        return self.node.nmt.state

    # --- callbacks (network thread) -------------------------------------------------------------------
    def _on_nmt(self, can_id: int, data: bytes, timestamp: float) -> None:
        if self.node.nmt.state == "OPERATIONAL":
            with self._lock:
                self._unsubscribe_rpdos()
                self.node.tpdo.read()
                self.node.rpdo.read()
                for pdo in self.node.rpdo.map.values():
                    pdo.callbacks = [self._on_rpdo]
                    if pdo.enabled:
                        self._rpdo_subscriptions.append((pdo.cob_id, pdo.on_message))

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
                CONTROLWORD: self._controlword,
            }
            return values.get(index)

    def _on_write(
        self, index: int, subindex: int, od: canopen.objectdictionary.ODVariable, data: bytes
    ) -> None:
        if index == QUICK_STOP_OPTION_CODE and not 0 <= od.decode_raw(data) <= 8:
            raise SdoAbortedError(_SDO_VALUE_RANGE_EXCEEDED)
        if index == MODES_OF_OPERATION and od.decode_raw(data) not in (0, MODE_CYCLIC_SYNCHRONOUS_TORQUE):
            raise SdoAbortedError(_SDO_VALUE_RANGE_EXCEEDED)
        with self._lock:
            self._apply(index, od.decode_raw(data))

    def _on_sync(self, can_id: int, data: bytes, timestamp: float) -> None:
        if self.node.nmt.state != "OPERATIONAL":
            return
        with self._lock:
            self._advance()
            self.sync_count += 1
            if not self._feedback_on:
                return
            for pdo in self.node.tpdo.map.values():
                if not pdo.enabled:
                    continue
                for variable in pdo.map:
                    value = self._on_read(variable.index, variable.subindex, variable.od)
                    if value is not None:
                        variable.raw = value
                pdo.transmit()

    # --- the drive ----------------------------------------------------------------------------------
    def _apply(self, index: int, value: int) -> None:
        if index == CONTROLWORD:
            previous, self._controlword = self._controlword, value
            self._transition(next_state(self._state, value, previous))
        elif index == TARGET_TORQUE:
            self._target_torque = value
        elif index == MODES_OF_OPERATION:
            self._mode = value

    def _quick_stop_option(self) -> int:
        return self.node.sdo[QUICK_STOP_OPTION_CODE].raw

    def _transition(self, new: Cia402State) -> None:
        old, self._state = self._state, new
        if new is old:
            return
        drive = self.drive
        if new is Cia402State.OPERATION_ENABLED:
            drive.reset_fault()  # leaves QUICK_STOP (transition 16); no-op when DISABLED
            drive.enable()
        elif new is Cia402State.QUICK_STOP_ACTIVE:
            drive.quick_stop()
            if self._quick_stop_option() not in QUICK_STOP_STAY_CODES:
                self._transition(Cia402State.SWITCH_ON_DISABLED)
        elif new is Cia402State.SWITCH_ON_DISABLED and old is Cia402State.FAULT:
            drive.reset_fault()
            self._error_code = 0
            self._emcy_reset()
        else:  # any disabled state: power stage off
            drive.disable()
            drive.reset_fault()

    def _enter_fault(self, error_code: int) -> None:
        self._state = Cia402State.FAULT
        self._error_code = int(error_code)
        if self.drive.state is not DriveState.FAULT:
            self.drive.inject_fault(describe_error_code(error_code))
        if self.network is not None:
            self.node.emcy.send(self._error_code, ERROR_REGISTER_GENERIC)

    def _emcy_reset(self) -> None:
        if self.network is not None:
            self.node.emcy.reset()

    def _advance(self) -> None:
        drive, joint = self.drive, self.joint
        if drive.state is DriveState.ENABLED:
            torque_mode = self._mode == MODE_CYCLIC_SYNCHRONOUS_TORQUE
            drive.command_current(
                self.scaling.current_for_target_torque(self._target_torque) if torque_mode else 0.0
            )
        h = self.sync_period / self._substeps
        for _ in range(self._substeps):
            effort = drive.advance(h, joint.position, joint.velocity)
            joint.step(effort, h)
        drive.advance(0.0, joint.position, joint.velocity)  # latch the encoder at the SYNC instant
        if drive.state is DriveState.FAULT and self._state is not Cia402State.FAULT:
            self._enter_fault(OVERSPEED_ERROR_CODE)
        self._sense()

    def _sense(self) -> None:
        feedback = self.drive.feedback()
        resolution = self.drive.encoder.resolution
        self._position_counts = round(feedback.position / resolution)
        self._velocity_counts = round(feedback.velocity / resolution)
        self._current_actual = self.scaling.current_actual(feedback.current)

    def _statusword(self) -> int:
        return statusword_for(self._state)

    def _encode(self, index: int, value: int, subindex: int = 0) -> bytes:
        entry = self.node.object_dictionary[index]
        if subindex:
            entry = entry[subindex]
        return entry.encode_raw(value)


def simulator_for_axis(
    params: RobotParameters,
    axis: str,
    *,
    inertia: float,
    position: float = 0.0,
    eds: str | Path = DEFAULT_EDS,
) -> CanopenServoSimulator:
    """A simulated drive for one axis (JOINT_NAMES or the drill feed), numbers from the parameter file.

    `inertia`: the joint's effective inertia including the reflected rotor (kg or kg*m^2), e.g.
    the control configuration's effective_inertia; damping is the joint's viscous friction.
    """
    if axis not in params.canopen.node_ids:
        raise ValueError(f"no CANopen node id for axis {axis!r}")
    drive = drive_for_joint(params, axis)
    damping = params.drill.feed_damping if axis == FEED_JOINT else params.joint(axis).damping
    return CanopenServoSimulator(
        params.canopen.node_ids[axis],
        drive,
        JointModel(inertia=inertia, damping=damping, position=position),
        params.canopen.sync_period,
        eds=eds,
    )


def serve(
    params: RobotParameters,
    network: canopen.Network,
    inertias: dict[str, float],
    stop: threading.Event,
    *,
    axes: tuple[str, ...] = AXES,
) -> list[CanopenServoSimulator]:
    """Attach one simulator per axis to the connected `network`; return when `stop` is set."""
    simulators = [simulator_for_axis(params, axis, inertia=inertias[axis]) for axis in axes]
    for simulator in simulators:
        simulator.attach(network)
    stop.wait()
    for simulator in simulators:
        simulator.detach()
    return simulators
