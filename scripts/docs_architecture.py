"""docs/architecture.md's picture and tables, from one description of the running stack.

    python scripts/docs_architecture.py            # print the tables
    python scripts/docs_architecture.py --write    # rewrite the tables and docs/images/architecture.png
    python scripts/docs_architecture.py --check    # exit 1 if the page's tables are not this file's

PROCESSES (each with its threads), INTERFACES (every topic, service and action between them, with
who publishes or serves it and who subscribes or calls it) and CHECKS (each safety check, the
process and thread it runs in, and its module) are written here once; the page's tables and the
picture are drawn from them. test/package/test_docs_architecture.py checks the page holds these
tables, that every name exists in the code (launch/, the nodes, their parameter schemas, the
URDF's ros2_control block) and that every name a node creates is listed here.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import NamedTuple

import docs_block  # scripts/ (this script's folder, first on sys.path when it runs)

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "architecture.md"
IMAGE = ROOT / "docs" / "images" / "architecture.png"


class Thread(NamedTuple):
    name: str
    runs: str


class Process(NamedTuple):
    name: str
    package: str  # the ROS package of its executable
    launched_by: str
    threads: tuple[Thread, ...]
    xy: tuple[float, float]  # the picture: the box's centre (axes units, 0-100)


class Interface(NamedTuple):
    name: str
    kind: str  # topic, service, action
    type: str
    sources: tuple[str, ...]  # a topic's publishers, a service's or an action's server
    sinks: tuple[str, ...]  # a topic's subscribers, a service's or an action's clients
    what: str
    #: The ROS package whose default names it, when no file of ours spells it (tf2, the broadcaster).
    upstream: str = ""


class Check(NamedTuple):
    check: str
    process: str
    thread: str
    module: str  # the file that implements it, from the repository root


CLIENT = "your node"  # a surgeon console or navigation node (examples/03_drill_hole_client.py)
TELEOP = "teleoperator"  # a joystick or haptic device's node
EXECUTOR = "executor"
TASK_EXECUTOR = "executor (4 threads)"

PROCESSES = (
    Process(
        "task_node",
        "quirobot",
        "sim.launch.py",
        (
            Thread(
                TASK_EXECUTOR,
                "rclpy MultiThreadedExecutor, one reentrant group: the DrillHole goal (the executor's "
                "blocking run, one thread for the whole goal), the services, the 1 Hz state, the 10 Hz "
                "scene, the 1 Hz controller poll",
            ),
            Thread(
                "task_node inputs",
                "a second node (task_node_inputs) on its own SingleThreadedExecutor: the joint states, "
                "/tf and /clock, which arrive at the control rate",
            ),
        ),
        (14, 62),
    ),
    Process(
        "ros2_control_node",
        "controller_manager",
        "bringup.launch.py",
        (
            Thread(
                "update loop",
                "C++: read, update, write at update_rate: joint_state_broadcaster, "
                "joint_trajectory_controller, drill_feed_controller, and the hardware plugin "
                "joint_state_topic_hardware_interface/JointStateTopicSystem (hardware:=real)",
            ),
            Thread(EXECUTOR, "C++: the controllers' topics, actions and the manager's services"),
        ),
        (50, 62),
    ),
    Process(
        "drive_node",
        "quirobot",
        "bringup.launch.py hardware:=real",
        (
            Thread(
                EXECUTOR,
                "rclpy SingleThreadedExecutor: the commands, the services, the status; with the "
                "simulated backend also the drive bridge's cycle (hardware component, safety, PID, "
                "plant), one period per command (lock-step) or per timer tick",
            ),
            Thread(
                "drive-cycle",
                "canopen backend only, in a child process drive_node starts and supervises "
                "(bridge.cycle_process, python -m quirobot_control.bridge.cycle_child): the drive "
                "bridge's cycle on absolute deadlines (SYNC, PDOs, the hardware component and its "
                "safety layer); the commands go on a pipe of their own that the cycle thread reads "
                "itself, drive_node's drive-cycle-reader thread takes each period's news",
            ),
            Thread("shutdown-signals", "SIGINT/SIGTERM as a request: stop every drive, release the buses"),
        ),
        (86, 62),
    ),
    Process(
        "robot_state_publisher",
        "robot_state_publisher",
        "bringup.launch.py, display.launch.py",
        (Thread(EXECUTOR, "C++: the URDF, /tf from the joint states"),),
        (50, 90),
    ),
    Process(
        "scope_servo_node",
        "quirobot",
        "scope_servo.launch.py",
        (
            Thread(
                EXECUTOR,
                "rclpy.spin, one thread: the twists, the joint states, the command timer "
                "(a lifecycle node: active = in the servo mode)",
            ),
        ),
        (14, 22),
    ),
    Process(
        "rviz2",
        "rviz2",
        "display.launch.py",
        (Thread("render", "the robot model, the scene and the scope's view cone"),),
        (86, 90),
    ),
    Process(
        "kinematics_node",
        "quirobot",
        "kinematics.launch.py",
        (Thread(EXECUTOR, "rclpy.spin: FK and IK services"),),
        (86, 22),
    ),
)

ARM = "/joint_trajectory_controller"
FEED = "/drill_feed_controller"
TRIGGER = "std_srvs/srv/Trigger"
INTERFACES = (
    # The task-level API (docs/drive_from_another_node.md).
    Interface(
        "/quirobot/drill_hole",
        "action",
        "quirobot/action/DrillHole",
        ("task_node",),
        (CLIENT,),
        "drill one hole: plan, approach, feed, retract; feedback per phase",
    ),
    Interface(
        "/quirobot/state",
        "topic",
        "quirobot/msg/OperatingState",
        ("task_node",),
        (CLIENT,),
        "ready, enabled, homed, busy, fault and its reason (latched)",
    ),
    *(
        Interface(f"/quirobot/{name}", "service", TRIGGER, ("task_node",), (CLIENT,), what)
        for name, what in (
            ("enable", "enable the drives (via drive_node)"),
            ("disable", "disable the drives"),
            ("reset_fault", "acknowledge the drives' latched stop"),
            ("home", "run the homing sequence"),
        )
    ),
    Interface(
        "/quirobot/scene",
        "topic",
        "visualization_msgs/msg/MarkerArray",
        ("task_node",),
        ("rviz2",),
        "bone, no-go zones, planned axis, drilled path, live tip",
    ),
    Interface(
        "/diagnostics",
        "topic",
        "diagnostic_msgs/msg/DiagnosticArray",
        ("task_node", "drive_node"),
        (CLIENT,),
        "quirobot/task, quirobot/drives, quirobot/drives/<joint>, quirobot/drilling",
    ),
    # task_node -> ros2_control_node.
    *(
        Interface(
            f"{controller}/follow_joint_trajectory",
            "action",
            "control_msgs/action/FollowJointTrajectory",
            ("ros2_control_node",),
            ("task_node",),
            what,
        )
        for controller, what in ((ARM, "the arm's five joints"), (FEED, "the drill feed"))
    ),
    *(
        Interface(
            f"{controller}/follow_joint_trajectory/_action/cancel_goal",
            "service",
            "action_msgs/srv/CancelGoal",
            ("ros2_control_node",),
            ("task_node",),
            "cancel every goal of that controller (a goal whose acceptance was lost)",
        )
        for controller in (ARM, FEED)
    ),
    Interface(
        "/controller_manager/list_controllers",
        "service",
        "controller_manager_msgs/srv/ListControllers",
        ("ros2_control_node",),
        ("task_node",),
        "which controllers are active (polled once a second)",
    ),
    # task_node -> drive_node.
    Interface(
        "/quirobot/drilling_context",
        "topic",
        "quirobot/msg/DrillingContext",
        ("task_node",),
        ("drive_node", "task_node"),
        "the hole being drilled, as the plan decided it (latched): what the per-cycle checks watch",
    ),
    *(
        Interface(f"/quirobot/drives/{name}", "service", TRIGGER, ("drive_node",), ("task_node",), what)
        for name, what in (
            ("enable", "activate the hardware component"),
            ("disable", "deactivate it: inverters off, brakes"),
            ("acknowledge_stop", "clear the latched stop"),
            ("home", "the homing sequence"),
        )
    ),
    # drive_node <-> ros2_control_node (joint_state_topic_hardware_interface).
    Interface(
        "/quirobot/joint_commands",
        "topic",
        "sensor_msgs/msg/JointState",
        ("ros2_control_node",),
        ("drive_node",),
        "the controllers' commands, every controller cycle",
    ),
    Interface(
        "/quirobot/joint_states",
        "topic",
        "sensor_msgs/msg/JointState",
        ("drive_node",),
        ("ros2_control_node", "task_node", "scope_servo_node"),
        "the measured joints, at the control rate",
    ),
    Interface(
        "/quirobot/drives/state",
        "topic",
        "quirobot/msg/DrivesState",
        ("drive_node",),
        ("task_node",),
        "lifecycle, enabled, homed, the latched stop and its reason",
    ),
    Interface(
        "/controller_manager/switch_controller",
        "service",
        "controller_manager_msgs/srv/SwitchController",
        ("ros2_control_node",),
        ("drive_node",),
        "the controllers stop with the drives (controller stopper)",
    ),
    Interface(
        "/clock",
        "topic",
        "rosgraph_msgs/msg/Clock",
        ("drive_node",),
        ("ros2_control_node", "robot_state_publisher", "task_node"),
        "sim.launch.py: the plant's time, in lock-step with the controller manager",
    ),
    Interface(
        "/quirobot/sim/true_tip",
        "topic",
        "geometry_msgs/msg/PointStamped",
        ("drive_node",),
        (CLIENT,),
        "simulated backend: the plant's true drill tip",
    ),
    Interface(
        "~/inject_fault",
        "service",
        TRIGGER,
        ("drive_node",),
        ("tests",),
        "test_fault_injection:=true only: fault the feed's drive",
    ),
    # The description and tf.
    Interface(
        "/joint_states",
        "topic",
        "sensor_msgs/msg/JointState",
        ("ros2_control_node",),
        ("robot_state_publisher",),
        "joint_state_broadcaster's",
        upstream="joint_state_broadcaster",
    ),
    Interface(
        "/robot_description",
        "topic",
        "std_msgs/msg/String",
        ("robot_state_publisher",),
        ("ros2_control_node", "drive_node", "task_node", "rviz2"),
        "the URDF (latched)",
    ),
    Interface(
        "/tf",
        "topic",
        "tf2_msgs/msg/TFMessage",
        ("robot_state_publisher",),
        ("task_node", "rviz2"),
        "the links' poses",
        upstream="tf2_ros",
    ),
    Interface(
        "/tf_static",
        "topic",
        "tf2_msgs/msg/TFMessage",
        ("robot_state_publisher", "task_node"),
        ("task_node", "rviz2"),
        "fixed frames; task_node's world -> patient registration",
        upstream="tf2_ros",
    ),
    # The scope's servo mode.
    Interface(
        "/quirobot/scope/servo",
        "topic",
        "geometry_msgs/msg/TwistStamped",
        (TELEOP,),
        ("scope_servo_node",),
        "the scope tip's twist in world (MoveIt Servo's convention)",
    ),
    Interface(
        f"{ARM}/joint_trajectory",
        "topic",
        "trajectory_msgs/msg/JointTrajectory",
        ("scope_servo_node",),
        ("ros2_control_node",),
        "one-point joint commands while the servo mode is active",
    ),
    Interface(
        "/quirobot/scope/view_cone",
        "topic",
        "visualization_msgs/msg/MarkerArray",
        ("scope_servo_node",),
        ("rviz2",),
        "the scope's field of view",
    ),
    # Kinematics services (namespace `quirobot`, kinematics.launch.py).
    Interface(
        "/quirobot/compute_fk",
        "service",
        "moveit_msgs/srv/GetPositionFK",
        ("kinematics_node",),
        (CLIENT,),
        "closed-form FK",
    ),
    Interface(
        "/quirobot/compute_ik",
        "service",
        "moveit_msgs/srv/GetPositionIK",
        ("kinematics_node",),
        (CLIENT,),
        "closed-form IK",
    ),
)

DRIVE_CYCLE = "executor (simulated) or drive-cycle (canopen)"
CHECKS = (
    Check(
        "NaN/inf or malformed command, command limiter (soft limits braking at the acceleration "
        "limit), following error, overspeed, command watchdog: every control period",
        "drive_node",
        DRIVE_CYCLE,
        "quirobot_control/safety/motion_monitor.py",
    ),
    Check(
        "drive not in the state commanded, drive fault, exception in the cycle: one stop(reason) "
        "for every drive, latched until acknowledged",
        "drive_node",
        DRIVE_CYCLE,
        "quirobot_control/hardware/component.py",
    ),
    Check(
        "start-up handshake (the plugin's NaN commands are not commands), the hole of a goal only",
        "drive_node",
        DRIVE_CYCLE,
        "quirobot_control/bridge/drive_bridge.py",
    ),
    Check(
        "thrust limit, far-cortex breakthrough, spindle stall: every control period while drilling",
        "drive_node",
        DRIVE_CYCLE,
        "quirobot_control/safety/drilling_monitor.py",
    ),
    Check(
        "no-go zones and the tip speed near the entry (virtual fixtures)",
        "drive_node",
        DRIVE_CYCLE,
        "quirobot_control/axes/virtual_fixtures.py",
    ),
    Check(
        "SYNC and heartbeat timing, lost node, emergency messages",
        "drive_node",
        "drive-cycle",
        "quirobot_control/drives/canopen_master/feedback.py",
    ),
    Check(
        "the drive's own quick stop, master watchdog, limits (inside each drive)",
        "drive_node",
        "the drives (simulated: the plant's period; real: the drive's firmware)",
        "quirobot_control/drives/drive_control.py",
    ),
    Check(
        "the controller manager stopped dead (lock-step timeout): every drive stopped",
        "drive_node",
        EXECUTOR,
        "quirobot_control/bridge/lockstep.py",
    ),
    Check(
        "controllers deactivated when the drives stop",
        "drive_node",
        EXECUTOR,
        "quirobot_control/bridge/controller_stopper.py",
    ),
    Check(
        "goal limits: workspace, joint limits, depth, feed rate, thrust bound (refused before motion)",
        "task_node",
        TASK_EXECUTOR,
        "quirobot_control/planning/drill_hole.py",
    ),
    Check(
        "will the breakthrough detector see the far cortex? (plan refused if not)",
        "task_node",
        TASK_EXECUTOR,
        "quirobot_control/safety/breakthrough_plan.py",
    ),
    Check(
        "the plan against the no-go zones and the tip-speed fixture",
        "task_node",
        TASK_EXECUTOR,
        "quirobot_control/planning/fixture_check.py",
    ),
    Check(
        "each joint state against the plan at its own stamp (path tolerance)",
        "task_node",
        TASK_EXECUTOR,
        "quirobot_control/procedures/path_check.py",
    ),
    Check(
        "what a cancel, an error or a drive stop does in each phase (out of the bone first)",
        "task_node",
        TASK_EXECUTOR,
        "quirobot_control/procedures/cancel_policy.py",
    ),
    Check(
        "docking check, portal (RCM), cone and depth limits, dead-man timeout, stale twists",
        "scope_servo_node",
        EXECUTOR,
        "quirobot_control/procedures/scope_servo.py",
    ),
    Check(
        "joint-state watchdog (stale or missing joint states)",
        "scope_servo_node",
        EXECUTOR,
        "quirobot_control/safety/state_age.py",
    ),
    Check(
        "goal tolerances at the end of each trajectory",
        "ros2_control_node",
        "update loop",
        "config/controllers.yaml",
    ),
)

#: The page's generated blocks.
BLOCKS = {
    name: docs_block.MarkedBlock(
        PAGE,
        f"<!-- {name} table: scripts/docs_architecture.py --write -->",
        f"<!-- end of the {name} table -->",
    )
    for name in ("process", "interface", "check")
}


def _names(names: tuple[str, ...]) -> str:
    return ", ".join(names)


def process_table() -> str:
    lines = ["| process (package) | launched by | thread | runs |", "|---|---|---|---|"]
    for process in PROCESSES:
        for k, thread in enumerate(process.threads):
            head = (f"**{process.name}** ({process.package})", process.launched_by) if k == 0 else ("", "")
            lines.append(f"| {head[0]} | {head[1]} | {thread.name} | {thread.runs} |")
    return "\n".join(lines)


def interface_table() -> str:
    lines = [
        "| name | kind | type | from (publisher, server) | to (subscriber, client) | what |",
        "|---|---|---|---|---|---|",
    ]
    for i in INTERFACES:
        what = f"{i.what} (name: {i.upstream})" if i.upstream else i.what
        lines.append(
            f"| `{i.name}` | {i.kind} | `{i.type}` | {_names(i.sources)} | {_names(i.sinks)} | {what} |"
        )
    return "\n".join(lines)


def check_table() -> str:
    lines = ["| check | process | thread | module |", "|---|---|---|---|"]
    lines += [f"| {c.check} | {c.process} | {c.thread} | `{c.module}` |" for c in CHECKS]
    return "\n".join(lines)


TABLES = {"process": process_table, "interface": interface_table, "check": check_table}


def block(name: str) -> str:
    """The marked block `name` as the page must hold it."""
    marks = BLOCKS[name]
    return "\n".join([marks.begin, TABLES[name](), marks.end])


def stale_blocks(text: str) -> list[str]:
    """The names of the blocks `text` (the page) does not hold as this file writes them."""
    return [name for name, marks in BLOCKS.items() if marks.of(text) != block(name)]


class Route(NamedTuple):
    """The picture's arrow for one pair of processes: from `start` to `end` (axes units), bent by
    `rad` (matplotlib's arc3), its label at `label_xy`; `label` shortens a long list of names."""

    start: tuple[float, float]
    end: tuple[float, float]
    label_xy: tuple[float, float]
    rad: float = 0.0
    ha: str = "center"
    label: str = ""
    dashed: bool = False


#: Left out of the picture (the tables list them): on every node, or for tests and ground truth.
NOT_DRAWN = ("/tf_static", "/diagnostics", "/quirobot/sim/true_tip", "~/inject_fault")
#: Where the picture draws each process (centre, half width, half height; axes units).
BOXES = {
    "task_node": ((13, 60), 11, 8),
    "ros2_control_node": ((50, 60), 11, 8),
    "drive_node": ((87, 60), 11, 9),
    "robot_state_publisher": ((50, 88), 11, 3.5),
    "rviz2": ((87, 88), 9, 3.5),
    "scope_servo_node": ((13, 20), 11, 4),
    "kinematics_node": ((87, 20), 9, 3.5),
}
#: Nodes outside the stack (and a second drawing of rviz2, to keep its arrow short).
OUTSIDE = ((CLIENT, (13, 95.5)), (CLIENT, (87, 4)), (TELEOP, (13, 4)), ("rviz2 (as above)", (44, 6)))
ROUTES = {
    (CLIENT, "task_node"): Route(
        (16, 94),
        (16, 68.5),
        (17, 81),
        ha="left",
        label="/quirobot/drill_hole [action]\n/quirobot/enable, disable,\n  reset_fault, home [srv]",
    ),
    ("task_node", CLIENT): Route((11.5, 68.5), (11.5, 94), (10.5, 81), ha="right"),
    ("task_node", "rviz2"): Route((22, 68.5), (79, 85), (69, 80.2), dashed=True),
    ("task_node", "ros2_control_node"): Route(
        (24.5, 63),
        (38.5, 63),
        (31.5, 57.5),
        label="follow_joint_trajectory [action]\nand its _action/cancel_goal [srv]\n"
        "(both controllers)\n/controller_manager/\n  list_controllers [srv]",
    ),
    ("task_node", "drive_node"): Route(
        (16, 51.5),
        (84, 50.5),
        (50, 44.5),
        rad=0.22,
        label="/quirobot/drilling_context\n/quirobot/drives/{enable, disable, acknowledge_stop, home} [srv]",
    ),
    ("drive_node", "task_node"): Route((82, 50.5), (10, 51.5), (50, 33.5), rad=-0.4),
    ("ros2_control_node", "drive_node"): Route((61.5, 64), (75.5, 64), (68.5, 66.5)),
    ("drive_node", "ros2_control_node"): Route((75.5, 58), (61.5, 58), (68.5, 55)),
    ("drive_node", "scope_servo_node"): Route((86, 50.5), (24.5, 19), (64, 25), rad=-0.3),
    ("drive_node", "robot_state_publisher"): Route((78, 69.5), (58, 84), (67, 73.5), rad=0.1),
    ("ros2_control_node", "robot_state_publisher"): Route((46, 68.5), (46, 84), (45, 73.5), ha="right"),
    ("robot_state_publisher", "ros2_control_node"): Route((54, 84), (54, 68.5), (55, 73.5), ha="left"),
    ("robot_state_publisher", "task_node"): Route((39, 86), (22, 68.5), (33, 81)),
    ("robot_state_publisher", "drive_node"): Route((61.5, 86), (80, 69.5), (75, 77.5)),
    ("robot_state_publisher", "rviz2"): Route((61.5, 88), (77.5, 88), (69.5, 90.5)),
    (TELEOP, "scope_servo_node"): Route((13, 6.5), (13, 15.5), (14.5, 11), ha="left"),
    ("scope_servo_node", "ros2_control_node"): Route((20, 24.5), (44, 51.5), (27, 31)),
    ("scope_servo_node", "rviz2"): Route((18, 15.5), (40, 8), (33, 10), dashed=True),
    (CLIENT, "kinematics_node"): Route((87, 6.5), (87, 16), (88.5, 11), ha="left"),
}


def picture_pairs() -> dict[tuple[str, str], list[str]]:
    """{(from, to): names} of every drawn interface: topics from publisher to subscriber,
    services and actions from client to server (`[srv]`, `[action]` after the name)."""
    pairs: dict[tuple[str, str], list[str]] = {}
    for i in INTERFACES:
        if i.name in NOT_DRAWN:
            continue
        mark = {"topic": "", "service": " [srv]", "action": " [action]"}[i.kind]
        ends = (i.sources, i.sinks) if i.kind == "topic" else (i.sinks, i.sources)
        for a in ends[0]:
            for b in ends[1]:
                if a != b:
                    pairs.setdefault((a, b), []).append(i.name + mark)
    return pairs


def checks_in(process: str, thread: str) -> list[str]:
    """The modules (file stems) of the CHECKS that run in `thread` of `process`."""
    return [
        Path(c.module).stem
        for c in CHECKS
        if c.process == process
        and any(thread in (part, part.split(" (")[0]) for part in c.thread.split(" or "))
    ]


def box_text(process: Process) -> str:
    """A process's box: each thread and the safety checks it runs (module names), wrapped."""
    lines = []
    placed = set()
    for thread in process.threads:
        lines.append(f"thread: {thread.name}")
        checks = checks_in(process.name, thread.name)
        placed.update(checks)
        lines += textwrap.wrap(
            "checks: " + ", ".join(checks), 38, initial_indent="  ", subsequent_indent="    "
        )[: 4 if checks else 0]
    inside = [Path(c.module).stem for c in CHECKS if c.process == process.name]
    rest = [stem for stem in inside if stem not in placed]
    if rest:
        lines += textwrap.wrap("in each drive: " + ", ".join(rest), 38, subsequent_indent="  ")
    return "\n".join(lines)


def draw(path: Path = IMAGE) -> None:
    """The picture: one box per process with its threads, one arrow per pair of processes
    labelled with the interfaces from one to the other."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch

    figure, axes = plt.subplots(figsize=(18, 12.5))
    axes.set_xlim(-2, 102)
    axes.set_ylim(0, 100)
    axes.axis("off")
    for process in PROCESSES:
        (x, y), w, h = BOXES[process.name]
        axes.add_patch(
            FancyBboxPatch(
                (x - w, y - h), 2 * w, 2 * h, boxstyle="round,pad=0.3", fc="#e8f0fb", ec="#2b5797", lw=1.5
            )
        )
        axes.text(x, y + h - 1.6, process.name, ha="center", va="center", fontsize=12, weight="bold")
        axes.text(
            x,
            y - 1.2,
            box_text(process),
            ha="center",
            va="center",
            fontsize=8,
            family="monospace",
            multialignment="left",
        )
    for name, (x, y) in OUTSIDE:
        axes.text(x, y, name, ha="center", va="center", fontsize=10, bbox={"fc": "#fff4e0", "ec": "#c07000"})
    for pair, names in picture_pairs().items():
        route = ROUTES[pair]
        axes.annotate(
            "",
            xy=route.end,
            xytext=route.start,
            arrowprops={
                "arrowstyle": "-|>",
                "color": "#888888" if route.dashed else "#444444",
                "lw": 1.1,
                "linestyle": "--" if route.dashed else "-",
                "shrinkA": 0,
                "shrinkB": 0,
                "connectionstyle": f"arc3,rad={route.rad}",
            },
        )
        axes.text(
            *route.label_xy,
            route.label or "\n".join(names),
            ha=route.ha,
            va="center",
            fontsize=7.5,
            color="#1a1a1a",
            bbox={"fc": "white", "ec": "none", "alpha": 0.9, "pad": 0.8},
        )
    axes.set_title(
        "QUIROBOT running: sim.launch.py, scope_servo.launch.py, display.launch.py, kinematics.launch.py. "
        "Arrows: topics publisher → subscriber,\n[srv] and [action] client → server; dashed: for RViz "
        "only. Not drawn: /tf_static, /diagnostics, /quirobot/sim/true_tip, ~/inject_fault "
        "(docs/architecture.md lists every name).",
        fontsize=11,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=85)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="rewrite the page's tables and the picture")
    action.add_argument("--check", action="store_true", help="exit 1 if the page's tables are stale")
    args = parser.parse_args(argv)
    page = PAGE.read_text()
    if args.write:
        for name, marks in BLOCKS.items():
            page = page.replace(marks.of(page), block(name))
        PAGE.write_text(page)
        draw()
        print(f"rewrote {PAGE.relative_to(ROOT)} and {IMAGE.relative_to(ROOT)}")
    elif args.check:
        stale = stale_blocks(page)
        for name in stale:
            print(f"{PAGE.name}: the {name} table is stale (run with --write)")
        return 1 if stale else 0
    else:
        print("\n\n".join(block(name) for name in BLOCKS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
