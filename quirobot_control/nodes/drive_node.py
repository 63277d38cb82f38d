"""ROS 2 node `drive_node`: the drive side of joint_state_topic_hardware_interface (thin adapter).

Subscribes to the controllers' commands (sensor_msgs/msg/JointState on /quirobot/joint_commands:
name, position, velocity) and publishes the joint states (/quirobot/joint_states) at the
control rate, both with sensor-data QoS, as
joint_state_topic_hardware_interface/JointStateTopicSystem expects (hardware:=real in the
URDF; it subscribes to the states with sensor-data QoS and publishes the commands reliable,
depth 1). The joints and so the drives are those of the robot description's <ros2_control>
block. Every behaviour (start-up handshake, watchdog, safety layer) is in
`quirobot_control.bridge.drive_bridge.DriveBridge`; this node passes it the messages and a monotonic
clock (time.monotonic(), s). rclpy is imported only inside `main`.

Parameters:
- robot_description: the URDF XML (as the launch file gives robot_state_publisher). Empty
  (default): the node waits for the latched /robot_description topic (transient local).
- commands_topic, states_topic: defaults as in the URDF's <ros2_control> block.
- drive_backend: "simulated" (SimulatedDrives on the MuJoCo plant, default) or "canopen" (the
  CiA 402 servo drives on the CAN buses of the parameter file, canopen.channels). With "canopen"
  the bus cycle runs in its own thread (bridge.drive_cycle: absolute deadlines, SCHED_FIFO
  where granted); this node's subscription posts the commands to its mailbox, its timer
  publishes the cycle's latest joint state, its services run while the cycle keeps the bus
  alive: a slow callback here never delays a SYNC.
- can_interface: python-can interface of the buses (default socketcan).
- can_channels: "bus=channel" pairs (e.g. "can0=vcan0,can1=vcan1,can2=vcan2") for buses whose
  channel is not their own name (default: none).

Simulated backend only: `simulated_bone` (a task name, e.g. incision; default "none") puts that
task's bone in the plant (its thrust on the drill tip); `test_fault_injection` (default false,
tests only) adds the service ~/inject_fault (std_srvs/Trigger) that faults the drill feed's drive.

Time of the simulated plant, two ways:
- `publish_clock` false (default): the plant follows the wall clock, up to 10 periods per timer
  tick (a late tick catches up). Under load the plant can fall behind the controllers, which run
  on the wall clock: a following error of speed x lag.
- `publish_clock` true (sim.launch.py, with use_sim_time on the controller manager and the task
  node): the plant's time is the ROS time. drive_node publishes /clock (rosgraph_msgs/Clock) after
  every tick; ros2_control_node, on sim time, runs a cycle per period of that clock, so the
  trajectory controllers sample their trajectories at the plant's time. The plant runs with the
  wall clock (up to 10 periods a tick; time it could not run is dropped, not caught up), but never
  more than `command_window` (default 0.01 s) of plant time past the last command received: under
  load the simulation slows down instead of running on stale commands, and the controllers'
  following error stays below speed x command_window (the bridge holds each command to first
  order: position + velocity x its age, from its stamp). Waiting, the plant runs one period more
  every NUDGE_AFTER without a command (a clock sample the controller manager missed would hold
  it, and so the plant), never as far as the watchdog's hold. A strict lockstep (a period per command)
  was tried: it deadlocked now and then (a controller-manager cycle waiting for a clock sample
  that waited for its command) and ran at 4 % of real time on a loaded machine. Without a
  command for `lockstep_timeout` s of wall time (default 1: no controller manager yet, or a
  dead one) the plant runs on regardless, so the command watchdog (on the plant's clock then)
  still stops the drives on a lost stream.

Services (std_srvs/Trigger), the hardware component's lifecycle (bridge.drive_bridge):
/quirobot/drives/acknowledge_stop (clear a latched stop: every drive's fault reset, logged),
/quirobot/drives/enable (activate: drives enabled at the measured pose, a controller's first
command must be near it), /quirobot/drives/disable (deactivate: inverters off, brakes),
/quirobot/drives/home (the hardware's homing sequence, run period by period while disabled).
`homing` (default false; simulated backend): drives with incremental encoders, not homed at
start-up (the hardware refuses to enable them until /quirobot/drives/home has run); by default the
simulated drives have absolute encoders and start homed, and real drives report their own.

Outputs: a stop (a safety stop, the command watchdog, a drive fault) is logged once as an error
line "drives stopped: <reason>" and published on /quirobot/drive_stop (std_msgs/String, latched);
/quirobot/drives/state (quirobot/msg/DrivesState, latched: lifecycle, enabled, homed, the
latched stop) on every change and once a second; /diagnostics (diagnostic_msgs/DiagnosticArray,
bridge.diagnostics: the hardware and each drive's state, fault, position, current, homed; ERROR
with the reason on a stop) once a second and on every change.
A start-up failure (no such CAN interface, a node that does not
answer, a malformed description, ...) is logged in one line and the node exits with status 1
without enabling anything. On shutdown (SIGINT or SIGTERM) every drive is stopped and the buses
are released; the node exits with status 0.
"""

