"""ROS 2 node `drive_node`: the drive side of joint_state_topic_hardware_interface (thin adapter).

Subscribes to the controllers' commands (sensor_msgs/msg/JointState on /quirobot/joint_commands:
name, position, velocity) and publishes the joint states (/quirobot/joint_states) at the
control rate, both with sensor-data QoS, as
joint_state_topic_hardware_interface/JointStateTopicSystem expects (hardware:=real in the
URDF; it subscribes to the states with sensor-data QoS and publishes the commands reliable,
depth 1). The joints and so the drives are those of the robot description's <ros2_control>
block. Every behaviour (start-up handshake, watchdog, safety layer) is in
`quirobot_control.bridge.drive_bridge.DriveBridge`; this node passes it the messages and a monotonic
clock (time.monotonic(), s). rclpy is imported only inside functions. `main` is a short
sequence: the parameters (`_declare_parameters`, one block), the robot description, `DriveNode`
(every publisher, subscription, service and timer), the drives (`_open_drives`), attached to it;
then spin. DriveNode's methods each translate one thing (a command, a timer tick, a service call,
a status) between ROS and the bridge; its status half (log, /quirobot/drives/state, /diagnostics)
is nodes.drive_status.DrivesStatusOut, its services half nodes.drive_services.DriveServices.
The ROS entities come before the drives (creating one holds the GIL inside rclpy for
milliseconds: when the real drives' cycle was a thread of this process, `bench/drive_loop.py
--ros-side drive_node` measured an 11 ms SYNC gap, past the drives' 10 ms watchdog).

Parameters: each declared once, with its type, default, unit and range, in
`quirobot_control.bridge.drive_node_parameters` (the table: docs/node_parameters.md); a value
outside its range stops the start-up with one line naming it. With drive_backend "canopen" the
bus cycle runs in a process of its own (bridge.cycle_process, which this node starts and
supervises; bridge.drive_cycle inside it: absolute deadlines, SCHED_FIFO and locked memory where
granted); this node's subscription posts the commands to it, its timer publishes the cycle's
latest joint state, its services are requests the child runs while the cycle keeps the bus alive:
nothing here (a slow callback, an import, a garbage collection) shares an interpreter with the
cycle. If the child dies, the drives stop on their watchdogs and this node publishes the stop; if
this node dies, the child stops the drives and ends.

Simulated backend only: `simulated_bone` puts that task's bone in the plant (its thrust on the
drill tip); `test_fault_injection` (tests only) adds the service ~/inject_fault (std_srvs/Trigger)
that faults the drill feed's drive.

Time of the simulated plant, two ways:
- `publish_clock` false (the default): the plant follows the wall clock, up to 10 periods per timer
  tick (a late tick catches up). Under load the plant can fall behind the controllers, which run
  on the wall clock: a following error of speed x lag.
- `publish_clock` true (sim.launch.py, with use_sim_time on the controller manager and the task
  node): lock-step on the simulated clock (bridge.lockstep.Lockstep). drive_node publishes the
  joint states and then /clock t_k; ros2_control_node runs its cycle at t_k and writes the command
  of period k; when it arrives the plant runs period k, and so on. The plant never runs without
  its period's command, so a slow machine slows the simulation and never changes its result.
  Until the first command (the controller manager starting) the plant runs a period every
  `lockstep_republish` s of wall time: its loop needs the clock to move to start.
  From then on wall time is only a guard: /clock is sent again after `lockstep_republish` s
  without a command (a lost best-effort sample), and
  after `lockstep_timeout` s without one the controller manager is taken as dead:
  every drive is stopped with that reason and the plant runs on the wall clock until commands
  come back.

Services (std_srvs/Trigger), the hardware component's lifecycle (bridge.drive_bridge):
/quirobot/drives/acknowledge_stop (clear a latched stop: every drive's fault reset, logged),
/quirobot/drives/enable (activate: drives enabled at the measured pose, a controller's first
command must be near it), /quirobot/drives/disable (deactivate: inverters off, brakes),
/quirobot/drives/home (the hardware's homing sequence, run period by period while disabled).
While a goal's hole is active (/quirobot/drilling_context) disable, enable and home are refused
naming the goal, and acknowledge_stop ends the hole and says so (DriveBridge).
`homing` (simulated backend): drives with incremental encoders, not homed at
start-up (the hardware refuses to enable them until /quirobot/drives/home has run); by default the
simulated drives have absolute encoders and start homed, and real drives report their own.

Controllers stop with the drives (bridge.controller_stopper, as the UR driver's
controller_stopper): when the drives stop or are disabled, the controllers of `stop_controllers`
are deactivated through
/controller_manager/switch_controller (their goals end: the trajectory controller cancels a goal on
deactivation; the reason is /quirobot/drives/state's stop_reason); /quirobot/drives/enable
reactivates them. bringup.launch.py starts the controllers' spawner once this node logs that a
joint state went out with the controller manager's hardware component subscribed
(STATES_AT_HARDWARE: its node, named after the <ros2_control> block, in the topic's graph), so
that no trajectory controller takes over before the drives' states reach the controller manager
(it would hold the description's initial pose, which the bridge ignores).

The hole being drilled: /quirobot/drilling_context (quirobot/msg/DrillingContext, latched, as
task_node publishes it at a goal's start and end) is the hole the DrillHole executor decided
(safety.hole_context.HoleContext, nodes.hole_context_msg): the bridge runs exactly that (thrust
limit, breakthrough arming, spindle interlock, no-go zones, tip speed near the entry, the bone's
thrust fed forward on the realistic plant) from the next period on (bridge.drilling_context); no
task file is read here. A context of another goal while one is active, or the end of a goal
that is not the active one, is refused and logged; without a context the thrust limit only.

Outputs: a stop (a safety stop, the command watchdog, a drive fault) is published one way, as the
`stop_reason` of /quirobot/drives/state (quirobot/msg/DrivesState, latched: lifecycle, enabled,
homed, the latched stop; on every change and once a second), and logged once as an error line
"drives stopped: <reason>". /diagnostics (diagnostic_msgs/DiagnosticArray, bridge.diagnostics:
the hardware and each drive's state, fault, position, current, homed; ERROR with the reason on a
stop) is made from the same status in the same call, for generic monitoring tools.
Simulated backend only: /quirobot/sim/true_tip (geometry_msgs/PointStamped, world, m, sensor-data
QoS) with every joint state, the plant's drill tip (simulation ground truth, as Gazebo's pose
publisher gives it): the hole itself, which the joint states show only through the encoders'
counts (a gantry count is 0.5-0.8 um).
A start-up failure (no such CAN interface, a node that does not
answer, a malformed description, ...) is logged in one line and the node exits with status 1
without enabling anything. On shutdown (SIGINT or SIGTERM, also during the start-up; a second
signal changes nothing) every drive is stopped and the buses are released, the node logs
"shut down on SIGINT: drives stopped, buses released" and exits with status 0; a shutdown that
does not end within bridge.signal_shutdown.SHUTDOWN_BOUND (4.5 s, below launch's 5 s before
SIGTERM) prints every thread's stack and ends the process with status 1 (the drives' own
watchdogs stop them).
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import time
from dataclasses import dataclass

from quirobot_control.bridge.drive_bridge import DRIVES_UP, STATES_AT_HARDWARE
from quirobot_control.nodes.drive_services import DriveServices
from quirobot_control.nodes.drive_status import DrivesStatusOut


@dataclass(frozen=True)
class DriveNodeParameters:
    """drive_node's ROS parameters as declared (module docstring)."""

    description: str
    commands_topic: str
    states_topic: str
    backend_name: str
    can_interface: str
    can_channels: str
    simulated_bone: str
    plant: str  # simulated backend: ideal or realistic
    machine: int | None  # simulated backend: the simulated machine's seed, None the nominal one
    fault_injection: bool
    publish_clock: bool
    controller_rate: int  # Hz, 0: the drives' control rate
    lockstep_timeout: float  # s
    lockstep_republish: float  # s
    homing: bool
    stopped_controllers: list[str]


