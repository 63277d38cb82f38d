"""Drive-loop benchmark: drive_node's CANopen cycle process on a busy host, against drives in other processes.

    python bench/drive_loop.py [--seconds 60] [--busy N ...] [--gc freeze] [--json] [--save [FILE]]

The master is drive_node's real-drive path: `bridge.cycle_process.start_cycle_process` (the
hardware component, safety layer, CanopenBackend on the parameter file's three buses, stepped by
`bridge.drive_cycle.DriveCycle` in a process of its own), with a "ROS side" thread in this process,
on SCHED_FIFO ROS_SIDE_PRIORITY as drive_node's, that posts a
JointState command every 1 ms (gantry_x on a 0.5 mm, 0.5 Hz sine, the others held) and reads
the published state, as drive_node's subscription and timer do. The six drives are
CanopenServoSimulators (drive_simulators.canopen_slave, on their own wall clock when no SYNC comes, so
their SYNC-loss and heartbeat watchdogs are live) in three other processes (one per bus), on python-can's
udp_multicast interface (one multicast port per bus: the kernel has no vcan here); each drives'
process records the SYNCs, EMCYs and gantry_x's TPDO1 its socket receives, with the kernel's
receive time stamps.

`--busy N`: N processes spinning at normal priority beside the run, started and stopped by the
bench (the issue's "two busy processes per core" is 2 x os.cpu_count()); several values run one
after the other. Measured over `--seconds` after 1 s of warm-up:

- sync_period: intervals between SYNCs on can0, from the receiving socket's kernel time stamps
  (not from the sender's own clock), p50 / p99 / p99.9 / max, s;
- late_cycles: control periods that started more than 1 ms after their deadline (plus the
  deadlines skipped after them);
- sync_loss_stops: EMCYs 0x8100 (SYNC lost) or 0x8130 (heartbeat lost) on any bus: a drive
  stopped itself because the master was late;
- command_to_rpdo: from posting a command to the setpoint frames computed from it leaving on the
  bus (the cycle's flush before a SYNC), p50 / p99, s, from the first command on (warm-up
  included: a drive that stops itself in the window sends no setpoint after, and a window-only
  figure was then "nan"; command_to_rpdo_count says how many were measured, stopped_in_window
  how long, s, the drives were stopped or disabled in the window, sending no setpoint); a command
  superseded by a newer one before any flush never reaches the bus and is not counted, nor is a
  setpoint sent again while no new command came (command_interval: s between the ROS side's
  posts, p50 / p99 / max, says how often they came);
- host_floor: a bare SCHED_FIFO loop on 1 ms deadlines in a process of its own on each CPU (a
  stall of either CPU stalls the cycle when its GIL's holder is on it), above every thread of
  the run, from before the drives start to the end: the worst CPU's lateness p50 / p99 / p99.9 / max and
  the wake-ups more than 1 and 5 ms late and later than the drives' watchdog (over_watchdog:
  `watchdog`, the shorter of drive.master_timeout and the SYNC-loss time, 10 ms: a host stall
  that long stops the drives whatever the cycle does, so it explains a SYNC-loss stop), over the
  whole run ("run") and the window ("window"): what this machine does to any real-time thread;
  steal: the CPU time the hypervisor took from the machine's CPUs over the window, s (a VM);
- sync_loss_stops_run: sync_loss_stops over the whole run (start-up and warm-up too); a stop in
  the window is cleared as an operator clears it (WindowOperator: cleared_in_window, their
  reasons), so that the rest of the window measures commands again;
- stops_run / stops_unexplained_run: those EMCYs of the whole run as stops (the drives' watchdogs
  expire together: EMCYs less than STOP_GAP apart are one stop), and the stops that no host
  floor wake-up later than the watchdog explains (`stop_causes`: none within a watchdog of the
  stop's time): a stop the cycle itself caused;
- cycle_cpu: CPU time of the cycle thread per SYNC cycle (the control periods from one SYNC to
  the next: SYNC, TPDO wait, safety layer, RPDO packing), p50 / p99, s; udp_multicast's sends
  are part of it (transport_per_sync_cycle estimates them), and the line above the table gives
  the master alone (`--master-cpu`: the same path in-process with the transport taken away);
- drive_answer / drive_unanswered: the simulated gantry_x's SYNC -> TPDO1 latency, and the SYNCs
  it answered only after the next one; drives_cpu_cores / master_cpu_cores: CPU of the drives'
  processes and of drive_node's process over the window.

The master's own limits on the drives (feedback timeout, state-change timeout) are relaxed for
the simulated drives (MASTER_FEEDBACK_TIMEOUT_PERIODS below); the drives' watchdogs on the
master keep the parameter file's values.

`--ros-side drive_node` replaces the plain posting thread with drive_node's own rclpy adapter
(nodes.drive_node.DriveNode: its executor, 1 kHz joint-state timer, /diagnostics) in this process,
fed by a 1 kHz command publisher in another: run it in a ROS 2 environment with the package built.

`--json` prints one JSON object per run (the keys above, in seconds, and the run's conditions);
`--save` also writes the text to bench/results/drive_loop.txt. `--gc auto|freeze|manual` and
`--no-realtime` (no SCHED_FIFO, no mlockall) compare the cycle's settings.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import json
import math
import os
import random
import subprocess
import sys
import threading
import time

import numpy as np
import psutil
from bench_results import add_save_option, saved_output
from canopen.sdo.client import SdoClient

from quirobot_control.bridge.backend import DriveStartupError
from quirobot_control.bridge.canopen_backend import CanBusConfig
from quirobot_control.bridge.cycle_exchange import GC_POLICIES, CycleSettings
from quirobot_control.bridge.cycle_process import ROS_SIDE_PRIORITY, CycleSpec, start_cycle_process
from quirobot_control.bridge.cycle_realtime import raise_process
from quirobot_control.bridge.drive_bridge import BridgeError
from quirobot_control.bridge.drive_cycle import start_canopen_cycle
from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import axes_for, load_parameters
from quirobot_description.urdf import robot_description

START = {
    "gantry_x": 0.5,
    "gantry_y": 0.5,
    "gantry_z": 0.5,
    "wrist_yaw": 1.0,
    "wrist_pitch": 0.3,
    "drill_feed": 0.02,
}
GROUP = "239.74.163.2"  # python-can udp_multicast's IPv4 default group
SYNC_ID = 0x80
DRIVES = axes_for("drill")  # the run's drives: robot_description("drill", "real")
EMCY_BASE = 0x80  # EMCY of node n: 0x80 + n
MASTER_LOST_CODES = (0x8100, 0x8130)  # CiA 301: SYNC lost (the simulator's), heartbeat lost
WARM_UP = 1.0  # s before measuring
LATE = 1e-3  # s: a period that starts later than this is late
RECEIVE_MODES = ("cycle", "threads")  # who reads the buses (CycleSettings.receive_in_cycle)
#: The ROS side: a plain thread posting commands (no ROS needed), or drive_node's own rclpy adapter.
ROS_SIDES = ("thread", "drive_node")
COMMANDS_TOPIC = "/quirobot/drive_loop_bench/joint_commands"
STATES_TOPIC = "/quirobot/drive_loop_bench/joint_states"
#: The host's own floor, measured beside each run: a bare loop in a process of its own, on
#: SCHED_FIFO above every thread of the run, sleeping to absolute 1 ms deadlines and doing
#: nothing else. Its lateness is what this machine (a VM here: the hypervisor deschedules a
#: virtual CPU now and then) does to any real-time thread; the cycle cannot be on time more often.
PROBE_PRIORITY = 60
PROBE_PERIOD = 1e-3
#: s, the master's SDO response timeout here (canopen's 0.3 s; a real drive answers in ms): the
#: simulated drives' process shares two loaded cores (as in test/support/virtual_can.py).
SdoClient.RESPONSE_TIMEOUT = 1.0
#: The drives' processes stand for hardware. SCHED_FIFO above drive_node while it brings the
#: bridge up (its busy start-up starved them: feedback timeouts); then SCHED_FIFO 35, below every
#: thread of the cycle process (cycle 50, receivers 49, its other Python threads 40: a drive never
#: preempts one that holds the GIL, which at 45 held the cycle with it), above drive_node's own
#: side (30: its 1 kHz joint states starved drives at 20 of SDO answers, test/support/
#: drives_process.py) and every normal process (at nice -10 they shared the cores with the other
#: load and answered a SYNC up to 55 ms late at p99 (5 s runs, load 8); at 30, 3-8 ms).
SLAVE_PRIORITY = 45
#: The master's own wall-clock limits on the drives, relaxed for the drives simulated here (as
#: test/control/bridge/test_drive_cycle.py relaxes them): feedback timeout 500 SYNC periods (1 s,
#: the file's is 5 = 10 ms) and state-change timeout 2 s (the file's 0.1 s). Python drives in
#: three processes on the same two loaded cores answer a SYNC late now and then (their answer
#: latency is measured: drive_answer), which a drive's firmware does not; at 10 ms the master
#: then stopped every drive and the bench measured nothing. These limits guard the master against
#: a dead drive, which is not what the bench measures. The drives' watchdogs on the master (SYNC
#: loss and heartbeat, 10 ms: sync_loss_stops) keep the file's values, and the parameter file
#: (drive_node's real-drive path) is not changed.
MASTER_FEEDBACK_TIMEOUT_PERIODS = 500
MASTER_TRANSITION_TIMEOUT = 2.0
SLAVE_RUN_PRIORITY = 35


def bus_config(params, base_port: int) -> CanBusConfig:
    buses = params.canopen.channel_names
    return CanBusConfig(
        "udp_multicast",
        {bus: GROUP for bus in buses},
        {bus: {"port": base_port + k} for k, bus in enumerate(buses)},
    )


# --- the drives' process ------------------------------------------------------------------------
def serve_drives(base_port: int, bus: str) -> None:
    """One bus's simulated drives and a reader of its frames (a process per bus): 'ready' on
    stdout, then on a line 'T0 T1' (time.time() of the window) its SYNC times and EMCY codes as
    JSON."""
    import canopen

    from quirobot_control.drive_simulators.canopen_slave import run_alone, simulator_for_axis

    with contextlib.suppress(OSError, AttributeError):  # the drives stand for hardware; threads inherit it
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(SLAVE_PRIORITY))
    params = load_parameters()
    control = control_configuration(params)
    config = bus_config(params, base_port)
    network = canopen.Network()
    network.connect(interface=config.interface, channel=config.channel(bus), **config.options[bus])
    simulators = []
    for axis in params.canopen.axes_on(bus):
        simulator = simulator_for_axis(
            params, axis, inertia=control.joint(axis).effective_inertia, position=START[axis]
        )
        simulator.attach(network)
        simulators.append(simulator)
    stop = threading.Event()
    records: list[tuple[float, int, int]] = []

    def record(cob: int, data: bytes, timestamp: float) -> None:
        """(kernel receive time stamp s, COB-ID, first two data bytes) of a SYNC, EMCY or TPDO1."""
        if not stop.is_set():
            records.append((timestamp, cob, int.from_bytes(bytes(data[:2]), "little")))

    # The drives' own socket's frames, with its kernel receive time stamps (python-can's
    # udp_multicast reads SO_TIMESTAMPNS): no second socket per bus receiving every frame again.
    for cob in (SYNC_ID, *range(EMCY_BASE + 1, EMCY_BASE + 0x80), 0x181):
        network.subscribe(cob, record)

    # The simulators' own clocks when no SYNC comes (as canopen_slave.serve runs them).
    period = params.canopen.sync_period
    threading.Thread(target=run_alone, args=(simulators, stop, period), daemon=True).start()
    print("ready", flush=True)
    sys.stdin.readline()  # the measured window starts
    cpu_at_t0 = time.process_time()
    sys.stdin.readline()  # it ends
    cpu_at_t1 = time.process_time()
    line = sys.stdin.readline().split()
    t0, t1 = (float(line[0]), float(line[1])) if len(line) == 2 else (-math.inf, math.inf)
    stop.set()
    inside = [r for r in list(records) if t0 <= r[0] <= t1]
    result = {
        "syncs": [t for t, cob, _ in inside if cob == SYNC_ID],
        "emcy_codes": [code for _, cob, code in inside if SYNC_ID < cob < SYNC_ID + 0x80],
        # the whole run, warm-up and start-up included: a stop there ends the run's surgery too
        "emcy_codes_run": [code for _, cob, code in list(records) if SYNC_ID < cob < SYNC_ID + 0x80],
        # (time.time() s, code) of every SYNC-loss or heartbeat EMCY of the run (stop_causes)
        "master_lost_run": [
            (t, code)
            for t, cob, code in list(records)
            if SYNC_ID < cob < SYNC_ID + 0x80 and code in MASTER_LOST_CODES
        ],
        "tpdo1": [t for t, cob, _ in inside if cob == 0x181],
        "drives_cpu": time.process_time(),  # s of CPU of this process
        "drives_cpu_window": cpu_at_t1 - cpu_at_t0,  # s of it in the measured window
    }
    network.disconnect()
    print(json.dumps(result), flush=True)


def udp_send_cost(port: int, count: int = 500) -> float:
    """s of CPU per udp_multicast send of an 8-byte frame, with two more members on the group
    (as the cycle's frames reach the drives' process and its reader)."""
    import can

    sender, *members = (can.Bus(interface="udp_multicast", channel=GROUP, port=port) for _ in range(3))
    frame = can.Message(arbitration_id=0x301, data=bytes(8), is_extended_id=False)
    begin = time.thread_time()
    for _ in range(count):
        sender.send(frame)
    cost = (time.thread_time() - begin) / count
    for bus in (sender, *members):
        bus.shutdown()
    return cost


def command_at(names: list[str], elapsed: float) -> tuple[list[float], list[float]]:
    """The run's command `elapsed` s after the ROS side started: gantry_x on a 0.5 mm, 0.5 Hz sine,
    the others held at START; (positions, velocities), m or rad and per s."""
    phase = 2.0 * math.pi * 0.5 * elapsed
    position = [START[n] + (0.5e-3 * math.sin(phase) if n == "gantry_x" else 0.0) for n in names]
    velocity = [0.5e-3 * math.pi * math.cos(phase) if n == "gantry_x" else 0.0 for n in names]
    return position, velocity


def publish_commands(names: list[str]) -> None:
    """`--ros-side drive_node`'s controller (a process of its own, as ros2_control_node is): the
    run's command on COMMANDS_TOPIC every 1 ms (sensor_msgs/JointState, sensor-data QoS, as the
    joint_state_topic plugin sends it); 'ready' on stdout, then until killed."""
    import rclpy
    from rclpy.node import Node
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    rclpy.init()
    node = Node("drive_loop_commands")
    publisher = node.create_publisher(JointState, COMMANDS_TOPIC, qos_profile_sensor_data)
    start = time.monotonic()

    def tick() -> None:
        message = JointState()
        message.name = names
        message.position, message.velocity = command_at(names, time.monotonic() - start)
        publisher.publish(message)

    node.create_timer(1e-3, tick)
    print("ready", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        rclpy.spin(node)


class DriveNodeSide:
    """`--ros-side drive_node`: drive_node's own ROS adapter (nodes.drive_node.DriveNode: the
    command subscription, the 1 kHz joint-state timer, /diagnostics, the services) on `cycle`, spun
    by a single-threaded rclpy executor in this process as drive_node spins it, fed by
    `publish_commands` in another process. Needs ROS 2 and the built quirobot package."""

    @staticmethod
    def start_controller(names: list[str]) -> subprocess.Popen:
        """The command publisher's process, started before the cycle: a fork of this process once
        its memory is locked stalls every thread of it (the cycle's too) for up to 100 ms."""
        controller = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--publish-commands", ",".join(names)],
            stdout=subprocess.PIPE,
            text=True,
        )
        if controller.stdout.readline().strip() != "ready":
            controller.kill()
            raise SystemExit("drive_loop: the command publisher did not start")
        return controller

    def __init__(self, control, controller: subprocess.Popen) -> None:
        """The node and drive_node's adapter (every ROS entity), before the cycle starts, as
        drive_node makes them (nodes.drive_node's module doc: making one holds the GIL)."""
        import rclpy
        from rclpy.node import Node

        from quirobot_control.nodes.drive_node import DriveNode, DriveNodeParameters

        self.rclpy, self.controller = rclpy, controller
        rclpy.init()
        self.node = Node("drive_loop_drive_node")
        parameters = DriveNodeParameters(
            description="",
            commands_topic=COMMANDS_TOPIC,
            states_topic=STATES_TOPIC,
            backend_name="canopen",
            can_interface="udp_multicast",
            can_channels="",
            simulated_bone="",
            plant="ideal",
            machine=None,
            fault_injection=False,
            publish_clock=False,
            controller_rate=0,
            lockstep_timeout=1.0,
            lockstep_republish=0.5,
            homing=False,
            stopped_controllers=[],
        )
        self.skin = DriveNode(self.node, parameters, None, control)
        self.executor = self.spinner = None

    def attach(self, cycle) -> None:
        """The drives are up: the adapter on the cycle, spun by a single-threaded executor."""
        from rclpy.executors import SingleThreadedExecutor

        self.skin.attach(cycle.bridge, cycle)
        self.executor = SingleThreadedExecutor()
        self.executor.add_node(self.node)
        self.spinner = threading.Thread(target=self.executor.spin, name="rclpy-executor", daemon=True)
        self.spinner.start()

    def close(self) -> None:
        self.controller.kill()
        self.controller.wait()
        if self.executor is not None:
            self.executor.shutdown()
            self.spinner.join(5.0)
        self.node.destroy_node()
        self.rclpy.shutdown()


