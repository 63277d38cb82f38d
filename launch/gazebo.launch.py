"""Simulate QUIROBOT in Gazebo (Harmonic, ROS 2 Jazzy) through gz_ros2_control.

    ros2 launch quirobot gazebo.launch.py [tool:=drill|arthroscope|none] [world:=empty.sdf]
        [headless:=true|false] [task:=incision|...|none]

Starts Gazebo running (-r, else the spawners time out; server only, -s, where there is no
display or with headless:=true), robot_state_publisher with the
hardware:=gazebo description, spawns the robot with its guide plane (report frame 0') at
structure.mount_height above the floor, bridges /clock, then, once the robot is in the world,
one spawner starts joint_state_broadcaster, joint_trajectory_controller and (with the drill)
drill_feed_controller in turn. With drill_hole:=true, task_node serves the DrillHole action on
Gazebo's joint states, gazebo_drives_node standing in for drive_node (simulation.gazebo_drives:
Gazebo models no drilling thrust, so a goal drills without a bone model).
Controllers: config/controllers_gazebo.yaml (named by the description's <gazebo> block; position
commands only, see there; it also sets the controller manager's use_sim_time before gz_ros2_control
constructs it, which keeps the start-up from aborting Gazebo: see there). Every node runs on
Gazebo's clock (use_sim_time). The task's operating scene (its no-go zones and bone layers, the
shapes task_node draws in RViz: planning.scene.scene_markers) stands in the world as a static model
`scene` of collision bodies. How to run it and what is tested: docs/gazebo.md.
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
import os

from launch import LaunchDescription
from launch.actions import (
    DeclareLaunchArgument,
    IncludeLaunchDescription,
    OpaqueFunction,
    RegisterEventHandler,
)
from launch.conditions import IfCondition, UnlessCondition
from launch.event_handlers import OnProcessExit
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from quirobot_control.hardware.controllers import spawned_controllers
from quirobot_control.planning.scene import SceneMarker, scene_markers
from quirobot_control.planning.tasks import load_task
from quirobot_control.simulation.gazebo_drives import PATH_TIME_OUT
from quirobot_description.launch_description import robot_description_parameter
from quirobot_description.parameters import load_parameters
from quirobot_description.urdf import TOOLS

#: The spawners wait this long (s of wall time) for the controller manager and for a switch
#: (defaults 10 s and 5 s): Gazebo loads the plugin and the robot first, slowly on a loaded machine.
SPAWNER_TIMEOUTS = [
    "--controller-manager-timeout",
    "120",
    "--switch-timeout",
    "60",
    "--service-call-timeout",  # longer than the switch's own timeout (bringup.launch.py says why)
    "70",
]


def headless_default() -> str:
    """Default of `headless`: "true" where there is no display (no DISPLAY nor WAYLAND_DISPLAY)."""
    return "false" if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") else "true"


def scene_body(marker: SceneMarker) -> str:
    """One scene marker as an SDF link with the same shape as collision and visual (world frame
    of the URDF, m; a CYLINDER's axis is z in both RViz and SDF)."""
    if marker.type == "cube":
        shape = f"<box><size>{' '.join(map(repr, marker.scale))}</size></box>"
    elif marker.type == "sphere":
        shape = f"<sphere><radius>{0.5 * marker.scale[0]!r}</radius></sphere>"
    elif marker.type == "cylinder":
        radius, length = 0.5 * marker.scale[0], marker.scale[2]
        shape = f"<cylinder><radius>{radius!r}</radius><length>{length!r}</length></cylinder>"
    else:
        raise ValueError(f"scene marker {marker.namespace}/{marker.id}: no solid for a {marker.type}")
    pose = " ".join(map(repr, (*marker.position, *marker.orientation)))
    return (
        f'<link name="{marker.namespace}_{marker.id}"><pose rotation_format="quat_xyzw">{pose}</pose>'
        f'<collision name="collision"><geometry>{shape}</geometry></collision>'
        f'<visual name="visual"><geometry>{shape}</geometry></visual></link>'
    )


def scene_sdf(task: str) -> str:
    """The task's operating scene as a static SDF model: its no-go zones and its bone's layers, the
    solids of task_node's RViz scene (planning.scene.scene_markers of the same task file)."""
    loaded = load_task(task)
    bone = getattr(loaded, "bone", None)
    markers = scene_markers(
        zones=loaded.no_go_zones, bone=(loaded.entry, loaded.direction, bone) if bone is not None else None
    )
    bodies = "".join(scene_body(m) for m in markers)
    return f'<sdf version="1.9"><model name="scene"><static>true</static>{bodies}</model></sdf>'


def gazebo_server(headless: bool) -> IncludeLaunchDescription:
    """ros_gz_sim's gz_sim.launch.py: running (-r), server only (-s) when `headless`, the world;
    included when the headless argument says so (one of the two)."""
    condition = IfCondition if headless else UnlessCondition
    return IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare("ros_gz_sim"), "launch", "gz_sim.launch.py"])
        ),
        launch_arguments={
            "gz_args": ["-r -v 3 -s " if headless else "-r -v 3 ", LaunchConfiguration("world")]
        }.items(),
        condition=condition(LaunchConfiguration("headless")),
    )