class StatesToHardware:
    """The joint states' publisher, which logs STATES_AT_HARDWARE once a state went out with the
    controller manager's hardware component subscribed (its node is named after the
    <ros2_control> block, `hardware`; a graph query at most every 10 ms of wall time until then):
    bringup.launch.py starts the spawner on that line (module docstring)."""

    def __init__(self, node, publisher, hardware: str) -> None:
        self.node, self.publisher, self.hardware = node, publisher, hardware.lower()
        self.reached = False
        self._checked = 0.0  # s (monotonic) of the last graph query

    def publish(self, message) -> None:
        reaches = self.reached or self._subscribed()
        self.publisher.publish(message)
        if reaches and not self.reached:
            self.reached = True
            self.node.get_logger().info(f"{STATES_AT_HARDWARE} ({self.hardware} subscribed)")

    def _subscribed(self) -> bool:
        now = time.monotonic()
        if now - self._checked < 0.01:
            return False
        self._checked = now
        topic = self.publisher.topic_name
        return any(
            info.node_name.lower() == self.hardware
            for info in self.node.get_subscriptions_info_by_topic(topic)
        )


def main(args: list[str] | None = None) -> int:
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node
    from rclpy.signals import SignalHandlerOptions

    from quirobot_control.bridge.signal_shutdown import SignalShutdown

    # SIGINT and SIGTERM (launch's escalation) as a request to shut down, never an exception
    # (bridge.signal_shutdown: a KeyboardInterrupt raised wherever the main thread was left the node
    # running, or its cleanup half done), so that the drives are stopped and the buses released on
    # the way out, within a bound. Not rclpy's handler: it shuts the context down under a spinning
    # executor (a take_message RuntimeError, exit 1).
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    shutdown = SignalShutdown().install()
    # A crash, and a SIGTERM (launch's escalation after a SIGINT not obeyed within 5 s), print
    # every thread's Python stack to the launch's log; the SIGTERM then goes on to the request.
    faulthandler.enable()
    faulthandler.register(signal.SIGTERM, chain=True)
    node = Node("drive_node")
    executor = SingleThreadedExecutor()
    executor.add_node(node)

    def shut_down() -> None:
        executor.remove_node(node)
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()

    try:
        parameters = _declare_parameters(node)
    except ValueError as error:  # a value outside its type or range: one line naming it
        node.get_logger().fatal(f"drive start-up failed: {error}")
        shut_down()
        return 1
    description = parameters.description or _wait_for_description(node, executor, shutdown.requested)
    skin = None
    try:  # a signal meanwhile: the next step is not begun (each runs to its end: no exception)
        if description and not shutdown.requested.is_set():
            node.get_logger().info(f"opening the {parameters.backend_name} drives")
            params, control = _configuration()
            lockstep = _lockstep(control.dt, parameters) if parameters.publish_clock else None
        if description and not shutdown.requested.is_set():
            skin = DriveNode(node, parameters, lockstep, control)  # its ROS entities before the drives
        if skin is not None and not shutdown.requested.is_set():
            skin.attach(*_open_drives(parameters, params, control, description, node))
    except (ValueError, OSError) as error:
        node.get_logger().fatal(f"drive start-up failed: {' '.join(str(error).split())}")
        shut_down()
        return 1
    if skin is None or skin.bridge is None:  # a signal before the drives were opened
        why = shutdown.received[0] if shutdown.received else "the context's shutdown"
        node.get_logger().info(f"shut down on {why} before the drives were opened")
        shut_down()
        shutdown.exit(0)
    try:
        while not shutdown.requested.is_set() and rclpy.ok():  # a signal during start-up too
            executor.spin_once(timeout_sec=SPIN_TIMEOUT)
    finally:
        shutdown.arm()  # the way out is bounded, whatever began it (a signal, an error)
        skin.close()
        why = shutdown.received[0] if shutdown.received else "an error"
        node.get_logger().info(f"shut down on {why}: drives stopped, buses released")
        shutdown.released()  # the ROS teardown left: the bound ends it with status 0 (a hang upstream's)
        shut_down()
    shutdown.exit(0)  # everything released: no interpreter finalization (bridge.signal_shutdown)