#: Start-up stops the bench clears before its window (recover), at most.
RECOVERIES = 3
#: s between the window operator's looks at the drives (WindowOperator).
OPERATOR_PERIOD = 0.2


def clear_stop(cycle, why: str) -> str | None:
    """The drives' stop, if they are stopped, cleared as an operator clears it (disable,
    acknowledge the stop, enable): the stop's reason (with why it was not cleared, if a drive
    refused), or None if they were not stopped."""
    latest = cycle.latest
    reason = latest.sample.stop_reason if latest is not None else None
    if not reason:
        return None
    with contextlib.suppress(BridgeError):
        cycle.bridge.disable()
    try:  # a drive that stopped again meanwhile refuses: the next try clears it
        cycle.bridge.acknowledge_stop(why)
        cycle.bridge.enable(time.monotonic())
    except BridgeError as error:
        return f"{reason} (not cleared: {error})"
    return reason


def recover(cycle) -> list[str]:
    """A stop before the window (the drives stopped themselves on a host stall at start-up: the
    whole window would run without a setpoint, command -> RPDO unmeasured) cleared as an operator
    clears it (clear_stop), then WARM_UP again; at most RECOVERIES times. The stops cleared (their
    reasons); they still count in sync_loss_stops_run and stops_run."""
    cleared = []
    for _ in range(RECOVERIES):
        reason = clear_stop(cycle, "bench: a stop before the measured window")
        if reason is None:
            break
        cleared.append(reason)
        time.sleep(WARM_UP)
    return cleared


