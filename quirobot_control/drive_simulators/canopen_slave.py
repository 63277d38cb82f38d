"""A CiA 402 servo drive on a CAN bus, simulated: the slave that `CanopenDrive` talks to.

`CanopenServoSimulator` serves the object dictionary of config/quirobot_drive.eds on a
`canopen.LocalNode` and is backed by the project's `SimulatedDrive` (motor, current loop,
transmission, encoder, brake, and the drive-side control law of drives.drive_control) driving a
`JointModel` (inertia and viscous damping, no gravity; held while the drive's holding brake is
engaged and the effort within its holding effort). It is
for tests and bench-top demos without hardware: put it on its own `canopen.Network` on the same
CAN channel as the master (python-can's virtual bus, or a real one such as vcan0/can0).

What it does, as a real drive would:
- NMT: boots pre-operational; PDOs are processed only while operational. On entering
  operational it reads its PDO mapping from its own object dictionary (written by the master by
  SDO), so the mapping really goes over the bus.
- CiA 402 state machine on every controlword write (SDO or RPDO), see `next_state`. What the
  drive does in each state is the SimulatedDrive's `DriveController` (drives.drive_control),
  configured from the object dictionary when the drive is enabled: position-loop gains 0x60FB,
  mode 0x6060, quick-stop deceleration 0x6085, homing 0x6098/0x6099/0x609A/0x607C (written only
  while not Operation enabled: SDO abort otherwise).
- Modes of operation: CSP (8), CST (10), homing (6). On every SYNC the latest RPDO values
  become the command: CST, target torque (per-mille of 0x6076 -> A through K_T); CSP, the
  target position interpolated linearly over the SYNC period (the drive's interpolator; a missed
  SYNC extrapolates with the velocity offset), the velocity offset 0x60B1 and the torque offset
  0x60B2 as current feed-forward, into the drive's PID every position-loop period. The drive and
  joint advance by `sync_period` in control-rate sub-steps, then TPDO1/TPDO2 go out
  (transmission type 1). Simulated time advances one SYNC period per SYNC, whatever the wall
  clock does, so tests are deterministic; `free_run(duration)` runs the drive on its own clock
  with no SYNC (a silent master).
- Disable operation (Operation enabled -> Switched on) acts as 0x605C = 1: the drive's ramp, the
  brake held under power before the power stage goes off; Disable voltage and Shutdown switch the
  power stage off at once.
- Stops: Quick stop (controlword or lost master) per 0x605A: 0 torque off (category 0); 1, 2 the
  drive's ramp at 0x6085, brake at standstill, then Switch on disabled (category 1); 5, 6 the
  ramp, then hold in Quick stop active (category 2). A stop in progress is not cut short: a
  Disable voltage (the master's way out of Quick stop active) during the ramp or while the brake
  engages under power is ignored, and the drive goes to Switch on disabled when the stop is
  complete (design assumption: CiA 402 transition 12 would switch the power stage off at once and
  let a vertical axis coast onto its brake; the master never sends it before the statusword
  reports the stop complete either, drives.canopen_master). Halt (bit 8): the ramp and hold, in
  Operation enabled. Homing (mode 6): controlword bit 4's rising edge starts the run, held set
  it goes on, its falling edge interrupts it (ramp to a stop, hold, not homed); statusword bit 12
  homing attained, bit 13 homing error.
- The master is watched (CiA 301): SYNC loss (no SYNC for `sync_loss_periods` periods once
  SYNCs came) and the consumer heartbeat 0x1016 (node id << 16 | ms; armed by the first
  heartbeat) act per the abort-connection option code 0x6007 (1 fault, 2 disable voltage,
  3 quick stop), with an EMCY (0x8100 SYNC lost, 0x8130 heartbeat); `master_lost` says why.
- Faults: `inject_fault(code)` (or the SimulatedDrive's own overspeed fault, code 0x8400) puts
  the drive in Fault (its reaction, 0x605E: the quick-stop ramp, category 1, for a temperature,
  communication or following-error code, in Fault reaction active until braked and off, which
  ignores every controlword; torque off, category 0, for any other), sets 0x603F
  and the error register 0x1001, and sends an EMCY; only a fault reset (rising edge of
  controlword bit 7) clears it: nothing here resets or restarts by itself.
- Test hooks: `stop_feedback()` silences the TPDOs (a dead node seen from the master),
  `stop_sdo_server()` leaves SDO requests unanswered (a hung SDO server), `reboot()` restarts the
  node (power loss, reset: boot-up frame, pre-operational, configuration back to the EDS's).

Bench-top demo: `python -m quirobot_cli.canopen_servo_simulator --channel vcan0` serves every
axis on a (virtual) SocketCAN bus until Ctrl-C (`serve`); see docs/canopen.md.
"""