def _declare_parameters(node) -> DriveNodeParameters:
    """Every parameter of drive_node, declared on `node` from its schema
    (bridge.drive_node_parameters, nowhere else). ValueError: a value outside its type or range,
    one line naming it."""
    from quirobot_control.bridge.drive_node_parameters import DRIVE_NODE
    from quirobot_description.ros_parameters import declare_parameters

    parameters = declare_parameters(node, DRIVE_NODE)
    return DriveNodeParameters(
        description=parameters["robot_description"],
        commands_topic=parameters["commands_topic"],
        states_topic=parameters["states_topic"],
        backend_name=parameters["drive_backend"],
        can_interface=parameters["can_interface"],
        can_channels=parameters["can_channels"],
        simulated_bone=parameters["simulated_bone"],
        plant=parameters["plant"],
        machine=None if parameters["simulated_machine"] < 0 else parameters["simulated_machine"],
        fault_injection=parameters["test_fault_injection"],
        publish_clock=parameters["publish_clock"],
        controller_rate=parameters["controller_rate"],
        lockstep_timeout=parameters["lockstep_timeout"],
        lockstep_republish=parameters["lockstep_republish"],
        homing=parameters["homing"],
        stopped_controllers=list(parameters["stop_controllers"]),
    )


def _wait_for_description(node, executor, interrupted) -> str:
    """The latched /robot_description (std_msgs/String), spun for until it comes; "" if
    `interrupted` (a threading.Event: SIGINT, SIGTERM) is set or the context shut down first."""
    import rclpy
    from rclpy.qos import DurabilityPolicy, QoSProfile
    from std_msgs.msg import String

    received: list[str] = []
    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(String, "/robot_description", lambda m: received.append(m.data), latched)
    node.get_logger().info("waiting for /robot_description")
    while rclpy.ok() and not received and not interrupted.is_set():
        executor.spin_once(timeout_sec=SPIN_TIMEOUT)
    return received[0] if received and not interrupted.is_set() else ""