class WindowOperator:
    """An operator beside the window: every OPERATOR_PERIOD s, a stop of the drives is cleared
    (clear_stop), so that a host stall longer than the drives' watchdog (which stops them whatever
    the master does) leaves the rest of the window measuring commands. The stops still count in
    sync_loss_stops and stops_run; `cleared` holds their reasons, `stopped_in_window` (run_once)
    the time the drives spent stopped."""

    def __init__(self, cycle) -> None:
        self.cycle, self.cleared = cycle, []
        self.times: list[float] = []  # time.time() s of each clear's end (the EMCYs' clock)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="window-operator", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(30.0)
        return self.cleared

    def _run(self) -> None:
        while not self._stop.wait(OPERATOR_PERIOD):
            reason = clear_stop(self.cycle, "bench: a stop in the measured window")
            if reason is not None:
                self.cleared.append(reason)
                self.times.append(time.time())


def watchdog_time(params) -> float:
    """s: the drives' watchdog on the master, the shorter of the consumer heartbeat time
    (drive.master_timeout) and the SYNC-loss time (canopen.sync_loss_periods SYNC periods)."""
    return min(params.drive.master_timeout, params.canopen.sync_loss_periods * params.canopen.sync_period)


def probe(watchdog: float, cpu: int) -> None:
    """The host's floor on one CPU (PROBE_PRIORITY, pinned to `cpu`): a bare loop on absolute
    PROBE_PERIOD deadlines from 'ready' on stdout until a line 'T0 T1' (time.monotonic() of the
    measured window) on stdin; then prints its lateness (s) as JSON for the whole run and for the
    window (`floor_stats`, `watchdog` s the drives' watchdog) and its stalls longer than the
    watchdog. One process per CPU (`host_floor`): a stall of either CPU stalls the cycle when the
    thread holding its process's GIL is on it, which a probe on the other CPU does not see."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(0, {cpu})
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(PROBE_PRIORITY))
    from quirobot_control.bridge.cycle_realtime import absolute_sleeper

    sleep_until, stop, window = absolute_sleeper(), threading.Event(), []
    capacity = 1_800_000  # half an hour of periods, preallocated: the loop allocates nothing
    deadlines, lateness, k = np.empty(capacity), np.empty(capacity), 0

    def wait_for_window() -> None:
        window.extend(float(x) for x in sys.stdin.readline().split())
        stop.set()

    threading.Thread(target=wait_for_window, daemon=True).start()
    print("ready", flush=True)
    deadline = time.monotonic() + PROBE_PERIOD
    while not stop.is_set() and k < capacity:
        sleep_until(deadline)
        deadlines[k], lateness[k] = deadline, time.monotonic() - deadline
        k += 1
        deadline += PROBE_PERIOD
    deadlines, lateness = deadlines[:k], lateness[:k]
    inside = (deadlines >= window[0]) & (deadlines <= window[1]) if len(window) == 2 else np.ones(k, bool)
    stats = {"run": floor_stats(lateness, watchdog), "window": floor_stats(lateness[inside], watchdog)}
    # Its wake-ups later than the watchdog over the run: (deadline, lateness) s, the deadline on
    # time.time()'s clock (the drives' EMCY time stamps').
    realtime = time.time() - time.monotonic()
    over = lateness > watchdog
    stalls = zip(deadlines[over].tolist(), lateness[over].tolist(), strict=True)
    stats["stalls"] = [(d + realtime, x) for d, x in stalls]
    print(json.dumps(stats), flush=True)


def host_floor(probes: list[dict]) -> dict:
    """The floor of the CPUs' probes (`probe`, one per CPU): each figure of "run" and "window" the
    worst CPU's (a real-time thread may land on it), the stalls of every CPU."""
    parts = ("run", "window")
    floor = {part: {key: max(p[part][key] for p in probes) for key in probes[0][part]} for part in parts}
    floor["cpus"] = len(probes)
    floor["stalls"] = sorted(stall for p in probes for stall in p["stalls"])
    return floor


