"""Bring QUIROBOT up under ros2_control.

    ros2 launch quirobot bringup.launch.py [hardware:=mock|real] [tool:=drill|arthroscope|none]
        [drive_backend:=simulated|canopen] [sim_clock:=false|true] [homing:=false|true]
        [controller_rate:=HZ] [plant:=ideal|realistic] [calibration:=FILE]

robot_state_publisher (URDF from xacro with the chosen hardware), ros2_control_node with
config/controllers.yaml, one spawner (joint_state_broadcaster, then the arm's
joint_trajectory_controller, and drill_feed_controller with tool:=drill; with hardware:=real once
drive_node's drives are up), and for hardware:=real the `drive_node` on the other side of
joint_state_topic_hardware_interface (safety layer, PID per joint, brushless drives; its joints
from the same robot description).
hardware:=mock uses mock_components/GenericSystem. With
hardware:=real, drive_backend picks the drive node's drives: simulated (MuJoCo plant) or canopen
(the CiA 402 servo drives on can0..can2, see docs/canopen.md). sim_clock:=true (drive_backend:=simulated,
as sim.launch.py uses it): the simulated plant's time is the ROS time (drive_node publishes /clock
and steps in lockstep with the controller manager, which runs on it with use_sim_time, as does
robot_state_publisher), so load slows the simulation down instead of opening following errors.
controller_rate (Hz): the controller manager's update_rate (default: the drives' control rate, as
in config/controllers.yaml); with sim_clock, drive_node runs whole plant periods per command
(sim.launch.py: 100 Hz on the drives' 1 kHz, bridge.lockstep).
calibration: a calibration file (`quirobot calibrate --output`; default none, the nominal machine)
whose identified joint-origin errors go into the robot description (the xacro's calibration_file:
robot_state_publisher's tf is the calibrated machine's, as task_node's plan is with sim.launch.py);
checked before anything starts (quirobot_description.launch_description.checked_calibration: a
malformed file, or a value outside its tolerance band, ends the launch in one line naming it).
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
from launch import LaunchContext, LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, RegisterEventHandler, SetLaunchConfiguration
from launch.conditions import IfCondition
from launch.event_handlers import OnProcessIO
from launch.events.process import ProcessIO
from launch.substitutions import EqualsSubstitution, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from quirobot_control.bridge.drive_bridge import DRIVE_BACKENDS, STATES_AT_HARDWARE
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.controllers import spawned_controllers
from quirobot_control.planning.tasks import bone_task
from quirobot_description.parameters import load_parameters
from quirobot_description.launch_description import checked_calibration, robot_description_parameter
from quirobot_description.plant_parameters import PLANTS
from quirobot_description.urdf import TOOLS

#: The spawners wait this long (s of wall time) for the controller manager's loop to switch a
#: controller (default 5 s): with sim_clock the loop runs on drive_node's clock, which a loaded
#: machine starts late and runs slowly (a 5 s wait failed the broadcaster's activation there).
#: The switch_controller service answers once its loop has switched (or its `timeout`, this
#: one): the spawner's wait for that answer (--service-call-timeout, default 10 s) must outlast
#: it, or the spawner gives up first (at load 15-20 the broadcaster's switch took over 10 s and
#: its spawner failed, leaving the stack without joint states). A lost answer (a new spawner's
#: first service call can lose its answer to DDS discovery: controller_manager_services.
#: service_caller retries it) costs the whole --service-call-timeout before the spawner asks
#: again, so drive_node's start-up watchdog (control.yaml safety.watchdog_startup_timeout)
#: outlasts it with the start-up itself (test/package/test_package_controllers.py).
SWITCH_TIMEOUT = ["--switch-timeout", "60", "--service-call-timeout", "70"]

#: The hardware bringup runs under ros2_control_node (Gazebo brings its own: gazebo.launch.py).
HARDWARE = ("mock", "real")


def drives_control_rate() -> int:
    """Hz, the drives' position-loop rate from the parameter file (= config/controllers.yaml's
    update_rate, test/package/test_package_controllers.py)."""
    return round(1.0 / control_configuration(load_parameters()).dt)


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("quirobot")
    hardware = LaunchConfiguration("hardware")
    tool = LaunchConfiguration("tool")
    drive_backend = LaunchConfiguration("drive_backend")
    robot_description = robot_description_parameter(
        tool=tool, hardware=hardware, calibration_file=LaunchConfiguration("calibration")
    )
    sim_clock = {"use_sim_time": LaunchConfiguration("sim_clock")}
    controller_rate = LaunchConfiguration("controller_rate")  # launch_ros reads it as YAML: an integer
    controllers = PathJoinSubstitution([share, "config", "controllers.yaml"])
    state_publisher = Node(
        package="robot_state_publisher",
        executable="robot_state_publisher",
        parameters=[{"robot_description": robot_description}, sim_clock],
        output="screen",
    )
    control_node = Node(
        package="controller_manager",
        executable="ros2_control_node",
        parameters=[controllers, sim_clock, {"update_rate": controller_rate}],
        # Jazzy reads /robot_description as a topic; Humble needs the remap.
        remappings=[("~/robot_description", "/robot_description")],
        output="screen",
    )
    drive_node = Node(
        package="quirobot",
        executable="drive_node",
        parameters=[
            {
                "drive_backend": drive_backend,
                "robot_description": robot_description,
                "simulated_bone": LaunchConfiguration("simulated_bone"),
                "plant": LaunchConfiguration("plant"),
                "simulated_machine": LaunchConfiguration("machine"),
                "test_fault_injection": LaunchConfiguration("test_fault_injection"),
                "publish_clock": LaunchConfiguration("sim_clock"),
                "controller_rate": controller_rate,
                "homing": LaunchConfiguration("homing"),
            }
        ],
        condition=IfCondition(EqualsSubstitution(hardware, "real")),
        output="screen",
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "hardware",
                default_value="mock",
                choices=list(HARDWARE),
                description="ros2_control hardware: mock (GenericSystem) or real (topic bridge, drive_node)",
            ),
            DeclareLaunchArgument(
                "tool",
                default_value="drill",
                choices=list(TOOLS),
                description="tool on the wrist: drill, arthroscope or none",
            ),
            DeclareLaunchArgument(
                "drive_backend",
                default_value="simulated",
                choices=list(DRIVE_BACKENDS),
                description="drives of drive_node (hardware:=real): simulated (MuJoCo plant) or canopen "
                "(CiA 402 servo drives on the CAN buses can0..can2)",
            ),
            DeclareLaunchArgument(
                "simulated_bone",
                default_value="none",
                description="drive_backend:=simulated: this task's bone in the plant (thrust on the tip): "
                "a shipped task name (incision) or an incision task file, its bone at its entry; "
                "refused before anything starts if it is neither",
            ),
            DeclareLaunchArgument(
                "machine",
                default_value="-1",
                description="drive_backend:=simulated: the simulated machine, the seed `quirobot calibrate "
                "--seed` draws it with (its drives' serial numbers, which a calibration must name; on the "
                "realistic plant its geometric errors); -1: the nominal machine",
            ),
            DeclareLaunchArgument(
                "plant",
                default_value=PLANTS[0],
                choices=list(PLANTS),
                description="drive_backend:=simulated: ideal (the controller's own model) or realistic "
                "(gearbox backlash, compliances, delay, noise, cutting forces; with quirobot simulate's "
                "compensation)",
            ),
            DeclareLaunchArgument(
                "test_fault_injection",
                default_value="false",
                choices=["false", "true"],
                description="tests only, drive_backend:=simulated: drive_node's ~/inject_fault service",
            ),
            DeclareLaunchArgument(
                "sim_clock",
                default_value="false",
                choices=["false", "true"],
                description="drive_backend:=simulated: the plant's time is the ROS time (drive_node "
                "publishes /clock, the controller manager and robot_state_publisher use it)",
            ),
            DeclareLaunchArgument(
                "controller_rate",
                default_value=str(drives_control_rate()),
                description="Hz, the controller manager's update_rate (default: the drives' control rate); "
                "with sim_clock the plant runs whole periods per command, so it must divide that rate",
            ),
            DeclareLaunchArgument(
                "homing",
                default_value="false",
                choices=["false", "true"],
                description="drive_backend:=simulated: drives with incremental encoders, not homed until "
                "/quirobot/drives/home (default: absolute encoders, homed at start-up)",
            ),
            DeclareLaunchArgument(
                "calibration",
                default_value="",
                description="a calibration file (quirobot calibrate --output) for the robot description's "
                "joint origins (default: none, the nominal machine); refused before anything starts if "
                "malformed or outside the machine's tolerances",
            ),
            checked_calibration("calibration"),  # before every node: a bad file starts nothing
            OpaqueFunction(function=checked_bone),  # the same for the bone's task file
            state_publisher,
            control_node,
            drive_node,
            OpaqueFunction(function=controllers_spawner, args=[drive_node]),
        ]
    )


def checked_bone(context: LaunchContext) -> list:
    """simulated_bone read as drive_node reads it (planning.tasks.bone_task), a file made absolute;
    a bad one ends the launch with one line naming it and the problem, before any node starts."""
    return [
        SetLaunchConfiguration(
            "simulated_bone", bone_task(LaunchConfiguration("simulated_bone").perform(context))
        )
    ]


def controllers_spawner(context: LaunchContext, drive_node: Node) -> list:
    """One spawner for every controller, in order: joint_state_broadcaster, the arm's
    joint_trajectory_controller, and drill_feed_controller with tool:=drill. One process, so the
    controller manager's services are discovered once (each new spawner's first calls can lose
    their answers to DDS discovery, SWITCH_TIMEOUT; ros2_control#1934: one spawner for
    controllers started together), and one at a time (a spawner loads, configures and activates
    each before the next). With hardware:=real it starts once drive_node says a joint state went
    out with the controller manager's hardware component subscribed (STATES_AT_HARDWARE; "drives
    up" alone was not enough under load): a trajectory controller activated before the drives'
    states reach the plugin holds the description's initial pose, not the robot's (docs/safety.md)."""
    controllers = spawned_controllers(LaunchConfiguration("tool").perform(context))
    spawner = Node(
        package="controller_manager",
        executable="spawner",
        arguments=[*controllers, "--controller-manager", "/controller_manager", *SWITCH_TIMEOUT],
    )
    if LaunchConfiguration("hardware").perform(context) != "real":
        return [spawner]
    started: list[Node] = []

    def on_drive_node_output(event: ProcessIO) -> list[Node] | None:
        if started or STATES_AT_HARDWARE.encode() not in event.text:
            return None
        started.append(spawner)
        return [spawner]

    return [
        RegisterEventHandler(
            OnProcessIO(
                target_action=drive_node, on_stdout=on_drive_node_output, on_stderr=on_drive_node_output
            )
        )
    ]