def _configuration():
    """(robot parameters, control configuration): the shipped files (ValueError if invalid)."""
    from quirobot_control.hardware.control_config import control_configuration
    from quirobot_description.parameters import load_parameters

    params = load_parameters()
    return params, control_configuration(params)


def _open_drives(parameters: DriveNodeParameters, params, control, description: str, node):
    """(bridge, cycle) of the parameters: the simulated drives' bridge, or the real drives' cycle
    thread (its bridge); ValueError or OSError on a bad start-up."""
    from quirobot_control.bridge.canopen_backend import CanBusConfig, parse_channel_map

    p = parameters
    can = CanBusConfig(p.can_interface, parse_channel_map(p.can_channels))
    simulated = p.backend_name == "simulated"
    bone = p.simulated_bone not in ("", "none")
    special = bone or p.fault_injection or p.publish_clock or p.homing or p.plant != "ideal"
    if (special or p.machine is not None) and not simulated:
        raise ValueError(
            "simulated_bone, plant, simulated_machine, test_fault_injection, publish_clock and homing are "
            "for the simulated backend (real drives report whether they are homed, and their serial numbers)"
        )
    start = 0.0 if p.publish_clock else time.monotonic()
    cycle = None if simulated else _start_real_cycle(params, control, description, can, node)
    if cycle is not None:
        bridge = cycle.bridge
    else:  # the composition root: the simulated backend's bridge, imported only here
        from quirobot_control.simulation.simulated_backend import simulated_bridge

        bridge = simulated_bridge(
            params,
            control,
            description,
            now=start,
            absolute_encoders=not p.homing,
            plant=p.plant,
            machine=p.machine,
        )
    if bone:
        bridge.backend.place_bone(p.simulated_bone)
    return bridge, cycle