#: s between two SYNC-loss EMCYs of one stop (the drives' watchdogs expire together).
STOP_GAP = 0.1


def stop_causes(master_lost: list[tuple[float, int]], stalls: list[tuple[float, float]], watchdog: float):
    """The run's stops from the drives' SYNC-loss and heartbeat EMCYs ((time s, code), any bus),
    each a cluster of them less than STOP_GAP s apart: (stops, the unexplained ones' times), where a stop is
    explained by a host stall longer than the watchdog (the floor's (deadline s, lateness s))
    that it falls within `watchdog` of: such a stall stops the drives whatever the cycle does."""
    times = sorted(t for t, _ in master_lost)
    stops = [t for k, t in enumerate(times) if k == 0 or t - times[k - 1] > STOP_GAP]
    unexplained = [
        t for t in stops if not any(d - watchdog <= t <= d + late + watchdog for d, late in stalls)
    ]
    return len(stops), unexplained


def floor_stats(lateness: np.ndarray, watchdog: float) -> dict[str, float]:
    """Lateness (s) p50, p99, p999, max, and the wake-ups later than 1 ms, 5 ms and `watchdog` s
    (the drives' watchdog: over_watchdog)."""
    result = percentiles(lateness, 50, 99, 99.9, 100)
    result["over_1ms"] = int(np.count_nonzero(lateness > 1e-3))
    result["over_5ms"] = int(np.count_nonzero(lateness > 5e-3))
    result["over_watchdog"] = int(np.count_nonzero(lateness > watchdog))
    return result


def steal_seconds() -> float:
    """CPU time the hypervisor took from this machine's CPUs so far (/proc/stat steal), s; NaN
    where there is no such counter."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return math.nan


def tell(slaves: list[subprocess.Popen], line: str) -> None:
    """One line to every drives' process."""
    for slave in slaves:
        slave.stdin.write(line + "\n")
        slave.stdin.flush()