from __future__ import annotations

import math
import signal
import sys
import time


def main(args: list[str] | None = None) -> int:  # noqa: C901, PLR0915  (one node closing over ROS)
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
    from quirobot.msg import DrivesState
    from rclpy.node import Node
    from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
    from rclpy.signals import SignalHandlerOptions
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    from quirobot_control.bridge.canopen_backend import CanBusConfig, parse_channel_map
    from quirobot_control.bridge.diagnostics import drive_diagnostics
    from quirobot_control.bridge.drive_bridge import BridgeError, open_bridge
    from quirobot_control.loop.control_config import control_configuration
    from quirobot_description.parameters import FEED_JOINT, load_parameters

    # SIGINT and SIGTERM (launch's escalation) as KeyboardInterrupt in spin, so that the drives are
    # stopped and the buses released on the way out. Not rclpy's handler: it shuts the context
    # down under a spinning executor (a take_message RuntimeError, exit 1). Installed explicitly:
    # a SIGINT ignored by the parent (a launch in a non-interactive shell) is inherited as ignored.
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, _interrupt)
    node = Node("drive_node")
    description = node.declare_parameter("robot_description", "").value
    commands_topic = node.declare_parameter("commands_topic", "/quirobot/joint_commands").value
    states_topic = node.declare_parameter("states_topic", "/quirobot/joint_states").value
    backend_name = node.declare_parameter("drive_backend", "simulated").value
    can_interface = node.declare_parameter("can_interface", "socketcan").value
    can_channels = node.declare_parameter("can_channels", "").value
    simulated_bone = node.declare_parameter("simulated_bone", "").value
    fault_injection = bool(node.declare_parameter("test_fault_injection", False).value)
    publish_clock = bool(node.declare_parameter("publish_clock", False).value)
    lockstep_timeout = float(node.declare_parameter("lockstep_timeout", 1.0).value)
    command_window = float(node.declare_parameter("command_window", 0.01).value)
    homing = bool(node.declare_parameter("homing", False).value)

    def shut_down() -> None:
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()

    if not description:
        received: list[str] = []
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(String, "/robot_description", lambda m: received.append(m.data), latched)
        node.get_logger().info("waiting for /robot_description")
        try:
            while rclpy.ok() and not received:
                rclpy.spin_once(node, timeout_sec=0.5)
        except KeyboardInterrupt:
            shut_down()
            return 0
        if not received:
            shut_down()
            return 0
        description = received[0]
    # The plant's clock (publish_clock): `epoch` (wall time at start, s) + periods * dt, so that
    # stamps look like times; the bridge's clock is the periods run (s).
    sim = {"epoch": time.time(), "periods": 0}
    try:
        params = load_parameters()
        control = control_configuration(params)
        can = CanBusConfig(can_interface, parse_channel_map(can_channels))
        simulated = backend_name == "simulated"
        simulation_only = simulated_bone not in ("", "none") or fault_injection or publish_clock or homing
        if simulation_only and not simulated:
            raise ValueError(
                "simulated_bone, test_fault_injection, publish_clock and homing are for the simulated "
                "backend (real drives report whether they are homed)"
            )
        start = 0.0 if publish_clock else time.monotonic()
        cycle = None if simulated else _start_real_cycle(params, control, description, can, node)
        bridge = (
            cycle.bridge
            if cycle is not None
            else open_bridge(
                backend_name, params, control, description, now=start, can=can, absolute_encoders=not homing
            )
        )
        if simulated_bone not in ("", "none"):
            bridge.backend.place_bone(simulated_bone)
    except (ValueError, OSError) as error:
        node.get_logger().fatal(f"drive start-up failed: {' '.join(str(error).split())}")
        shut_down()
        return 1
    node.get_logger().info(f"drives up ({backend_name} backend): {', '.join(bridge.names)}")
    publisher = node.create_publisher(JointState, states_topic, qos_profile_sensor_data)
    reported = {"stop": None, "events": 0, "safety": 0, "state": None, "waiting": False}
    published = {"cycle": -1}  # the cycle of the latest joint state published (real drives)
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    stop_publisher = node.create_publisher(String, "/quirobot/drive_stop", latched)
    drives_state_publisher = node.create_publisher(DrivesState, "/quirobot/drives/state", latched)
    diagnostics_publisher = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
    clock_publisher = node.create_publisher(Clock, "/clock", 10) if publish_clock else None
    # Wall-clock pacing of the simulated plant, and (publish_clock) the period of the last command.
    wall = {"start": time.monotonic(), "periods": 0, "last_command": -math.inf, "command_time": 0.0}
    wall["nudged"] = -math.inf  # when the plant last ran a period without a command (on_timer)

    def bridge_now() -> float:
        """The bridge's clock (s): the plant's periods with publish_clock, else the monotonic clock."""
        return sim["periods"] * control.dt if publish_clock else time.monotonic()

    def stamp():
        if publish_clock:
            seconds = sim["epoch"] + sim["periods"] * control.dt
            return _time_message(seconds)
        return node.get_clock().now().to_msg()

    def advance(count: int) -> None:
        """Run `count` control periods, then publish the state (and the clock)."""
        for _ in range(count):
            sample = bridge.step(bridge_now())
            sim["periods"] += 1
        publish_sample(sample)

    def publish_sample(sample) -> None:
        """The joint state of a period (and the clock), then the stop and events."""
        message = JointState()
        message.header.stamp = stamp()
        message.name = list(sample.names)
        message.position = sample.position
        message.velocity = sample.velocity
        message.effort = sample.effort
        publisher.publish(message)  # before the clock: a controller cycle woken by it reads this
        if clock_publisher is not None:
            clock_publisher.publish(Clock(clock=message.header.stamp))
        report(sample.stop_reason)

    def report(stop_reason: str | None) -> None:
        for event in bridge.events[reported["events"] :]:
            node.get_logger().info(event)
        reported["events"] = len(bridge.events)
        log = bridge.hardware.log  # the safety layer's events (clamps, watchdog holds), bounded
        total = len(log.messages) + log.dropped
        if total != reported["safety"]:
            # Real drives: copied by the cycle thread, which appends to it.
            messages = list(log.messages) if cycle is None else _safety_messages(cycle)
            new = min(total - reported["safety"], len(messages))
            for event in messages[len(messages) - new :]:
                node.get_logger().warning(event)
            reported["safety"] = total
        if stop_reason and reported["stop"] != stop_reason:
            reported["stop"] = stop_reason
            node.get_logger().error(f"drives stopped: {stop_reason}")
            stop_publisher.publish(String(data=stop_reason))
        if not stop_reason:
            reported["stop"] = None
        key = (bridge.hardware.lifecycle, stop_reason)  # cheap per period; homed once a second
        if key != reported["state"]:
            reported["state"] = key
            publish_status()

    def publish_status(status=None) -> None:
        if status is None and cycle is not None:
            try:
                status = cycle.call(lambda b: b.status())
            except (BridgeError, TimeoutError) as error:  # a stopped or stalled cycle: next time
                node.get_logger().warning(f"drive status not read: {error}")
                return
        status = status or bridge.status()
        state = DrivesState()
        state.stamp = stamp()
        state.lifecycle, state.enabled, state.homed = status.lifecycle, status.enabled, status.homed
        state.stop_reason = status.stop_reason or ""
        drives_state_publisher.publish(state)
        array = DiagnosticArray()
        array.header.stamp = state.stamp
        for entry in drive_diagnostics(status):
            array.status.append(
                DiagnosticStatus(
                    level=bytes([entry.level]),
                    name=entry.name,
                    message=entry.message,
                    hardware_id=entry.hardware_id,
                    values=[KeyValue(key=k, value=v) for k, v in entry.values],
                )
            )
        diagnostics_publisher.publish(array)

    def command_time(message: JointState) -> float:
        """When the command was computed, on the bridge's clock (s). With publish_clock the
        controller manager stamps it with the plant's time (its cycle's), a tick or more before
        it is received here; else its receipt."""
        now = bridge_now()
        if not publish_clock:
            return now
        stamp = message.header.stamp.sec + message.header.stamp.nanosec * 1e-9 - sim["epoch"]
        return min(stamp, now) if math.isfinite(stamp) and stamp > 0.0 else now

    def on_command(message: JointState) -> None:
        received = command_time(message)
        try:
            names, position, velocity = list(message.name), list(message.position), list(message.velocity)
            if cycle is not None:  # the cycle thread takes it (DriveBridge.command there)
                cycle.post_command(names, position, velocity, now=received)
            else:
                bridge.command(names, position, velocity, now=received)
        except BridgeError as error:
            node.get_logger().error(f"command refused: {error}")
        wall["last_command"], wall["command_time"] = time.monotonic(), received

    def on_timer() -> None:
        if cycle is not None:
            _publish_latest(cycle, published, publish_sample, node)
            return
        now = time.monotonic()
        # The plant's time follows the wall clock, up to 10 periods a tick; further behind (a late
        # tick under load), the rest is dropped with publish_clock (the clock is the plant's), or
        # caught up later without it (the controllers' clock is the wall clock then).
        due = int((now - wall["start"]) / control.dt) - wall["periods"]
        if publish_clock and due > 10:
            wall["periods"] += due - 10
            due = 10
        due = min(max(due, 1), 10)
        if publish_clock and now - wall["last_command"] < lockstep_timeout:
            # Not more than command_window of plant time past the last command.
            age = bridge_now() - wall["command_time"]
            window = round((command_window - age) / control.dt)
            if window <= 0:
                # A clock sample the controller manager missed (/clock is best effort: rclcpp's
                # ClockQoS) would hold it, and so the plant: after NUDGE_AFTER without a command
                # the plant runs one period more (a new clock sample), never as far as the
                # watchdog's hold. (A sample of the same clock a nanosecond later did not help.)
                if (
                    now - wall["last_command"] < NUDGE_AFTER
                    or now - wall["nudged"] < NUDGE_AFTER
                    or age + 2 * control.dt >= control.watchdog_timeout
                ):
                    return
                wall["nudged"] = now
                window = 1
            due = min(due, window)
            reported["waiting"] = False
        elif publish_clock and not reported["waiting"] and bridge.started:
            reported["waiting"] = True
            node.get_logger().warning(
                f"no controller command for {lockstep_timeout} s: the plant runs on the wall clock"
            )
        wall["periods"] += due
        advance(due)

    def lifecycle_service(action):
        def serve(request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
            try:
                # Real drives: in this thread while the cycle keeps the bus alive (SDO handshakes).
                response.message = action() if cycle is None else cycle.exclusive(lambda _: action())
                response.success = True
            except (BridgeError, TimeoutError) as error:
                response.success, response.message = False, " ".join(str(error).split())
            node.get_logger().info(f"{response.message}")
            report(bridge.hardware.stop_reason)
            publish_status()
            return response

        return serve

    for name, action in (
        ("acknowledge_stop", lambda: bridge.acknowledge_stop("operator: /quirobot/drives/acknowledge_stop")),
        ("enable", lambda: bridge.enable(bridge_now())),
        ("disable", bridge.disable),
        ("home", bridge.home),
    ):
        node.create_service(Trigger, f"/quirobot/drives/{name}", lifecycle_service(action))
    # The commands: sensor-data QoS (the plugin publishes reliable, depth 1); with publish_clock
    # reliable, since the plant waits for them.
    command_qos = QoSProfile(depth=1) if publish_clock else qos_profile_sensor_data
    node.create_subscription(JointState, commands_topic, on_command, command_qos)
    if fault_injection:

        def inject_fault(request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
            bridge.drives[FEED_JOINT].inject_fault("injected by ~/inject_fault (test)")
            response.success, response.message = True, f"{FEED_JOINT} drive faulted"
            return response

        node.create_service(Trigger, "~/inject_fault", inject_fault)
    node.create_timer(control.dt, on_timer)
    node.create_timer(1.0, publish_status)
    publish_status()
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    except RuntimeError:
        # The signal's KeyboardInterrupt raised inside rclpy's C++ take_message comes out as a
        # pybind11 RuntimeError; a RuntimeError without a signal is a real error.
        if not _INTERRUPTED:
            raise
    finally:
        if cycle is not None:
            cycle.stop()  # no more cycles, then the drives stopped and the buses released
        for problem in bridge.close():
            node.get_logger().warning(f"shutdown: {problem}")
        shut_down()
    return 0


def _start_real_cycle(params, control, description: str, can, node):
    """Real drives: the CANopen cycle in its own thread (bridge.drive_cycle.start_canopen_cycle:
    SYNC, heartbeat, setpoints and feedback on an absolute deadline schedule, never waiting for
    this node's executor); what the OS granted it in the log."""
    from quirobot_control.bridge.drive_cycle import start_canopen_cycle

    cycle = start_canopen_cycle(params, control, description, can=can)
    node.get_logger().info(cycle.report.describe())
    return cycle


def _safety_messages(cycle) -> list[str]:
    """The safety layer's bounded log, copied by the cycle thread (it appends to it); [] if the
    cycle does not answer (stopped or stalled: the stop itself is reported)."""
    from quirobot_control.bridge.drive_bridge import BridgeError

    try:
        return cycle.call(lambda b: list(b.hardware.log.messages))
    except (BridgeError, TimeoutError):
        return []


def _publish_latest(cycle, published: dict, publish_sample, node) -> None:
    """Real drives, on the node's timer: the cycle's latest joint state if it is new, and the
    cycle's messages in the log."""
    while cycle.messages:
        node.get_logger().warning(cycle.messages.popleft())
    latest = cycle.latest
    if latest is not None and latest.cycle != published["cycle"]:
        published["cycle"] = latest.cycle
        publish_sample(latest.sample)


def _time_message(seconds: float):
    """builtin_interfaces/Time of `seconds` (s since the epoch)."""
    from builtin_interfaces.msg import Time

    whole = math.floor(seconds)
    nanoseconds = min(int(round((seconds - whole) * 1e9)), 999_999_999)
    return Time(sec=int(whole), nanosec=nanoseconds)


#: s of wall time without a new command, the plant waiting for one, after which (and as often) it
#: runs one period more (publish_clock): a few controller-manager cycles at 1 kHz.
NUDGE_AFTER = 0.01

_INTERRUPTED: list[int] = []


def _interrupt(signum: int, frame: object) -> None:
    _INTERRUPTED.append(signum)
    raise KeyboardInterrupt(signal.Signals(signum).name)


if __name__ == "__main__":
    sys.exit(main())