class DriveNode(DrivesStatusOut, DriveServices):
    """The node's publishers, subscriptions, services and timers over one DriveBridge (or the real
    drives' cycle process): messages in, the bridge's samples and status out.

    Made before the drives are up (module doc), then `attach`ed to them; the node is spun only
    after that, so no callback runs without a bridge. `lockstep`: the plant's clock in lock-step
    with the controller manager (publish_clock), or None."""

    def __init__(self, node, parameters: DriveNodeParameters, lockstep, control) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from quirobot.msg import DrivesState
        from rclpy.qos import DurabilityPolicy, QoSProfile, qos_profile_sensor_data
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState

        self.node, self.parameters = node, parameters
        self.bridge, self.cycle, self.lockstep = None, None, lockstep  # the drives: attach()
        self._joint_state, self._clock = JointState(), Clock()  # refilled every published period
        self._names = None  # the joint names in self._joint_state
        self.dt = control.dt  # s, the control period
        self.reported = {"stop": None, "events": 0, "safety": 0, "state": None}
        self.published_cycle = -1  # the cycle of the latest joint state published (real drives)
        # Wall-clock pacing of the simulated plant without publish_clock.
        self.wall_start, self.wall_periods = time.monotonic(), 0
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.states = node.create_publisher(JointState, parameters.states_topic, qos_profile_sensor_data)
        # The one way a stop leaves this node: the drives' state (its stop_reason), with the
        # diagnostics made from the same status (docs/drive_from_another_node.md).
        self.drives_state = node.create_publisher(DrivesState, "/quirobot/drives/state", latched)
        self.diagnostics = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.clock = node.create_publisher(Clock, "/clock", 10) if self.lockstep is not None else None
        self.true_tip = None  # the simulated plant's ground truth (module docstring)
        if parameters.backend_name == "simulated":
            from geometry_msgs.msg import PointStamped

            self._true_tip = PointStamped()
            self._true_tip.header.frame_id = "world"
            self.true_tip = node.create_publisher(
                PointStamped, "/quirobot/sim/true_tip", qos_profile_sensor_data
            )
        self.stop_controllers = _controller_stopper(node, parameters.stopped_controllers)
        self._create_services()
        self._create_inputs()

    def attach(self, bridge, cycle) -> None:
        """The drives are up: their bridge, and the real drives' cycle process (None: simulated).
        With the lock-step clock, its first sample (the controller manager's first cycle)."""
        self.bridge, self.cycle = bridge, cycle
        self.states_out = StatesToHardware(self.node, self.states, bridge.info.name)
        logger = self.node.get_logger()
        logger.info(f"{DRIVES_UP} ({self.parameters.backend_name} backend): {', '.join(bridge.names)}")
        if self.lockstep is not None:
            self.advance(0)  # t_0: the first clock sample, the controller manager's first cycle
            logger.info("simulated clock: lock-step with the controller manager")
        self.publish_status()

    # --- time ------------------------------------------------------------------------------------
    def bridge_now(self) -> float:
        """The bridge's clock (s): the plant's time with publish_clock, else the monotonic clock."""
        return self.lockstep.seconds if self.lockstep is not None else time.monotonic()

    def stamp(self):
        if self.lockstep is not None:
            return _time_message(self.lockstep.stamp_ns)
        return self.node.get_clock().now().to_msg()

    # --- outputs ---------------------------------------------------------------------------------
    def advance(self, count: int) -> None:
        """Run `count` control periods, then publish the state (and the clock)."""
        active = None  # the hardware's lifecycle now (no period run)
        for _ in range(count):
            active = self.bridge.run_period(self.bridge_now())
            if self.lockstep is not None:
                self.lockstep.ran(1)
        self.publish_sample(self.bridge.sample(active))  # once, after the last period

    def publish_sample(self, sample) -> None:
        """The joint state of a period (and the clock), then the stop and events."""
        # The messages are made once and refilled (publish serialises them): no allocation of
        # message objects per period.
        message = self._joint_state
        message.header.stamp = self.stamp()
        if self._names is not sample.names:  # the bridge's own tuple: set once
            message.name, self._names = list(sample.names), sample.names
        message.position = sample.position
        message.velocity = sample.velocity
        message.effort = sample.effort
        self.states_out.publish(message)  # before the clock: a controller cycle woken by it reads this
        # Ground truth for tests and benches: serialised only while someone listens.
        if self.true_tip is not None and self.true_tip.get_subscription_count() > 0:
            tip = self._true_tip
            tip.header.stamp = message.header.stamp
            tip.point.x, tip.point.y, tip.point.z = (float(v) for v in self.bridge.backend.true_tip())
            self.true_tip.publish(tip)
        if self.clock is not None:
            self._clock.clock = message.header.stamp
            self.clock.publish(self._clock)
        self.report(sample.stop_reason)

    # --- inputs ----------------------------------------------------------------------------------
    def _create_inputs(self) -> None:
        """The commands' subscription, the plant's timers, the drilling context."""
        from rclpy.qos import QoSProfile, qos_profile_sensor_data
        from sensor_msgs.msg import JointState

        node = self.node
        # The commands: sensor-data QoS (the plugin publishes reliable, depth 1); with publish_clock
        # reliable, since the plant waits for them.
        command_qos = QoSProfile(depth=1) if self.lockstep is not None else qos_profile_sensor_data
        node.create_subscription(JointState, self.parameters.commands_topic, self.on_command, command_qos)
        if self.lockstep is None:
            node.create_timer(self.dt, self.on_timer)
        else:  # the plant runs on commands; a wall-clock guard only (bridge.lockstep)
            # Half its shortest limit: the republish comes at most half a limit late.
            node.create_timer(self.lockstep.republish_after / 2, self.on_lockstep_guard)
        _drilling_context_subscription(node, lambda: self.bridge)
        node.create_timer(1.0, self.publish_status)

    def on_command(self, message) -> None:
        from quirobot_control.bridge.drive_bridge import BridgeError

        try:
            names, position, velocity = list(message.name), list(message.position), list(message.velocity)
            if self.cycle is not None:  # the cycle process takes it (DriveBridge.command there)
                self.cycle.post_command(names, position, velocity, now=self.bridge_now())
            else:
                self.bridge.command(names, position, velocity, now=self.bridge_now())
        except BridgeError as error:
            self.node.get_logger().error(f"command refused: {error}")
        if self.lockstep is not None:  # this period's command is in: the plant runs it (lock-step)
            self.advance(self.lockstep.on_command(time.monotonic()))

    def on_timer(self) -> None:
        if self.cycle is not None:
            self._publish_latest()
            return
        # The plant's time follows the wall clock, up to 10 periods a tick (a late tick catches up).
        due = int((time.monotonic() - self.wall_start) / self.dt) - self.wall_periods
        due = min(max(due, 1), 10)
        self.wall_periods += due
        self.advance(due)

    def on_lockstep_guard(self) -> None:
        from quirobot_control.safety.stop_codes import StopCode

        action = self.lockstep.on_guard(time.monotonic())
        if action.stop_reason is not None:
            self.bridge.hardware.stop(action.stop_reason, StopCode.CYCLE_LOST)
        if action.periods or action.stop_reason is not None or action.republish:
            self.advance(action.periods)