def normal_scheduling() -> None:
    """This process to SCHED_OTHER (a child's preexec_fn)."""
    with contextlib.suppress(OSError):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def set_process_priority(pid: int, priority: int) -> None:
    """Every thread of process `pid` to SCHED_FIFO `priority` (best effort)."""
    for name in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            os.sched_setscheduler(int(name), os.SCHED_FIFO, os.sched_param(priority))


# --- one run ------------------------------------------------------------------------------------
def percentiles(values: np.ndarray, *qs: float) -> dict[str, float]:
    values = values[np.isfinite(values)]
    names = {50: "p50", 99: "p99", 99.9: "p999", 100: "max"}
    if values.size == 0:
        return {names[q]: math.nan for q in qs}
    return {names[q]: float(np.percentile(values, q)) for q in qs}


def run(
    seconds: float, busy: int, gc_policy: str, realtime: bool, receive: str, ros_side: str, attempts: int = 5
) -> dict:
    """One measured run (`run_once`); a start-up that fails (the drives' processes and this one
    share two loaded cores: a simulated drive late by the master's 10 ms feedback timeout while
    it is enabled) is retried with fresh drives, at most `attempts` times, and counted."""
    failures = []
    for _ in range(attempts):
        try:
            result = run_once(seconds, busy, gc_policy, realtime, receive, ros_side)
        except DriveStartupError as error:
            failures.append(" ".join(str(error).split()))
            continue
        result["start_up_failures"] = failures
        return result
    raise SystemExit(f"drive_loop: start-up failed {attempts} times: {failures[-1]}")


def bench_parameters():
    """The parameter file with the master's own limits relaxed for the simulated drives (above)."""
    params = load_parameters()
    bus = dataclasses.replace(
        params.canopen,
        feedback_timeout_periods=MASTER_FEEDBACK_TIMEOUT_PERIODS,
        transition_timeout=MASTER_TRANSITION_TIMEOUT,
    )
    return dataclasses.replace(params, canopen=bus)


def answer_latency(syncs: list[float], answers: list[float]) -> np.ndarray:
    """s from each SYNC to the first answer (TPDO1) after it and before the next SYNC (kernel
    receive time stamps of the same socket); NaN for a SYNC not answered in its period."""
    syncs_a, answers_a = np.asarray(syncs), np.asarray(answers)
    if syncs_a.size < 2 or answers_a.size == 0:
        return np.array([])
    k = np.searchsorted(answers_a, syncs_a[:-1])
    ok = k < answers_a.size
    latency = np.full(syncs_a.size - 1, np.nan)
    latency[ok] = answers_a[k[ok]] - syncs_a[:-1][ok]
    latency[latency > np.diff(syncs_a)] = np.nan
    return latency


