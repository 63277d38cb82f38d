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
- Identity: the serial number 0x1018:04 names the simulated drive's machine
  (quirobot_description.machine_identity): by default the nominal simulated machine's
  (`simulated_machine(None)`) for the drive's joint, `serial_number` another; 0x1018:01..03 are
  the EDS's. A restart keeps it.
- Test hooks: `stop_feedback()` silences the TPDOs (a dead node seen from the master),
  `stop_sdo_server()` leaves SDO requests unanswered (a hung SDO server), `reboot()` restarts the
  node (power loss, reset: boot-up frame, pre-operational, configuration back to the EDS's).

Bench-top demo: `python -m quirobot_cli.canopen_servo_simulator --channel vcan0` serves every
axis on a (virtual) SocketCAN bus until Ctrl-C (`serve`); see docs/canopen.md.

Parts: profile (the objects, error codes, `next_state` and `statusword_for`), joint_model
(`JointModel`), bus (NMT, PDOs, SDO callbacks, heartbeat, SYNC: the network thread's side), servo
(the drive behind the object dictionary: transitions, stops, faults, watchdogs, motion); here
`CanopenServoSimulator` composes them, with its test hooks, and `simulator_for_axis`, `serve`,
`run_alone`.
"""

from __future__ import annotations

import dataclasses
import math
import struct
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import can
import canopen

from quirobot_control.drive_simulators.canopen_slave.bus import SlaveBus
from quirobot_control.drive_simulators.canopen_slave.joint_model import JointModel
from quirobot_control.drive_simulators.canopen_slave.profile import FACTORY_OBJECTS
from quirobot_control.drive_simulators.canopen_slave.servo import SlaveServo
from quirobot_control.drive_simulators.simulated_drive import SimulatedDrive, drive_for_joint
from quirobot_control.drives.can_polling import frames_waiting
from quirobot_control.drives.canopen_units import MotionScaling, TorqueScaling
from quirobot_control.drives.cia402 import (
    DEFAULT_EDS,
    MOTOR_RATED_CURRENT,
    MOTOR_RATED_TORQUE,
    POSITION_CONTROL_PARAMETERS,
    POSITION_CONTROL_SUBINDICES,
    POSITION_ENCODER_RESOLUTION,
    Cia402State,
)
from quirobot_control.drives.pid import GainError, PIDGains
from quirobot_description.machine_identity import MAX_SERIAL, SERIAL_NUMBER_OBJECT, simulated_machine
from quirobot_description.parameters import RobotParameters, drive_axes

__all__ = ["CanopenServoSimulator", "run_alone", "serve", "simulator_for_axis"]


class CanopenServoSimulator(SlaveBus, SlaveServo):
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
        serial_number: int | None = None,
    ) -> None:
        """`sync_period`: simulated seconds per SYNC; `drive` starts as it is (normally DISABLED).

        `sync_loss_periods`: SYNC periods without a SYNC (once SYNCs have come) after which the
        drive has lost its master (0: not watched). The drive's own command watchdog
        (master_timeout of its DriveController) is replaced by the CiA 301 ones: SYNC loss and
        the consumer heartbeat 0x1016, acting per the abort-connection option code 0x6007.
        `serial_number`: 0x1018:04 (UNSIGNED32); None, the nominal simulated machine's for the
        drive's joint (drive.name).
        """
        if not math.isfinite(sync_period) or sync_period <= 0.0:
            raise ValueError(f"SYNC period must be a positive number of seconds, got {sync_period!r}")
        if int(sync_loss_periods) != sync_loss_periods or sync_loss_periods < 0:
            raise ValueError(f"SYNC-loss periods must be a whole number >= 0, got {sync_loss_periods!r}")
        if serial_number is None:
            ((_, serial_number),) = simulated_machine(None, (drive.name,)).serials
        if (
            isinstance(serial_number, bool)
            or not isinstance(serial_number, int)
            or not 0 <= serial_number <= MAX_SERIAL
        ):
            raise ValueError(
                f"serial number must be a whole number in [0, {MAX_SERIAL}], got {serial_number!r}"
            )
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
        # Sub-index 4 only: 0x1018:01..03 keep the EDS's values (LocalNode falls back to them).
        identity, sub = SERIAL_NUMBER_OBJECT
        store[identity] = {sub: self._encode(identity, serial_number, sub)}
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
            for index in [i for i in store if i not in FACTORY_OBJECTS]:
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


def simulator_for_axis(
    params: RobotParameters,
    axis: str,
    *,
    inertia: float,
    position: float = 0.0,
    eds: str | Path = DEFAULT_EDS,
    sync_period: float | None = None,
    absolute_encoder: bool = True,
    serial_number: int | None = None,
) -> CanopenServoSimulator:
    """A simulated drive for one axis (JOINT_NAMES or the drill feed), numbers from the parameter file.

    `inertia`: the joint's effective inertia including the reflected rotor (kg or kg*m^2), e.g.
    the control configuration's effective_inertia; damping is the joint's viscous friction.
    `sync_period`: simulated seconds per SYNC (default canopen.sync_period; the drive bridge in
    CST SYNCs every control period). SYNC loss after canopen.sync_loss_periods periods of
    canopen.sync_period. `absolute_encoder=False`: the position counts from the power-up
    position until homing (homing.<axis>: the switch, the home offset). `serial_number`:
    0x1018:04, default the nominal simulated machine's (CanopenServoSimulator).
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
        serial_number=serial_number,
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