def _drilling_context_subscription(node, bridge_of) -> None:
    """/quirobot/drilling_context (msg/DrillingContext, latched) into the bridge `bridge_of()`
    returns (DriveBridge.set_drilling_context, swapped in at its next period); a context it cannot
    use is logged in one line and the one in force stays."""
    from quirobot.msg import DrillingContext
    from rclpy.qos import DurabilityPolicy, QoSProfile

    from quirobot_control.nodes.hole_context_msg import from_message

    def on_context(message: DrillingContext) -> None:
        try:
            goal_id, context = from_message(message)
            node.get_logger().info(bridge_of().set_drilling_context(goal_id, context))
        except ValueError as error:  # BridgeError too
            node.get_logger().error(f"drilling context refused: {' '.join(str(error).split())}")

    latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(DrillingContext, "/quirobot/drilling_context", on_context, latched)


def _controller_stopper(node, controllers: list[str]):
    """The controllers stop with the drives (bridge.controller_stopper): a callable of the drives'
    (enabled, stop_reason) that asks /controller_manager/switch_controller, never waiting for it
    (the controller manager switches in its update loop, which the simulated plant's clock drives)."""
    from controller_manager_msgs.srv import SwitchController

    from quirobot_control.bridge.controller_stopper import ControllerStopper

    stopper = ControllerStopper(controllers)
    client = node.create_client(SwitchController, "/controller_manager/switch_controller")

    def answered(switch, future) -> None:
        response = future.result() if future.exception() is None else None
        ok = response is not None and response.ok
        stopper.done(switch, ok)
        verb = "activated" if switch.activate else "deactivated"
        if ok:
            node.get_logger().info(f"controllers {verb} ({switch.reason}): {', '.join(switch.controllers)}")
        else:
            why = response.message if response is not None else str(future.exception())
            node.get_logger().warning(f"controllers not {verb} ({switch.reason}): {why or 'refused'}")

    def update(enabled: bool, stop_reason: str | None) -> None:
        if stopper.pending is None and not client.service_is_ready():
            return  # no controller manager yet: nothing to switch, asked again on the next state
        switch = stopper.update(enabled, stop_reason)
        if switch is None:
            return
        request = SwitchController.Request()
        names = list(switch.controllers)
        request.activate_controllers, request.deactivate_controllers = (
            (names, []) if switch.activate else ([], names)
        )
        request.strictness = SwitchController.Request.BEST_EFFORT  # the feed controller only with the drill
        future = client.call_async(request)
        future.add_done_callback(lambda done: answered(switch, done))

    return update