def run_once(seconds: float, busy: int, gc_policy: str, realtime: bool, receive: str, ros_side: str) -> dict:
    params = bench_parameters()
    control = control_configuration(params)
    base_port = 43000 + 3 * random.randrange(1000)
    send_cost = udp_send_cost(base_port + 2000)
    buses = len(params.canopen.channel_names)
    frames_per_sync_cycle = buses * (
        1 + params.canopen.sync_period / params.canopen.heartbeat_period
    ) + 2 * len(DRIVES)
    here = os.path.abspath(__file__)
    # The floor's probe first, running through the whole run (start-up included); and the ROS
    # side's command publisher: nothing forks once the cycle runs (DriveNodeSide.start_controller).
    watchdog = watchdog_time(params)
    floors = [
        subprocess.Popen(
            [sys.executable, here, "--probe", repr(watchdog), "--probe-cpu", str(cpu)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for cpu in sorted(os.sched_getaffinity(0))
    ]
    controller = DriveNodeSide.start_controller(list(DRIVES)) if ros_side == "drive_node" else None
    slaves = [
        subprocess.Popen(
            [sys.executable, here, "--serve-drives", str(base_port), bus],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for bus in params.canopen.channel_names
    ]
    spinners: list[subprocess.Popen] = []
    cycle = bridge = ros = node_side = None
    try:
        if any(slave.stdout.readline().strip() != "ready" for slave in slaves):
            raise SystemExit("drive_loop: the simulated drives did not start")
        if any(floor.stdout.readline().strip() != "ready" for floor in floors):
            raise SystemExit("drive_loop: the floor's probe did not start")
        if controller is not None:  # drive_node's ROS entities before its drives (DriveNodeSide)
            node_side = DriveNodeSide(control, controller)
        settings = CycleSettings(
            priority=50 if realtime else 0,
            lock_memory=realtime,
            gc_policy=gc_policy,
            receive_in_cycle=receive == "cycle",
        )
        spec = CycleSpec(
            params,
            control,
            robot_description("drill", "real"),
            bus_config(params, base_port),
            settings,
            sdo_response_timeout=SdoClient.RESPONSE_TIMEOUT,
        )
        cycle = start_cycle_process(spec)
        bridge, report = cycle.bridge, cycle.report_text
        if realtime:  # this process as drive_node's (nodes.drive_node._start_real_cycle)
            raise_process(ROS_SIDE_PRIORITY, skip=0)
        master = psutil.Process(cycle.child.pid)
        if realtime:  # below every real-time thread of drive_node now (SLAVE_RUN_PRIORITY)
            for slave in slaves:
                set_process_priority(slave.pid, SLAVE_RUN_PRIORITY)
        # At normal priority: a child inherits its parent thread's policy, and this thread is on
        # SCHED_FIFO now (go_realtime raises the process's threads): spinners at SCHED_FIFO 40
        # took both cores from the drives (at 30) and from this thread.
        spinners = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=normal_scheduling)
            for _ in range(busy)
        ]
        names = bridge.names
        stop_ros = threading.Event()
        published = []
        posts = np.full(int((WARM_UP + seconds) / 1e-3) + 10_000, np.nan)  # monotonic s of each post
        posted = [0]

        post = cycle.post_command

        def post_recorded(names, position, velocity=(), *, now: float) -> None:
            """The cycle's post_command, its time recorded (command_interval)."""
            post(names, position, velocity, now=now)
            if posted[0] < posts.size:
                posts[posted[0]] = now
                posted[0] += 1

        cycle.post_command = post_recorded

        def thread_side() -> None:
            """drive_node's subscription and timer: a command every 1 ms, the state read back."""
            start = time.monotonic()
            while not stop_ros.is_set():
                now = time.monotonic()
                position, velocity = command_at(list(names), now - start)
                cycle.post_command(list(names), position, velocity, now=now)
                latest = cycle.latest
                if latest is not None:
                    published.append(dict(zip(latest.sample.names, latest.sample.position, strict=True)))
                    del published[:-100]
                time.sleep(1e-3)

        collections: list[tuple[int, float]] = []  # (generation, s) of each collection in the run
        began = [0.0]

        def timed_collection(phase: str, info: dict) -> None:
            if phase == "start":
                began[0] = time.perf_counter()
            else:
                collections.append((info["generation"], time.perf_counter() - began[0]))

        gc.callbacks.append(timed_collection)
        if node_side is not None:
            node_side.attach(cycle)
        else:
            ros = threading.Thread(target=thread_side, daemon=True)
            ros.start()
        time.sleep(WARM_UP)
        recoveries = recover(cycle)
        timing = cycle.request("timing")
        mark, t0, skipped = int(timing["cycles"]), time.time(), timing["skipped"]
        window_start = time.monotonic()
        process_cpu, steal = time.process_time(), steal_seconds()
        master_cpu_time = sum(master.cpu_times()[:2])
        tell(slaves, "start")
        operator = WindowOperator(cycle)
        operator.start()
        time.sleep(seconds)
        cleared_in_window, clear_times = operator.stop(), operator.times
        timing = cycle.request("timing")
        end, t1, skipped = int(timing["cycles"]), time.time(), int(timing["skipped"] - skipped)
        window_end = time.monotonic()
        process_cpu, steal = time.process_time() - process_cpu, steal_seconds() - steal
        master_cpu_time = sum(master.cpu_times()[:2]) - master_cpu_time
        tell(slaves, "end")
        gc.callbacks.remove(timed_collection)
        floor = host_floor(
            [json.loads(f.communicate(f"{window_start} {window_end}\n", timeout=60)[0]) for f in floors]
        )
        load = os.getloadavg()
        stop_ros.set()
        if ros is not None:
            ros.join()
        if node_side is not None:
            node_side.close()
            node_side = None
        stats = cycle.request("stats", timeout=60.0)  # the rings, before the child ends
        stop_reason = cycle.latest.sample.stop_reason if cycle.latest else "no cycle ran"
        # The drives' records end here, with the cycle still running: closing it stops the SYNCs
        # (the drives would record their SYNC loss as a stop of the run).
        tell(slaves, f"{t0} {t1}")
        buses = dict(
            zip(params.canopen.channel_names, (json.loads(s.stdout.readline()) for s in slaves), strict=True)
        )
        cycle.stop()
    finally:
        if node_side is not None:
            node_side.close()
        if cycle is not None:
            cycle.stop()
        if bridge is not None:
            bridge.close()
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        for process in [*slaves, *floors, *([controller] if controller is not None else [])]:
            if process.poll() is None:
                process.kill()
            process.wait()
    window_posts = posts[(posts >= window_start) & (posts <= window_end)]
    lateness = stats.window(stats.lateness, mark, end)
    cpu = stats.window(stats.cpu, mark, end)
    synced = np.isfinite(stats.window(stats.sync, mark, end))
    # CPU per SYNC cycle: the periods from one SYNC up to the next.
    starts = np.flatnonzero(synced)
    sync_cpu = np.add.reduceat(cpu, starts)[:-1] if starts.size > 1 else np.array([])
    command_to_rpdo = stats.window(stats.command_to_rpdo, 0, end)
    # s the drives spent stopped or disabled in the window (the hardware not active): they send
    # no setpoints then, so command -> RPDO has no samples there
    active = stats.window(stats.active, mark, end)
    stopped = float(np.count_nonzero(active == 0.0)) * control.dt
    first_bus = params.canopen.channel_names[0]
    emcys = [code for bus in buses.values() for code in bus["emcy_codes"]]
    stalls = [tuple(x) for x in floor.pop("stalls")]
    stops, unexplained = stop_causes(
        [tuple(e) for bus in buses.values() for e in bus["master_lost_run"]], stalls, watchdog
    )
    return {
        "sync_period": percentiles(np.diff(np.array(buses[first_bus]["syncs"])), 50, 99, 99.9, 100),
        "late_cycles": int(np.count_nonzero(lateness > LATE)) + skipped,  # in the window
        "sync_loss_stops": sum(code in MASTER_LOST_CODES for code in emcys),
        "sync_loss_stops_run": sum(
            code in MASTER_LOST_CODES for bus in buses.values() for code in bus["emcy_codes_run"]
        ),
        # The run's stops (clusters of those EMCYs, stop_causes) and of them the ones no host stall
        # longer than the watchdog explains: the cycle's own.
        "stops_run": stops,
        "stops_unexplained_run": len(unexplained),
        # Each unexplained stop: s from the nearest host stall longer than the watchdog, and from
        # the nearest stop the window's operator cleared (its enable), to tell what preceded it.
        "unexplained_stops": [
            {
                "from_stall": min((t - d for d, _ in stalls), key=abs, default=math.nan),
                "from_clear": min((t - c for c in clear_times), key=abs, default=math.nan),
            }
            for t in unexplained
        ],
        # The host's floor over the window (probe) and the CPU time the hypervisor took (s).
        "host_floor": floor,
        "steal": steal,
        # From the first command on (the ring from cycle 0: NaN before it), not the window only.
        "command_to_rpdo": percentiles(command_to_rpdo, 50, 99),
        "command_to_rpdo_count": int(np.count_nonzero(np.isfinite(command_to_rpdo))),
        "stopped_in_window": stopped,
        "watchdog": watchdog,  # s: the drives' watchdog (host_floor's over_watchdog)
        # How often the ROS side's thread posted a command (every 1 ms asked; s between posts in
        # the window): its own scheduling, not the cycle's latency.
        "command_interval": percentiles(np.diff(window_posts), 50, 99, 100),
        # Python's garbage collections in drive_node's process over the run: how many, and the
        # longest (s; it holds the GIL, so every thread of the process waits).
        "collections": len(collections),
        "longest_collection": max((pause for _, pause in collections), default=0.0),
        "cycle_cpu": percentiles(sync_cpu, 50, 99),
        # The simulated drives (gantry_x, on can0): SYNC -> its TPDO1, and the SYNCs it did not
        # answer within their period; the master's feedback timeout is relaxed for them (above).
        "drive_answer": percentiles(
            answer_latency(buses[first_bus]["syncs"], buses[first_bus]["tpdo1"]), 50, 99, 100
        ),
        "drive_unanswered": int(
            np.count_nonzero(np.isnan(answer_latency(buses[first_bus]["syncs"], buses[first_bus]["tpdo1"])))
        ),
        "master_feedback_timeout": params.canopen.feedback_timeout,
        # CPU of the three drives' processes over the window, in cores (s of CPU per s).
        "drives_cpu_cores": sum(bus["drives_cpu_window"] for bus in buses.values()) / seconds,
        # CPU of the cycle process (cycle, its reporter and command reader) and of drive_node's
        # side (this process: the ROS side, the pipes' reader and sender) over the window, cores:
        # on SCHED_FIFO the kernel's real-time throttling (sched_rt_runtime_us, 95 % of each
        # second) stops every real-time thread for the rest of a second that used more.
        "master_cpu_cores": master_cpu_time / seconds,
        "ros_side_cpu_cores": process_cpu / seconds,
        # The transport's share: udp_multicast's send (msgpack + sendto + the kernel's loopback to
        # every member socket) per frame, times the frames the cycle sends per SYNC cycle (a SYNC
        # and the heartbeat every other SYNC per bus, RPDO1 + RPDO2 per drive). A SocketCAN send
        # costs a fraction of it.
        "transport_per_sync_cycle": send_cost * frames_per_sync_cycle,
        "udp_send": send_cost,
        "period_cpu": percentiles(cpu, 50, 99),
        "lateness": percentiles(lateness, 50, 99, 99.9, 100),
        "cycles": int(end - mark),
        "seconds": seconds,
        "busy": busy,
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in load],
        "gc": gc_policy,
        "receive": receive,
        "ros_side": ros_side,
        "realtime": report,
        "emcy_codes": sorted({f"0x{code:04X}" for code in emcys}),
        "stop_reason": stop_reason,
        # The stops before the window that the bench cleared as an operator does (recover).
        "recoveries": recoveries,
        # The stops in the window the bench cleared as an operator does (WindowOperator).
        "cleared_in_window": cleared_in_window,
        "drives": list(DRIVES),
    }