from __future__ import annotations

import dataclasses
import math
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import can
import canopen
from canopen.sdo import SdoAbortedError

from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.drives.can_polling import frames_waiting
from quirobot_control.drives.canopen_units import MotionScaling, TorqueScaling
from quirobot_control.drives.cia402 import (
    ABORT_CONNECTION_OPTION_CODE,
    ABORT_CONNECTION_QUICK_STOP,
    CONSUMER_HEARTBEAT_TIME,
    CONTROLWORD,
    CURRENT_ACTUAL,
    CW_HALT,
    CW_HOMING_START,
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
    POSITION_ACTUAL,
    POSITION_CONTROL_PARAMETERS,
    POSITION_CONTROL_SUBINDICES,
    POSITION_ENCODER_RESOLUTION,
    QUICK_STOP_DECELERATION,
    QUICK_STOP_OPTION_CODE,
    STATUSWORD,
    STATUSWORD_PATTERNS,
    SW_HOMING_ATTAINED,
    SW_HOMING_ERROR,
    SW_REMOTE,
    SW_TARGET_REACHED,
    SW_VOLTAGE_ENABLED,
    SYNC_COB_ID,
    TARGET_POSITION,
    TARGET_TORQUE,
    TORQUE_OFFSET,
    TPDO1_MAPPING,
    TPDO_LAYOUTS,
    VELOCITY_ACTUAL,
    VELOCITY_OFFSET,
    Cia402State,
    describe_error_code,
    fault_reaction_ramps,
)
from quirobot_control.drives.interface import DriveError, DriveMode, DriveState, StopCategory
from quirobot_control.drives.pid import GainError, PIDGains
from quirobot_description.parameters import HOMING_METHOD_DIRECTIONS, RobotParameters, drive_axes

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
_FAULT_STATES = (Cia402State.FAULT, Cia402State.FAULT_REACTION_ACTIVE)
#: Objects a restart keeps (the drive's rating, written at the factory; everything else is volatile).
_FACTORY_OBJECTS = (MOTOR_RATED_CURRENT, MOTOR_RATED_TORQUE, POSITION_ENCODER_RESOLUTION)
_SDO_VALUE_RANGE_EXCEEDED = 0x06090030  # CiA 301 SDO abort codes
_SDO_STATE_CONFLICT = 0x08000022  # data cannot be transferred in the present device state


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
    """A CiA 402 slave (canopen.LocalNode) in front of a SimulatedDrive driving a JointModel.

    The object dictionary and the CiA 402 state machine are the slave's; what the drive does
    (current loop, CSP PID, stop ramps, brake, homing) is the SimulatedDrive's and its
    drives.drive_control.DriveController's, configured from what the master writes.
    """

    def __init__(
        self,
        node_id: int,
        drive: SimulatedDrive,
        joint: JointModel,
        sync_period: float,
        *,
        eds: str | Path = DEFAULT_EDS,
        sync_loss_periods: int = 0,
    ) -> None:
        """`sync_period`: simulated seconds per SYNC; `drive` starts as it is (normally DISABLED).

        `sync_loss_periods`: SYNC periods without a SYNC (once SYNCs have come) after which the
        drive has lost its master (0: not watched). The drive's own command watchdog
        (master_timeout of its DriveController) is replaced by the CiA 301 ones: SYNC loss and
        the consumer heartbeat 0x1016, acting per the abort-connection option code 0x6007.
        """
        if not math.isfinite(sync_period) or sync_period <= 0.0:
            raise ValueError(f"SYNC period must be a positive number of seconds, got {sync_period!r}")
        if int(sync_loss_periods) != sync_loss_periods or sync_loss_periods < 0:
            raise ValueError(f"SYNC-loss periods must be a whole number >= 0, got {sync_loss_periods!r}")
        self.node = canopen.LocalNode(node_id, str(eds))
        self.drive = drive
        self.joint = joint
        self.control_period = 1.0 / drive.drive.control_rate  # s, the drive's position loop
        self.sync_period = sync_period
        self.sync_loss_periods = int(sync_loss_periods)
        self.scaling = TorqueScaling.for_motor(drive.motor)
        self.units = MotionScaling(drive.encoder.resolution)
        # The CiA 301 watchdogs below replace the controller's own command watchdog.
        drive.control.settings = dataclasses.replace(drive.control.settings, master_timeout=None)
        self._homing_error = False
        self._lock = threading.RLock()
        self._state = Cia402State.SWITCH_ON_DISABLED
        self._controlword = 0
        self._target_torque = 0  # per-mille of rated torque
        self._torque_offset = 0  # per-mille of rated torque (CSP current feed-forward)
        self._target_position = 0  # counts, latest received
        self._velocity_offset = 0  # counts/s, latest received
        self._mode = 0
        self._error_code = 0
        self._feedback_on = True
        self._csp_from = 0.0  # m or rad: the interpolated target at the last SYNC
        self._csp_to = 0.0  # the target latched at the last SYNC
        self._csp_velocity = 0.0  # m/s or rad/s: its velocity offset
        self._since_sync = 0.0  # s since the last SYNC
        self.time = 0.0  # s, the drive's own clock (advances with SYNCs and free_run)
        self._last_sync: float | None = None  # time of the latest SYNC (None: none yet)
        self._last_sync_wall = time.monotonic()  # s, wall clock of the latest SYNC (for `serve`)
        self._last_heartbeat: float | None = None  # time of the master's latest heartbeat
        self._heartbeat_subscription: int | None = None
        self.master_lost: str | None = None  # why the drive stopped itself, if it did
        self.master_lost_time: float | None = None  # s (the drive's clock) when it found out
        self.sync_count = 0
        self._rpdo_subscriptions: list[tuple[int, object]] = []
        #: Per enabled TPDO, (preallocated frame, layout) when every one is mapped as TPDO_LAYOUTS
        #: knows (set on entering operational); None: canopen's encoding.
        self._tpdo_frames: list[tuple[can.Message, struct.Struct]] | None = None
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

    @property
    def sync_period(self) -> float:
        """Simulated seconds per SYNC (what a real drive measures between SYNCs, CiA 301 0x1006)."""
        return self._sync_period

    @sync_period.setter
    def sync_period(self, value: float) -> None:
        if not math.isfinite(value) or value <= 0.0:
            raise ValueError(f"SYNC period must be a positive number of seconds, got {value!r}")
        self._sync_period = float(value)
        self._substeps = max(1, math.ceil(value / self.control_period - 1e-9))

    # --- bus ------------------------------------------------------------------------------------------
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

    # --- test hooks -------------------------------------------------------------------------------------
    def inject_fault(self, error_code: int) -> None:
        """Go to Fault with `error_code` (0x603F), the SimulatedDrive's power stage off, EMCY sent."""
        with self._lock:
            self._enter_fault(error_code)

    def reboot(self) -> None:
        """The node restarts (power loss, reset): the power stage off and the brake falling in,
        the volatile configuration gone (the object dictionary back to the EDS defaults: PDO
        mappings, quick-stop and abort-connection options, consumer heartbeat; mode 0), Switch on
        disabled, then the NMT boot-up frame and pre-operational (no PDO until the master starts it
        again); an incremental encoder's count is lost."""
        with self._lock:
            self.drive.power_cycle()
            self.drive.control.settings = dataclasses.replace(
                self.drive.control.settings, master_timeout=None
            )
            store = self.node.data_store
            for index in [i for i in store if i not in _FACTORY_OBJECTS]:
                del store[index]
            self._unsubscribe_rpdos()
            self._watch_heartbeat_of(None)
            self._state = Cia402State.SWITCH_ON_DISABLED
            self._controlword = self._mode = self._error_code = 0
            self._target_torque = self._torque_offset = self._target_position = self._velocity_offset = 0
            self._homing_error = False
            self._last_sync = None
            self.master_lost = self.master_lost_time = None
            self.drive.advance(0.0, self.joint.position, self.joint.velocity)
            self._sense()
        self.node.nmt.state = "RESET"  # boot-up frame (NMT state 0)
        self.node.nmt.state = "PRE-OPERATIONAL"

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

    def run_alone_if_silent(self, now: float) -> None:
        """Real time (`run_alone`): with no SYNC for 1.5 SYNC periods of wall-clock time at `now`
        (s, time.monotonic; half a period of the master's jitter passes), run one period on the
        drive's own clock, as a real drive's time goes on.

        Not while frames wait in the drive's receive socket (drives.can_polling.frames_waiting):
        the master is not silent then, this process is behind (a drive's firmware takes each frame
        in its interrupt). Running alone would count those periods twice (once here, once per
        queued SYNC) and see a heartbeat or SYNC loss the master did not cause."""
        with self._lock:
            if now - self._last_sync_wall < 1.5 * self.sync_period:
                return
            if frames_waiting(self.network.bus if self.network is not None else None):
                return
            self._last_sync_wall += self.sync_period
            self._advance()

    def free_run(self, duration: float) -> None:
        """Run the drive on its own clock for `duration` s with no SYNC (the master silent).

        In SYNC periods; no TPDO is sent (they answer SYNCs). The drive's watchdogs (SYNC loss,
        consumer heartbeat) see the time pass, as a real drive's clock does.
        """
        with self._lock:
            for _ in range(max(0, round(duration / self.sync_period))):
                self._advance()

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

    def gains(self) -> PIDGains | None:
        """The position-loop gains written to 0x60FB, or None while any is unset or invalid."""
        values = {}
        for field, sub in POSITION_CONTROL_SUBINDICES.items():
            raw = self.node.data_store.get(POSITION_CONTROL_PARAMETERS, {}).get(sub)
            if raw is None:
                return None
            values[field] = self.node.object_dictionary[POSITION_CONTROL_PARAMETERS][sub].decode_raw(raw)
        try:
            return PIDGains(**values)
        except GainError:
            return None

    # --- callbacks (network thread) -------------------------------------------------------------------
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
            raise SdoAbortedError(_SDO_VALUE_RANGE_EXCEEDED)
        with self._lock:
            running = self._state is Cia402State.OPERATION_ENABLED
            if running and index in CONFIGURATION_OBJECTS:
                raise SdoAbortedError(_SDO_STATE_CONFLICT)  # configured only while not enabled
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

    # --- the drive ----------------------------------------------------------------------------------
    def _apply(self, index: int, value: int) -> None:
        if index == CONTROLWORD:
            previous, self._controlword = self._controlword, value
            new = next_state(self._state, value, previous)
            if self._state is Cia402State.QUICK_STOP_ACTIVE and self.drive.control.stop_in_progress:
                new = self._state  # the stop goes on: off once braked (see the module doc)
            self._transition(new)
            if self._state is Cia402State.OPERATION_ENABLED:
                self._operation_bits(value, previous)
        elif index == TARGET_TORQUE:
            self._target_torque = value
        elif index == TORQUE_OFFSET:
            self._torque_offset = value
        elif index == TARGET_POSITION:
            self._target_position = value
        elif index == VELOCITY_OFFSET:
            self._velocity_offset = value
        elif index == MODES_OF_OPERATION:
            self._mode = value

    def _operation_bits(self, controlword: int, previous: int) -> None:
        """Halt (bit 8) and homing operation start (bit 4) in Operation enabled: in homing mode
        its rising edge starts a run, held set the run goes on, its falling edge interrupts the run
        (CiA 402: ramp to a stop, hold, not homed)."""
        drive = self.drive
        halted = drive.control.halted
        if controlword & CW_HALT and not halted:
            drive.halt()
        elif not controlword & CW_HALT and halted:
            drive.resume()
            # CSP goes on from where the halt holds (the master's next target should be near it).
            self._csp_from = self._csp_to = drive.feedback().position
            self._csp_velocity = 0.0
        if self._mode != MODE_HOMING:
            return
        if previous & CW_HOMING_START and not controlword & CW_HOMING_START:
            drive.control.interrupt_homing()
        elif controlword & CW_HOMING_START and not previous & CW_HOMING_START:
            try:
                drive.start_homing()
            except DriveError:
                self._homing_error = True

    def _config(self, index: int, subindex: int = 0) -> int:
        entry = self.node.sdo[index] if subindex == 0 else self.node.sdo[index][subindex]
        return entry.raw

    def _configure_control(self) -> None:
        """The drive's DriveController settings from the object dictionary (a thin adapter: the
        controller reads a frozen settings record, which the slave replaces while the drive is
        off): quick-stop deceleration 0x6085 and homing 0x6098/0x6099/0x609A/0x607C once
        written (else the parameter file's, as the drive was built); the switch stays where it is.
        """
        control = self.drive.control
        settings = control.settings
        deceleration = self._config(QUICK_STOP_DECELERATION)
        if deceleration > 0:
            settings = dataclasses.replace(settings, quick_stop_deceleration=self.units.value(deceleration))
        method = self._config(HOMING_METHOD)
        homing = settings.homing
        if homing is not None and method in HOMING_METHOD_DIRECTIONS:
            written = {
                "switch_speed": self._config(HOMING_SPEEDS, 1),
                "zero_speed": self._config(HOMING_SPEEDS, 2),
                "acceleration": self._config(HOMING_ACCELERATION),
            }
            homing = dataclasses.replace(
                homing,
                method=method,
                home_offset=self.units.value(self._config(HOME_OFFSET)),
                **{key: self.units.value(counts) for key, counts in written.items() if counts > 0},
            )
            settings = dataclasses.replace(settings, homing=homing)
        control.settings = settings

    def _prepare_to_run(self) -> bool:
        """Before Operation enabled: the written configuration into the drive. False: cannot run."""
        drive = self.drive
        mode = MODES.get(self._mode)
        if mode is None:
            return False
        gains = self.gains()
        try:
            if gains is not None:
                drive.configure_position_loop(gains, self.control_period)
            drive.set_mode(mode)
        except (DriveError, GainError):
            return False  # e.g. CSP without a position loop: the drive cannot run (stays)
        self._configure_control()
        self._homing_error = False
        return True

    def _quick_stop_category(self) -> StopCategory:
        """0x605A: 0 -> category 0; 1, 2 -> ramp then off (1); 5, 6 -> ramp and hold (2)."""
        option = self._config(QUICK_STOP_OPTION_CODE)
        if option in (1, 2):
            return StopCategory.RAMP_THEN_OFF
        if option in (5, 6):
            return StopCategory.RAMP_AND_HOLD
        return StopCategory.TORQUE_OFF

    def _transition(self, new: Cia402State) -> None:
        old, self._state = self._state, new
        if new is old:
            return
        drive = self.drive
        if new is Cia402State.OPERATION_ENABLED:
            if old is not Cia402State.QUICK_STOP_ACTIVE and not self._prepare_to_run():
                self._state = old
                return
            drive.reset_fault()  # leaves QUICK_STOP (transition 16); no-op when DISABLED
            drive.enable()
            position = drive.feedback().position
            self._csp_from = self._csp_to = position
            self._csp_velocity = 0.0
            self._target_position = self.units.counts(position)
            self._target_torque = self._torque_offset = self._velocity_offset = 0
        elif new is Cia402State.QUICK_STOP_ACTIVE:
            category = self._quick_stop_category()
            drive.quick_stop(category)
            if category is StopCategory.TORQUE_OFF:
                self._transition(Cia402State.SWITCH_ON_DISABLED)
        elif new is Cia402State.SWITCH_ON_DISABLED and old is Cia402State.FAULT:
            drive.reset_fault()
            self._error_code = 0
            self._emcy_reset()
        elif new is Cia402State.SWITCHED_ON and old is Cia402State.OPERATION_ENABLED:
            drive.disable()  # disable operation (0x605C = 1): ramp, brake under power, then off
        else:  # disable voltage, shutdown: power stage off at once
            drive.quick_stop(StopCategory.TORQUE_OFF)
            drive.reset_fault()

    def _enter_fault(self, error_code: int) -> None:
        self._error_code = int(error_code)
        if self.drive.state is not DriveState.FAULT:
            self.drive.inject_fault(
                describe_error_code(error_code), controllable=fault_reaction_ramps(error_code)
            )
        # Fault reaction active while the drive still ramps and brakes under power, then Fault.
        self._state = Cia402State.FAULT_REACTION_ACTIVE if self.drive.control.power else Cia402State.FAULT
        if self.network is not None:
            self.node.emcy.send(self._error_code, ERROR_REGISTER_GENERIC)

    def _emcy_reset(self) -> None:
        if self.network is not None:
            self.node.emcy.reset()

    def _latch_command(self) -> None:
        """At a SYNC: the latest RPDO values become the drive's command for the period."""
        self._csp_from = self._csp_target()
        self._csp_to = self.units.value(self._target_position)
        self._csp_velocity = self.units.value(self._velocity_offset)
        self._since_sync = 0.0

    def _csp_target(self) -> float:
        """The interpolated CSP target now: linear from the last SYNC's to the new one over a
        period, then extrapolated with the velocity offset (a missed SYNC: the drive goes on at
        the commanded speed until its watchdog stops it, the worst case of CiA 402 drives)."""
        fraction = min(1.0, self._since_sync / self.sync_period)
        overtime = max(0.0, self._since_sync - self.sync_period)
        return self._csp_from + (self._csp_to - self._csp_from) * fraction + self._csp_velocity * overtime

    def _command(self) -> None:
        """One position-loop period's command to the drive, by mode (only while running)."""
        if self._state is not Cia402State.OPERATION_ENABLED or self.drive.control.stopping is not None:
            return
        if self._mode == MODE_CYCLIC_SYNCHRONOUS_TORQUE:
            self.drive.command_current(self.scaling.current_for_target_torque(self._target_torque))
        elif self._mode == MODE_CYCLIC_SYNCHRONOUS_POSITION:
            self.drive.command_position(
                self._csp_target(),
                self._csp_velocity,
                self.scaling.current_for_target_torque(self._torque_offset),
            )

    def _watch_master(self) -> None:
        """The drive watches its master: SYNC loss and the consumer heartbeat (0x1016)."""
        if self._state is not Cia402State.OPERATION_ENABLED:
            return
        reason = None
        periods = self.sync_loss_periods
        if periods and self._last_sync is not None:
            silent = self.time - self._last_sync
            if silent >= periods * self.sync_period * (1.0 - 1e-9):
                reason, code = f"no SYNC for {silent:.4f} s ({periods} periods)", SYNC_LOST_ERROR_CODE
        consumer = self._config(CONSUMER_HEARTBEAT_TIME, 1) & 0xFFFF
        if reason is None and consumer and self._last_heartbeat is not None:
            silent = self.time - self._last_heartbeat
            if silent >= consumer / 1000.0 * (1.0 - 1e-9):
                reason, code = f"no heartbeat from the master for {silent:.4f} s", HEARTBEAT_ERROR_CODE
        if reason is None:
            return
        self.master_lost = f"master lost at {self.time:.4f} s: {reason}"
        self.master_lost_time = self.time
        action = self._config(ABORT_CONNECTION_OPTION_CODE)
        if action == 1:
            self._enter_fault(code)
            return
        if self.network is not None:
            self.node.emcy.send(code, ERROR_REGISTER_COMMUNICATION)
        if action == 2:
            self._transition(Cia402State.SWITCH_ON_DISABLED)
        elif action == ABORT_CONNECTION_QUICK_STOP:
            self._transition(Cia402State.QUICK_STOP_ACTIVE)

    def _advance(self) -> None:
        """One SYNC period of the drive, in position-loop periods (control_rate sub-steps)."""
        drive, joint = self.drive, self.joint
        h = self.sync_period / self._substeps
        for _ in range(self._substeps):
            self._watch_master()
            self._command()
            effort = drive.advance(h, joint.position, joint.velocity)
            if drive.brake_engaged and abs(effort) <= drive.brake_holding_effort:
                joint.velocity = 0.0  # the holding brake holds the joint
            else:
                joint.step(effort, h)
            self.time += h
            self._since_sync += h
            if (
                self._state is Cia402State.QUICK_STOP_ACTIVE
                and drive.control.stop_done
                and not drive.control.power
            ):
                self._transition(Cia402State.SWITCH_ON_DISABLED)  # category 1 done: braked, off
            elif self._state is Cia402State.FAULT_REACTION_ACTIVE and not drive.control.power:
                self._state = Cia402State.FAULT  # the fault reaction ended: braked, off
        drive.advance(0.0, joint.position, joint.velocity)  # latch the encoder at the SYNC instant
        if drive.state is DriveState.FAULT and self._state not in _FAULT_STATES:
            self._enter_fault(OVERSPEED_ERROR_CODE)
        self._sense()

    def _sense(self) -> None:
        feedback = self.drive.feedback()
        self._position_counts = self.units.counts(feedback.position)
        self._velocity_counts = self.units.counts(feedback.velocity)
        self._current_actual = self.scaling.current_actual(feedback.current)

    def _statusword(self) -> int:
        value = statusword_for(self._state)
        control = self.drive.control
        if control.stopping is not None and control.stop_done:
            value |= SW_TARGET_REACHED
        if self._mode == MODE_HOMING:
            if control.homed:
                value |= SW_HOMING_ATTAINED | SW_TARGET_REACHED
            if self._homing_error:
                value |= SW_HOMING_ERROR
        return value

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
    sync_period: float | None = None,
    absolute_encoder: bool = True,
) -> CanopenServoSimulator:
    """A simulated drive for one axis (JOINT_NAMES or the drill feed), numbers from the parameter file.

    `inertia`: the joint's effective inertia including the reflected rotor (kg or kg*m^2), e.g.
    the control configuration's effective_inertia; damping is the joint's viscous friction.
    `sync_period`: simulated seconds per SYNC (default canopen.sync_period; the drive bridge in
    CST SYNCs every control period). SYNC loss after canopen.sync_loss_periods periods of
    canopen.sync_period. `absolute_encoder=False`: the position counts from the power-up
    position until homing (homing.<axis>: the switch, the home offset).
    """
    if axis not in params.canopen.node_ids:
        raise ValueError(f"no CANopen node id for axis {axis!r}")
    drive = drive_for_joint(params, axis, absolute_encoder=absolute_encoder)
    damping = params.axis(axis).damping
    period = params.canopen.sync_period if sync_period is None else sync_period
    loss_time = params.canopen.sync_loss_periods * params.canopen.sync_period
    return CanopenServoSimulator(
        params.canopen.node_ids[axis],
        drive,
        JointModel(inertia=inertia, damping=damping, position=position),
        period,
        eds=eds,
        sync_loss_periods=max(1, round(loss_time / period)),
    )