def _start_real_cycle(params, control, description: str, can, node):
    """Real drives: the CANopen cycle in a process of its own (bridge.cycle_process: SYNC,
    heartbeat, setpoints and feedback on an absolute deadline schedule, sharing no interpreter
    with this node's executor); what the OS granted it in the log.

    This node's Python threads (the executor that relays the controllers' commands, the cycle
    process's reader) go to SCHED_FIFO ROS_SIDE_PRIORITY where granted, below every
    thread of the cycle process: on a busy machine the relay must not starve behind ordinary
    processes (with four busy processes on two cores it did: no command for 0.5 s, the command
    watchdog's stop)."""
    from quirobot_control.bridge.cycle_process import ROS_SIDE_PRIORITY, CycleSpec, start_cycle_process
    from quirobot_control.bridge.cycle_realtime import raise_process

    cycle = start_cycle_process(CycleSpec(params, control, description, can))
    raised = raise_process(ROS_SIDE_PRIORITY, skip=0)
    side = f"SCHED_FIFO {ROS_SIDE_PRIORITY}" if raised else "normal scheduling (SCHED_FIFO refused)"
    node.get_logger().info(f"drive cycle process {cycle.child.pid}: {cycle.report_text}; this node: {side}")
    return cycle


def _time_message(nanoseconds: int):
    """builtin_interfaces/Time of `nanoseconds` (ns since the epoch, exact)."""
    from builtin_interfaces.msg import Time

    return Time(sec=nanoseconds // 1_000_000_000, nanosec=nanoseconds % 1_000_000_000)


def _lockstep(dt: float, parameters: DriveNodeParameters):
    """The plant's clock in lock-step (bridge.lockstep) with a period of `dt` s and the
    controller manager at `controller_rate`, from now's whole second of wall time. ValueError: a
    controller rate that does not divide the drives' control rate."""
    from quirobot_control.bridge.lockstep import Lockstep, substeps_per_command

    period_ns = round(dt * 1e9)
    return Lockstep(
        period_ns=period_ns,
        epoch_ns=int(time.time()) * 1_000_000_000,
        republish_after=parameters.lockstep_republish,
        dead_after=parameters.lockstep_timeout,
        substeps=substeps_per_command(period_ns, parameters.controller_rate),
    )


#: s the executor waits at most for work before the main loop looks at the shutdown request again
#: (its timers wake it every period anyway).
SPIN_TIMEOUT = 0.1


if __name__ == "__main__":
    sys.exit(main())