def master_cpu(periods: int = 1000, repeats: int = 15) -> dict[str, float]:
    """CPU of drive_node's master per SYNC cycle, the transport out of the way: the real-drive
    path (start_canopen_cycle, six drives, CSP) brought up against six simulated drives on
    python-can's in-process virtual bus; then, the cycle thread stopped, its buses discard every
    frame and each drive's TPDOs count as arrived when the backend waits for them, and
    `DriveBridge.step` runs here with a command every period (gantry_x's sine, as in `run`).
    What is left is the master: commands, the safety layer, the PDO packing, the drives' state
    machines and watchdogs. Per SYNC cycle (canopen.sync_period / control period steps), s: the
    minimum and median over `repeats` runs of `periods` steps (this thread's CPU time)."""
    import canopen

    from quirobot_control.drive_simulators.canopen_slave import simulator_for_axis

    params = bench_parameters()
    control = control_configuration(params)
    channels = {bus: f"drive-loop-cpu-{bus}-{os.getpid()}" for bus in params.canopen.channel_names}
    networks = []
    for bus, channel in channels.items():
        network = canopen.Network()
        network.NOTIFIER_CYCLE = 0.01
        network.connect(interface="virtual", channel=channel)
        networks.append(network)
        for axis in params.canopen.axes_on(bus):
            simulator_for_axis(
                params, axis, inertia=control.joint(axis).effective_inertia, position=START[axis]
            ).attach(network)
    settings = CycleSettings(priority=0, lock_memory=False)
    cycle = start_canopen_cycle(
        params,
        control,
        robot_description("drill", "real"),
        can=CanBusConfig("virtual", channels),
        settings=settings,
    )
    bridge, backend = cycle.bridge, cycle.backend
    names = list(bridge.names)
    try:
        cycle.post_command(names, [START[n] for n in names], [0.0] * len(names), now=time.monotonic())
        deadline = time.monotonic() + 5.0
        while not bridge.started and time.monotonic() < deadline:
            time.sleep(1e-3)
        cycle.stop()

        class Discard:
            def send(self, message, timeout=None) -> None:
                pass

        buses = {name: network.bus for name, network in backend.networks.items()}
        for network in backend.networks.values():
            network.bus = Discard()
        for drive in backend.drives.values():

            def arrived(count: int, timeout: float, drive=drive) -> bool:
                now = drive.clock()
                with drive._lock:
                    drive._tpdo_times[:] = [now, now]
                    drive._tpdo_counts[:] = [count, count]
                return True

            drive.wait_for_feedback = arrived
        start = time.monotonic()
        k = 0
        runs = []
        for _ in range(repeats + 1):
            begin = time.thread_time()
            for _ in range(periods):
                now = start + k * control.dt
                phase = 2.0 * math.pi * 0.5 * k * control.dt
                position = [START[n] + (0.5e-3 * math.sin(phase) if n == "gantry_x" else 0.0) for n in names]
                velocity = [0.5e-3 * math.pi * math.cos(phase) if n == "gantry_x" else 0.0 for n in names]
                bridge.command(names, position, velocity, now=now)
                sample = bridge.step(now)
                k += 1
            if sample.stop_reason is not None:
                raise SystemExit(f"drive_loop: master CPU run stopped: {sample.stop_reason}")
            runs.append((time.thread_time() - begin) / periods * backend.csp_sync_every)
        runs = sorted(runs[1:])  # the first: warm-up
        for name, network in backend.networks.items():
            network.bus = buses[name]
    finally:
        cycle.stop()
        bridge.close()
        for network in networks:
            network.disconnect()
    return {"min": runs[0], "median": runs[len(runs) // 2], "periods": periods, "repeats": repeats}


def table(results: list[dict]) -> str:
    ms, us = 1e3, 1e6
    lines = [
        "| load beside the loop | buses read by | ROS side | SYNC period p50 / p99 / p99.9 / max (ms) "
        "| cycle lateness p99.9 / max (ms) "
        "| periods > 1 ms late | SYNC-loss or heartbeat stops (window / whole run) "
        "| command -> RPDO p50 / p99 (ms), samples, drives stopped in the window (s) "
        "| CPU per SYNC cycle p50 / p99 (us) | of it, udp sends (us) "
        "| host floor: bare 1 ms loop lateness p99 / p99.9 / max (ms), wake-ups > 5 ms late "
        "| host floor wake-ups later than the drives' watchdog (window / whole run) "
        "| stops in the whole run / of them not explained by a host stall > watchdog | steal (ms) "
        "| load average (1 min) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        s, c, u, late = r["sync_period"], r["command_to_rpdo"], r["cycle_cpu"], r["lateness"]
        f, whole = r["host_floor"]["window"], r["host_floor"]["run"]
        lines.append(
            f"| {'idle' if r['busy'] == 0 else str(r['busy']) + ' busy processes'} "
            f"| {'cycle thread' if r['receive'] == 'cycle' else 'receive threads'} "
            f"| {'drive_node (rclpy)' if r['ros_side'] == 'drive_node' else 'a thread'} "
            f"| {s['p50'] * ms:.2f} / {s['p99'] * ms:.2f} / {s['p999'] * ms:.2f} / {s['max'] * ms:.2f} "
            f"| {late['p999'] * ms:.2f} / {late['max'] * ms:.2f} "
            f"| {r['late_cycles']} of {r['cycles']} | {r['sync_loss_stops']} / {r['sync_loss_stops_run']} "
            f"| {c['p50'] * ms:.2f} / {c['p99'] * ms:.2f}, {r['command_to_rpdo_count']}, "
            f"{r['stopped_in_window']:.1f} "
            f"| {u['p50'] * us:.0f} / {u['p99'] * us:.0f} "
            f"| {r['transport_per_sync_cycle'] * us:.0f} "
            f"| {f['p99'] * ms:.2f} / {f['p999'] * ms:.2f} / {f['max'] * ms:.2f}, {f['over_5ms']} "
            f"| {f['over_watchdog']} / {whole['over_watchdog']} "
            f"| {r['stops_run']} / {r['stops_unexplained_run']} | {r['steal'] * ms:.0f} "
            f"| {r['load_average'][0]:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured time per run, s (default 60)")
    parser.add_argument(
        "--busy",
        type=int,
        nargs="+",
        default=None,
        help="busy processes beside the loop, one run per value (default: 0 and 2 per core)",
    )
    parser.add_argument(
        "--gc",
        choices=GC_POLICIES,
        nargs="+",
        default=["freeze"],
        help="the cycle's GC policies, one run each",
    )
    parser.add_argument(
        "--receive",
        choices=RECEIVE_MODES,
        nargs="+",
        default=["cycle"],
        help="who reads the buses: the cycle thread (default) or canopen's receive threads; one run each",
    )
    parser.add_argument(
        "--ros-side",
        choices=ROS_SIDES,
        nargs="+",
        default=["thread"],
        help="the ROS side: a plain thread posting a command every 1 ms (default, no ROS needed) or "
        "drive_node's own rclpy adapter fed by a 1 kHz publisher process (ROS 2 and the built "
        "package); one run each",
    )
    parser.add_argument("--no-realtime", action="store_true", help="no SCHED_FIFO, no mlockall")
    parser.add_argument("--json", action="store_true", help="one JSON object per run (s), no table")
    parser.add_argument(
        "--master-cpu",
        action="store_true",
        help="only the master's CPU per SYNC cycle with the transport out of the way (master_cpu)",
    )
    parser.add_argument("--serve-drives", nargs=2, metavar=("PORT", "BUS"), help=argparse.SUPPRESS)
    parser.add_argument("--probe", type=float, metavar="WATCHDOG", help=argparse.SUPPRESS)
    parser.add_argument("--probe-cpu", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--publish-commands", metavar="NAMES", help=argparse.SUPPRESS)
    add_save_option(parser, "drive_loop.txt")
    args = parser.parse_args()
    if args.serve_drives is not None:
        serve_drives(int(args.serve_drives[0]), args.serve_drives[1])
        return
    if args.probe is not None:
        probe(args.probe, args.probe_cpu)
        return
    if args.publish_commands is not None:
        publish_commands(args.publish_commands.split(","))
        return
    if not args.seconds > 0.0:
        parser.error(f"--seconds must be > 0, got {args.seconds}")
    busy = args.busy if args.busy is not None else [0, 2 * (os.cpu_count() or 1)]
    if any(n < 0 for n in busy):
        parser.error(f"--busy must be >= 0, got {busy}")
    with saved_output(args.save):
        line = ""
        if args.master_cpu or not args.json:  # the table's first line (--json: only if asked)
            cpu = master_cpu()
            line = (
                f"master CPU per SYNC cycle, transport out of the way (in-process, {cpu['repeats']} runs "
                f"of {cpu['periods']} periods): min {cpu['min'] * 1e6:.0f} us, median "
                f"{cpu['median'] * 1e6:.0f} us"
            )
            if args.master_cpu:
                print(json.dumps({"master_cpu": cpu}) if args.json else line)
                return
        results = []
        for n in busy:
            for policy in args.gc:
                for receive in args.receive:
                    for ros_side in args.ros_side:
                        result = run(args.seconds, n, policy, not args.no_realtime, receive, ros_side)
                        results.append(result)
                        if args.json:
                            print(json.dumps(result), flush=True)
        if not args.json:
            print(
                f"drive_node's CANopen cycle process, 6 simulated CiA 402 drives in other processes "
                f"(udp_multicast, 3 buses), {args.seconds:g} s per run, {os.cpu_count()} CPUs"
            )
            print(line)
            print(table(results))
            for r in results:
                print(
                    f"busy {r['busy']}: {r['realtime']}; load average {r['load_average']}; lateness p99.9 "
                    f"{r['lateness']['p999'] * 1e3:.3f} ms, max {r['lateness']['max'] * 1e3:.3f} ms; CPU per "
                    f"control period p50 {r['period_cpu']['p50'] * 1e6:.0f} us; "
                    f"EMCYs {r['emcy_codes'] or 'none'}; "
                    f"start-ups that failed first: {len(r['start_up_failures'])}; "
                    f"stops cleared before the window: {'; '.join(r['recoveries']) or 'none'}; "
                    f"stops cleared in the window: {len(r['cleared_in_window'])}; "
                    f"stop: {r['stop_reason'] or 'none'}"
                )


if __name__ == "__main__":
    main()