def _spawn_scene(context, mount_height: float) -> list:
    task = LaunchConfiguration("task").perform(context)
    if task == "none":
        return []
    return [
        Node(
            package="ros_gz_sim",
            executable="create",
            name="spawn_scene",
            arguments=["-string", scene_sdf(task), "-name", "scene", "-z", str(mount_height)],
            output="screen",
        )
    ]


def controllers_spawner(context) -> list[Node]:
    """One spawner for every controller of the tool, in order (hardware.controllers), as
    bringup.launch.py starts them: the controller manager's services discovered once."""
    controllers = spawned_controllers(LaunchConfiguration("tool").perform(context))
    return [
        Node(
            package="controller_manager",
            executable="spawner",
            arguments=[*controllers, "--controller-manager", "/controller_manager", *SPAWNER_TIMEOUTS],
            parameters=[{"use_sim_time": True}],
            output="screen",
        )
    ]


def drill_hole_nodes(context) -> list[Node]:
    """With drill_hole:=true (and the drill): task_node (the DrillHole action, as sim.launch.py and
    bringup run it) on Gazebo's joint states, and gazebo_drives_node as its drive side
    (simulation.gazebo_drives: enabled, homed, a hole taken per goal; no drilling thrust on
    Gazebo). A goal without its own task has no bone model (task ""): Gazebo's bone solids are
    rigid collision bodies, not bone. Off by default: in the first CI run with them in every
    start-up, the third start-up's stop left Gazebo's server running past launch's SIGTERM (its
    `gz sim` child outlived the ruby wrapper), which no run without them did (docs/gazebo.md)."""
    if LaunchConfiguration("drill_hole").perform(context) != "true":
        return []
    if LaunchConfiguration("tool").perform(context) != "drill":
        raise RuntimeError("drill_hole:=true needs tool:=drill")
    sim_time = {"use_sim_time": True}
    return [
        Node(
            package="quirobot",
            executable="gazebo_drives_node",
            parameters=[sim_time],
            output="screen",
        ),
        Node(
            package="quirobot",
            executable="task_node",
            # Gazebo's joint_state_broadcaster publishes /joint_states at the controller manager's
            # 1 kHz (controllers_gazebo.yaml), which monitor_rate's default checks at. start_delay:
            # 10 s of simulated time for both controllers to accept their goals; with sim.launch.py's
            # 4 s the first goal after start-up failed once ("the feed controller did not accept the
            # plan before its start time": drill_feed_controller received the goal 4.1 s after
            # task_node sent it, joint_trajectory_controller its own after 1.9 s; Gazebo runs at
            # about real time, sim.launch.py's plant slower than that on these machines).
            parameters=[
                {
                    **sim_time,
                    "joint_states_topic": "/joint_states",
                    "task": "",
                    "start_delay": 10.0,
                    # the controllers' clock jumps under load (simulation.gazebo_drives.PATH_TIME_OUT)
                    "path_time_out": PATH_TIME_OUT,
                }
            ],
            output="screen",
        ),
    ]


def generate_launch_description() -> LaunchDescription:
    tool = LaunchConfiguration("tool")
    mount_height = load_parameters().structure.mount_height  # m, the parameter file's
    robot_description = robot_description_parameter(hardware="gazebo", tool=tool)
    sim_time = {"use_sim_time": True}
    state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        parameters=[{"robot_description": robot_description, **sim_time}],
        output="screen",
    )
    spawn = Node(
        package="ros_gz_sim",
        executable="create",
        arguments=["-topic", "/robot_description", "-name", "quirobot", "-z", str(mount_height)],
        output="screen",
    )
    clock = Node(
        package="ros_gz_bridge",
        executable="parameter_bridge",
        arguments=["/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock"],
        parameters=[sim_time],
        output="screen",
        # ros_gz_bridge's parameter_bridge sometimes ignores SIGINT and SIGTERM at shutdown (1 of 5
        # start-ups in CI's Gazebo test; it also aborted once on a corrupted heap, and issue 34 saw
        # it segfault): launch's SIGKILL ends it after 2 + 2 s instead of its default 5 + 10 s
        sigterm_timeout="2",
        sigkill_timeout="2",
    )

    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "tool",
                default_value="drill",
                choices=list(TOOLS),
                description="tool on the wrist: drill, arthroscope or none",
            ),
            DeclareLaunchArgument(
                "world", default_value="empty.sdf", description="Gazebo world file (its floor at z = 0)"
            ),
            DeclareLaunchArgument(
                "headless",
                default_value=headless_default(),
                choices=["true", "false"],
                description="Gazebo's server only, no GUI (default: true where there is no display)",
            ),
            DeclareLaunchArgument(
                "task",
                default_value="incision",
                description="task file (config/tasks) whose scene stands in the world, or none",
            ),
            DeclareLaunchArgument(
                "drill_hole",
                default_value="false",
                choices=["true", "false"],
                description="start task_node (the DrillHole action) and gazebo_drives_node, its drive side",
            ),
            gazebo_server(headless=True),
            gazebo_server(headless=False),
            OpaqueFunction(function=_spawn_scene, args=[mount_height]),
            state_publisher,
            clock,
            spawn,
            OpaqueFunction(function=drill_hole_nodes),
            # Once the robot is in the world (and with it gz_ros2_control's controller manager).
            RegisterEventHandler(
                OnProcessExit(target_action=spawn, on_exit=[OpaqueFunction(function=controllers_spawner)])
            ),
        ]
    )
