"""The drive bridge on real motors: CiA 402 servo drives on the CAN buses of the parameter file.

`CanopenBackend` is a `bridge.backend.DriveBackend`. It owns one `canopen.Network` per bus of
`params.canopen.channels` (can0, can1, can2), opened with a python-can interface and a channel
per bus (`CanBusConfig`: socketcan and the bus names by default; tests use python-can's
"virtual" interface), builds the drives with `canopen_drives_for_buses`, keeps those of the
commanded joints (the robot description's: no drill_feed node without the drill), and runs them
in lock-step with the control loop:

- start-up: open every bus, configure and start each kept node (SDO, NMT operational: the
  joint's PID gains of the control configuration into the drive's position loop, which runs its
  stop ramps, and the drive's watchdog on the master's heartbeat), one SYNC per bus so that
  feedback flows; the drives are enabled later by the hardware component. Each started drive's
  serial number (CiA 301 identity 0x1018:04, by SDO, once) makes `machine`, the machine on the
  buses that a calibration must name (quirobot_description.machine_identity). Any
  failure (no such interface or channel, a node that does not answer, a drive whose motor data
  disagree with the parameter file, a serial number not read, no feedback) closes what was opened
  and raises `DriveStartupError` naming the bus and node; no drive has been enabled.
- `before_read()`: one SYNC on every bus (sent by the loop itself, no free-running timer) and
  the master's heartbeat when due (`MasterHeartbeat`, canopen.heartbeat_period: a stalled loop
  stops both, and every drive stops itself within drive.master_timeout), then wait for every
  drive's TPDO1 + TPDO2 of that SYNC, at most `feedback_wait` s (wall clock; default one SYNC
  period). A drive that did not answer keeps its previous feedback. The SYNC rate follows the
  drives' mode (the hardware component sets it, control.drive_mode): while any drive is in CST
  (the host's PID sends currents) every control period (1 ms: the host loop needs its feedback
  every period); otherwise (CSP: the drives close their loops) every canopen.sync_period, a
  whole number of control periods (the cycles between reuse the last feedback).
- Setpoints: the drives apply only the latest RPDOs at a SYNC, so the backend defers them
  (`CanopenDrive.defer_setpoints`) and sends each drive's latest (`flush_setpoints`) in the
  after_write of the period before a SYNC (and before the SYNC itself, for anything written
  since): one RPDO1 + RPDO2 per drive per SYNC, not per control period (half the frames and
  the CPU in CSP at 2 ms).
- The drives' feedback watchdog runs on the wall clock (time.monotonic), stamped per SYNC: the
  drives' clock is the wall-clock time of the latest SYNC sent, so a TPDO answering it is 0 s
  old, and a node that answered no SYNC of the last canopen.feedback_timeout (wall clock, however
  many cycles that was) is a feedback-timeout fault, which stops every drive. A master that
  pauses between cycles (start-up, enabling by SDO, the OS) sends no SYNC, so it does not age
  the drives' answers.
- A SYNC the bus refuses to send (bus off, interface down, full queue) is a fault at once of
  every drive on that bus (`CanopenDrive.latch_fault`): the hardware component then quick-stops
  every drive, on the other buses by RPDO. (Drives on the lost bus cannot be reached: their own
  watchdog must stop them.)
- Reception: canopen's receive thread per bus (a python-can Notifier) at start-up; then
  `receive_in_cycle()` (drive_cycle's start_canopen_cycle, run exclusively) stops them and the
  thread that steps the backend takes the frames itself (drives.can_polling): every period
  it hands the frames waiting in the buses' sockets to canopen, and after a SYNC it blocks on
  the sockets until every drive's TPDOs are in (or feedback_wait). The cycle is then the only
  thread on its path: with receive threads it handed them the GIL at every frame it sent (a
  send releases it, and a loopback transport echoes the frame to them at once) and waited for
  it back. An SDO request (the caller of `exclusive` enabling a drive: the cycle's keep-alive
  periods take its answers; the homing sequence stepped by the cycle itself: its wait takes
  them, and sends the SYNC and heartbeat when due) works in both. Only a bus with a file
  descriptor can be polled (SocketCAN, udp_multicast; not python-can's virtual bus, which keeps
  its thread).
- `close()`: quick stop of every enabled drive by RPDO and NMT pre-operational (no more PDOs),
  then every bus disconnected; best effort, problems returned as text.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import can
import canopen

from quirobot_control.bridge.backend import DriveStartupError
from quirobot_control.drives.can_polling import bus_descriptor, take_frames, wait_readable
from quirobot_control.drives.canopen_master import CanopenDrive, MasterHeartbeat, canopen_drives_for_buses
from quirobot_control.drives.canopen_master.sdo_answers import SdoAnswers
from quirobot_control.drives.canopen_units import CanopenConfigurationError
from quirobot_control.drives.cia402 import DEFAULT_EDS
from quirobot_control.drives.interface import DriveError, DriveMode
from quirobot_control.hardware.control_config import ControlConfig
from quirobot_description.machine_identity import MachineIdentity
from quirobot_description.parameters import RobotParameters, drive_axes

#: s, how long a bus's reader thread blocks in one receive: bounds how long close() waits for it.
READER_POLL_PERIOD = 0.01


@dataclass(frozen=True)
class CanBusConfig:
    """How to reach the buses: a python-can interface, and the channel of each bus.

    `channels` maps a bus name of the parameter file (canopen.channels: can0, ...) to the
    python-can channel to open for it (e.g. can0 -> vcan0); a bus not listed opens the channel
    of its own name. `options` maps a bus name to more python-can arguments for it (e.g. the
    udp_multicast interface's `port`: one port per bus, since Linux delivers a multicast group's
    datagrams to every socket bound to the port).
    """

    interface: str = "socketcan"
    channels: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.interface, str) or not self.interface.strip():
            raise ValueError(f"CAN interface must be a non-empty name, got {self.interface!r}")
        for bus, channel in self.channels.items():
            if not str(bus).strip() or not str(channel).strip():
                raise ValueError(f"CAN channel mapping {bus!r} -> {channel!r}: both names must be non-empty")

    def channel(self, bus: str) -> str:
        return self.channels.get(bus, bus)

    def describe(self, bus: str) -> str:
        """'CAN bus can1 (socketcan channel can1)'."""
        return f"CAN bus {bus} ({self.interface} channel {self.channel(bus)})"


def parse_channel_map(text: str) -> dict[str, str]:
    """'can0=vcan0, can1=vcan1' -> {'can0': 'vcan0', 'can1': 'vcan1'}; '' -> {}."""
    mapping: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        bus, sep, channel = item.partition("=")
        bus, channel = bus.strip(), channel.strip()
        if not sep or not bus or not channel:
            raise ValueError(
                f"CAN channel mapping {item.strip()!r} is not of the form bus=channel (e.g. can0=vcan0)"
            )
        if bus in mapping:
            raise ValueError(f"CAN channel mapping names bus {bus} twice")
        mapping[bus] = channel
    return mapping


class CanopenBackend:
    """The bridge's drives on CANopen (see the module docstring)."""

    #: The started drives' serial numbers (0x1018:04), read at start-up: which machine this is.
    machine: MachineIdentity

    def __init__(
        self,
        params: RobotParameters,
        control: ControlConfig,
        config: CanBusConfig | None = None,
        *,
        joints: Sequence[str] | None = None,
        feedback_wait: float | None = None,
        eds: str | Path = DEFAULT_EDS,
        mode: DriveMode = DriveMode.CST,
    ) -> None:
        """`joints`: the commanded joints (of drive_axes(), the default: only their nodes are started);
        `feedback_wait`: s (wall clock) to wait for each cycle's TPDOs; default one control
        period; `mode`: the drives' mode at start-up (the hardware component sets its own,
        control.drive_mode, while they are disabled)."""
        self.params = params
        self.config = config or CanBusConfig()
        mode = DriveMode(mode)
        bus = params.canopen
        ratio = bus.sync_period / control.dt
        if ratio < 1.0 - 1e-9 or not math.isclose(ratio, round(ratio), rel_tol=1e-9):
            raise DriveStartupError(
                f"canopen.sync_period {bus.sync_period} s is not a whole number of control periods "
                f"({control.dt} s): the drive bridge sends one SYNC every so many periods in CSP"
            )
        self.csp_sync_every = round(ratio)
        unknown = sorted(set(self.config.channels) - set(bus.channel_names))
        if unknown:
            raise DriveStartupError(
                f"CAN channel mapping names unknown bus(es) {', '.join(unknown)}; "
                f"the parameter file's buses are {', '.join(bus.channel_names)}"
            )
        driven = drive_axes()
        joints = driven if joints is None else tuple(joints)
        missing = [name for name in joints if name not in driven]
        if missing:
            raise DriveStartupError(
                f"no CANopen drive for joint(s) {', '.join(missing)}; the axes are {', '.join(driven)}"
            )
        self.control_period = control.dt
        wait = control.dt if feedback_wait is None else feedback_wait
        if not math.isfinite(wait) or wait < 0.0:
            raise ValueError(f"feedback wait must be a finite number of seconds >= 0, got {feedback_wait!r}")
        self.feedback_wait = wait
        self.cycles = 0  # control cycles since start-up
        self.syncs = 0  # SYNC cycles since start-up
        self._sync_time = time.monotonic()  # s, wall clock of the latest SYNC sent
        self.flushes = 0  # setpoint flushes that put frames on the bus
        self.flush_time = math.nan  # s, wall clock (monotonic) when the latest flush ended
        self._drive_list: list[CanopenDrive] = []
        self._sync_plan: list[tuple[str, canopen.Network, MasterHeartbeat, list[int]]] = []
        self._targets: list[int] = []
        self.networks: dict[str, canopen.Network] = {}
        self.heartbeats: dict[str, MasterHeartbeat] = {}
        self.drives: dict[str, CanopenDrive] = {}
        self._closed = False
        self._polled = False  # the stepping thread reads the buses (receive_in_cycle)
        self._descriptors: list[int] = []  # their sockets
        self._stepping_thread: int | None = None  # threading.get_ident() of the thread that steps
        try:
            self._open_buses()
            # Absolute multi-turn encoders (drive.encoder_counts_per_rev): referenced at power-up.
            drives = canopen_drives_for_buses(
                params,
                self.networks,
                start=False,
                clock=self._sync_clock,
                eds=eds,
                mode=mode,
                homed=True,
            )
            self.drives = {name: drives[name] for name in joints}
            for name, drive in self.drives.items():
                drive.configure_position_loop(control.joint(name).gains, control.dt)
                drive.defer_setpoints = True
            self._plan_syncs()
            self._start_drives()
            self._first_feedback()
        except BaseException:
            self.close()
            raise

    # --- the control cycle ----------------------------------------------------------------------
    @property
    def sync_every(self) -> int:
        """Control periods per SYNC: 1 while a drive is in CST, else canopen.sync_period's."""
        if any(drive.mode is DriveMode.CST for drive in self.drives.values()):
            return 1
        return self.csp_sync_every

    def before_read(self) -> None:
        """A SYNC when due (see the module doc), then wait (at most feedback_wait) for the answers."""
        if self.cycles % self.sync_every == 0:
            self._flush()  # setpoints written since the last flush (e.g. at enable)
            self._sync(self.feedback_wait)
        elif self._polled:
            self._take_frames()  # EMCYs, heartbeats, SDO answers: none waits a SYNC period
        self.cycles += 1

    def after_write(self) -> None:
        """The setpoints on the bus if the next period sends a SYNC (the drives apply them at it)."""
        if self.cycles % self.sync_every == 0:
            self._flush()

    def keep_alive(self) -> None:
        """One control period that only keeps the drives' watchdogs fed: a SYNC (and the heartbeat)
        when due, no setpoints, no wait for the answers. While the bridge is busy elsewhere
        (enabling by SDO: bridge.drive_cycle's exclusive)."""
        if self._polled:
            self._take_frames()  # the answers to the exclusive caller's SDO requests among them
        if self.cycles % self.sync_every == 0:
            self._sync(0.0)
        self.cycles += 1

    def receive_threads(self) -> list[threading.Thread]:
        """The threads that receive the buses' frames (canopen's notifiers: the TPDO callbacks);
        none once the stepping thread takes them (`receive_in_cycle`)."""
        threads = []
        for network in () if self._polled else self.networks.values():
            readers = getattr(network.notifier, "_readers", ())  # python-can's Notifier threads
            threads.extend(r for r in readers if isinstance(r, threading.Thread))
        return threads

    def receive_in_cycle(self, stepping_thread: int) -> str | None:
        """From now on the thread that steps the backend (`stepping_thread`, its
        threading.get_ident()) takes the buses' frames (module doc) and canopen's receive threads
        stop. Call it while that thread is not stepping (DriveCycle.exclusive: a keep-alive
        period between the threads' stop and its first take only sends). None, or why not: the
        receive threads are kept then, and that thread's waits for an SDO answer still keep the
        SYNC going (`_take_while_waiting`)."""
        self._stepping_thread = stepping_thread
        for drive in self.drives.values():
            self._take_while_waiting(drive.sdo_answers)
        descriptors = [bus_descriptor(network.bus) for network in self.networks.values()]
        without = [bus for bus, d in zip(self.networks, descriptors, strict=True) if d < 0]
        if without:
            return (
                f"{', '.join(self.config.describe(bus) for bus in without)}: no file descriptor to "
                f"poll; canopen's receive threads kept"
            )
        for network in self.networks.values():
            if network.notifier is not None:
                network.notifier.stop(1.0)  # its reader ends within READER_POLL_PERIOD
        self._descriptors = descriptors
        self._polled = True
        return None

    @property
    def sync_time(self) -> float:
        """Monotonic time (s) of the latest SYNC sent."""
        return self._sync_time

    def close(self) -> list[str]:
        """Quick-stop enabled drives, NMT pre-operational, disconnect every bus (idempotent)."""
        if self._closed:
            return []
        self._closed = True
        problems = []
        for drive in self.drives.values():
            try:
                drive.stop()
            except (DriveError, can.CanError, OSError) as error:
                problems.append(f"{drive!r}: stop failed: {error}")
        for name, network in self.networks.items():
            try:
                network.disconnect()
            except (can.CanError, OSError) as error:
                problems.append(f"{self.config.describe(name)}: disconnect failed: {error}")
        return problems

    # --- internals ----------------------------------------------------------------------------
    def _sync_clock(self) -> float:
        """The drives' watchdog clock: wall-clock time (monotonic, s) of the latest SYNC sent."""
        return self._sync_time

    def _flush(self) -> None:
        sent = 0
        for drive in self._drive_list:
            sent += drive.flush_setpoints()
        if sent:
            self.flush_time = time.monotonic()
            self.flushes += 1

    def _plan_syncs(self) -> None:
        """Per bus, its network, heartbeat and the indices of its drives (no dict built per SYNC)."""
        names = list(self.drives)
        self._drive_list = [self.drives[name] for name in names]
        self._targets = [0] * len(names)
        channels = self.params.canopen.channels
        self._sync_plan = [
            (bus, network, self.heartbeats[bus], [k for k, n in enumerate(names) if channels[n] == bus])
            for bus, network in self.networks.items()
        ]

    def _sync(self, wait: float) -> None:
        """One SYNC on every bus; wait up to `wait` s (wall clock) for every drive's TPDO1 + TPDO2.

        A bus that refuses the SYNC faults its drives at once; nobody waits for their answers.
        """
        drives, targets = self._drive_list, self._targets
        for k, drive in enumerate(drives):
            targets[k] = drive.feedback_count + 1
        self.syncs += 1
        self._sync_time = time.monotonic()  # before sending: the answers are stamped with it
        for bus, network, heartbeat, members in self._sync_plan:
            try:
                network.sync.transmit()
                heartbeat.tick(self._sync_time)
            except (can.CanError, OSError, AttributeError) as error:  # AttributeError: bus gone
                reason = f"{self.config.describe(bus)}: SYNC not sent (bus off?): {_one_line(error)}"
                for k in members:
                    drives[k].latch_fault(reason)
                    targets[k] = 0  # nobody waits for it
        deadline = time.monotonic() + wait
        if self._polled:
            self._wait_polled(deadline)
            return
        for k, drive in enumerate(drives):
            if targets[k]:
                drive.wait_for_feedback(targets[k], max(0.0, deadline - time.monotonic()))

    def _take_frames(self) -> None:
        """The frames waiting on every bus to canopen; a bus that fails to receive (interface
        down) faults its drives at once, as a refused SYNC does: the safety layer then stops
        every drive, instead of a cycle that raises every period and never reaches it."""
        for bus, network, _, members in self._sync_plan:
            try:
                take_frames(network)
            except (can.CanError, OSError) as error:
                reason = f"{self.config.describe(bus)}: frames not received: {_one_line(error)}"
                for k in members:
                    self._drive_list[k].latch_fault(reason)

    def _wait_polled(self, deadline: float) -> None:
        """Take frames until every drive's TPDOs of the SYNC are in, or `deadline` (monotonic s)."""
        drives, targets, descriptors = self._drive_list, self._targets, self._descriptors
        while True:
            self._take_frames()
            if all(drive.feedback_count >= target for drive, target in zip(drives, targets, strict=True)):
                return
            if not wait_readable(descriptors, deadline - time.monotonic()):
                return

    def _take_while_waiting(self, answers: SdoAnswers) -> None:
        """A drive's waits for an SDO answer, when made by the stepping thread itself (the homing
        sequence stepped by the cycle, a request run by DriveCycle.call), send the SYNC (and the
        heartbeat) when due, as a keep-alive period does: an answer lost on the bus costs
        RESPONSE_TIMEOUT, and a dozen round trips tens of ms, both far longer than the drives'
        SYNC-loss watchdog, which would otherwise stop every drive. Polled, that thread also takes
        the frames meanwhile (no receive thread fills the SDO client's queue); else a receive
        thread does and it waits on the queue. Other threads wait as before (the stepping thread's
        periods go on)."""
        client = answers.client

        def take_frames(deadline: float) -> None:
            if threading.get_ident() != self._stepping_thread:
                return
            sync_period = self.sync_every * self.control_period
            while client.responses.empty() and (now := time.monotonic()) < deadline:
                if now - self._sync_time >= sync_period:
                    self._sync(0.0)
                until = min(deadline, self._sync_time + sync_period) - time.monotonic()
                if not self._polled:
                    _wait_not_empty(client.responses, until)
                elif wait_readable(self._descriptors, until):
                    self._take_frames()

        answers.take_frames = take_frames

    def _open_buses(self) -> None:
        for name in self.params.canopen.channel_names:
            network = canopen.Network()
            network.NOTIFIER_CYCLE = READER_POLL_PERIOD
            try:
                network.connect(
                    interface=self.config.interface,
                    channel=self.config.channel(name),
                    bitrate=self.params.canopen.bitrate,
                    **self.config.options.get(name, {}),
                )
            except (can.CanError, OSError, ValueError, ImportError) as error:
                raise DriveStartupError(
                    f"{self.config.describe(name)}: cannot open: {_one_line(error)}"
                ) from error
            self.networks[name] = network
            # Ticked every control period at most: due half a period early at most (its doc).
            self.heartbeats[name] = MasterHeartbeat(
                network,
                self.params.canopen.master_node_id,
                self.params.canopen.heartbeat_period,
                early=0.5 * self.control_period,
            )

    def _start_drives(self) -> None:
        """Start every drive, then read its serial number (by SDO, once: never in the cycle)."""
        channels = self.params.canopen.channels
        serials = {}
        for name, drive in self.drives.items():
            try:
                drive.start()
                serials[name] = drive.read_serial_number()
            except (DriveError, CanopenConfigurationError) as error:
                raise DriveStartupError(
                    f"{self.config.describe(channels[name])}: {_one_line(error)}"
                ) from error
        self.machine = MachineIdentity.of(serials)

    def _first_feedback(self) -> None:
        """Feedback must flow before the hardware enables anything: one SYNC, every node answers."""
        self._sync(max(self.feedback_wait, self.params.canopen.transition_timeout))
        silent = [name for name, drive in self.drives.items() if drive.feedback_count < 1]
        if silent:
            channels = self.params.canopen.channels
            who = "; ".join(
                f"{self.config.describe(channels[n])}: drive {n} (CANopen node {self.drives[n].node_id})"
                for n in silent
            )
            timeout = self.params.canopen.transition_timeout
            raise DriveStartupError(
                f"no feedback (TPDO1 and TPDO2) within {timeout} s of the first SYNC from {who}"
            )


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def _wait_not_empty(responses: queue.Queue, timeout: float) -> None:
    """Wait until `responses` holds an item or `timeout` s pass (its item is left in it). Under the
    queue's own lock (its `not_empty` condition, which `put` notifies): `empty()` would take that
    lock again, so the deque is looked at directly."""
    with responses.not_empty:
        if not responses.queue and timeout > 0.0:
            responses.not_empty.wait(timeout)