def serve(
    params: RobotParameters,
    network: canopen.Network,
    inertias: dict[str, float],
    stop: threading.Event,
    *,
    axes: tuple[str, ...] | None = None,
) -> list[CanopenServoSimulator]:
    """Attach one simulator per axis (default: every driven axis, drive_axes()) to the connected
    `network`; return when `stop` is set.

    In real time: a drive that receives no SYNC runs on its own (wall) clock, so that its SYNC
    loss and heartbeat watchdogs stop it when the master goes silent."""
    axes = drive_axes() if axes is None else axes
    simulators = [simulator_for_axis(params, axis, inertia=inertias[axis]) for axis in axes]
    for simulator in simulators:
        simulator.attach(network)
    run_alone(simulators, stop, params.canopen.sync_period)
    for simulator in simulators:
        simulator.detach()
    return simulators


def run_alone(simulators: Sequence[CanopenServoSimulator], stop: threading.Event, period: float) -> None:
    """Real time, until `stop` is set: every `period` s (the SYNC period) each drive that has had
    no SYNC runs a period on its own clock (run_alone_if_silent), so that its SYNC-loss and
    heartbeat watchdogs stop it when the master goes silent."""
    while not stop.wait(period):
        now = time.monotonic()
        for simulator in simulators:
            simulator.run_alone_if_silent(now)
