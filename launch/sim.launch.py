"""The whole stack in simulation, driven from another node through the task-level API.

    ros2 launch quirobot sim.launch.py [test_fault_injection:=false|true] [homing:=false|true]
        [controller_rate:=HZ]  (the controller manager's update_rate; default a tenth of the drives')
        [plant:=ideal|realistic]  (the simulated plant; realistic with quirobot simulate's compensation)
        [calibration:=FILE]  (a calibration file, `quirobot calibrate --output`; default none: nominal)
        [bone:=TASK]  (the task whose bone the plant holds, a shipped name or a task file; default incision)

bringup.launch.py hardware:=real tool:=drill drive_backend:=simulated simulated_bone:=BONE
sim_clock:=true (the simulated plant's time is the ROS time, task_node uses it too)
(ros2_control_node with joint_state_topic_hardware_interface, the trajectory controllers,
robot_state_publisher, drive_node's SimulatedDrives on the MuJoCo plant with the bone of the task
`bone` (the shipped incision's) thrusting on the drill tip) plus `task_node` (a goal without its own
task planned on that bone too): the /quirobot/drill_hole action,
/quirobot/state and the enable, disable and reset_fault services, and the registered `patient`
frame (config/registration.yaml on /tf_static) goals may be given in
(docs/drive_from_another_node.md).

calibration: the machine's calibration file, task_node's calibration_file (DrillHole goals are
planned with the calibrated kinematics, and the hole's drilling context carries it to drive_node,
which measures the tip's depth, checks the fixtures and feeds thrust forward on the same model:
one model on both sides, issue 33 item 6) and the robot description's (bringup.launch.py: tf shows
the calibrated machine). Checked before anything starts: a malformed file, or one with a value
outside its tolerance band, ends the launch with one line naming the file and the problem. The
simulated plant stays the nominal machine whatever the file says (drive_node builds it from the
parameter file): a calibration here is a model of another machine, which the plan then follows.
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.launch_description import checked_calibration
from quirobot_description.parameters import load_parameters
from quirobot_description.plant_parameters import PLANTS

#: Plant periods drive_node runs per controller-manager command (bridge.lockstep): the controller
#: manager at a tenth of the drives' rate, 100 Hz on their 1 kHz. Design assumption: every message
#: of the lock-step (the joint states, /clock, the command) costs each node it wakes, so the stack
#: needs less CPU per second of plant time the fewer commands it exchanges (bench/sim_goal.py:
#: 2.0 CPU s per plant s at 100 Hz against 2.8 at 250 Hz before issue 36's speed work,
#: bench/results/sim_goal*.txt), and the hole stays the same (the drive bridge's second-order
#: hold between commands; the hole against quirobot simulate's: test/ros/test_launch_drill_hole.py
#: test_0; docs/drive_from_another_node.md).
PERIODS_PER_COMMAND = 10


def simulation_controller_rate() -> int:
    """Hz: the drives' position-loop rate (the parameter file's) over PERIODS_PER_COMMAND."""
    return round(1.0 / control_configuration(load_parameters()).dt) // PERIODS_PER_COMMAND


def generate_launch_description() -> LaunchDescription:
    bringup = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare("quirobot"), "launch", "bringup.launch.py"])
        ),
        launch_arguments={
            "hardware": "real",
            "tool": "drill",
            "drive_backend": "simulated",
            "simulated_bone": LaunchConfiguration("bone"),
            "sim_clock": "true",
            "test_fault_injection": LaunchConfiguration("test_fault_injection"),
            "homing": LaunchConfiguration("homing"),
            "plant": LaunchConfiguration("plant"),
            "machine": LaunchConfiguration("machine"),
            "controller_rate": LaunchConfiguration("controller_rate"),
            "calibration": LaunchConfiguration("calibration"),
        }.items(),
    )
    task_node = Node(
        package="quirobot",
        executable="task_node",
        # The plant's clock, in lock-step with the controller manager (bridge.lockstep): the joint
        # states reach the controllers one or two periods (1-2 ms of plant time) after they were
        # measured, whatever the load, and the path is checked on time-aligned samples. What
        # tracking_lag must cover is the drives' own following error (no model feed-forward on the
        # ROS path): 20 ms, largest path deviation 7 um of the feed's 0.2 mm (test/support's
        # drive-bridge harness at 250 Hz; at 100 Hz 26 um on gantry_z, 3 % of its 1 mm; 40 ms
        # before, for stale states the time-aligned check no longer sees). Much less plans the
        # approach at the tip-speed fixture's limit, which the held commands then exceed by 0.2 %
        # (a fixture stop at 0 ms).
        # start_delay 4 s of plant time for the controllers to accept both goals (1 s was too
        # short in the load test: an action round trip takes seconds of wall time under load).
        # registration_file: the patient frame (world -> patient on /tf_static) DrillHole goals may
        # use; config/registration.yaml is `quirobot register --seed 1 --output` (a simulated
        # registration at the shipped incision's entry, its rotation 27 deg: a test fixture).
        parameters=[
            {
                "use_sim_time": True,
                # A running goal is checked at the controllers' rate (the joint states' own).
                "monitor_rate": ParameterValue(LaunchConfiguration("controller_rate"), value_type=float),
                "tracking_lag": 0.02,
                "start_delay": 4.0,
                "task": LaunchConfiguration("bone"),  # a goal without its own: the plant's bone
                "registration_file": PathJoinSubstitution(
                    [FindPackageShare("quirobot"), "config", "registration.yaml"]
                ),
                # checked_calibration made it an absolute path ("" : the nominal model); a string
                # parameter even when empty (launch_ros would read "" as YAML's nothing).
                "calibration_file": ParameterValue(LaunchConfiguration("calibration"), value_type=str),
            }
        ],
        output="screen",
    )
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "test_fault_injection",
                default_value="false",
                choices=["false", "true"],
                description="tests only: drive_node's ~/inject_fault service (faults the drill feed's drive)",
            ),
            DeclareLaunchArgument(
                "controller_rate",
                default_value=str(simulation_controller_rate()),
                description="Hz, the controller manager's update_rate on the simulated clock (default: a "
                "tenth of the drives' rate; it must divide it: drive_node runs whole plant periods "
                "per command)",
            ),
            DeclareLaunchArgument(
                "machine",
                default_value="-1",
                description="the simulated machine: the seed `quirobot calibrate --seed` draws it with; -1: "
                "the nominal machine (bringup.launch.py's machine)",
            ),
            DeclareLaunchArgument(
                "plant",
                default_value=PLANTS[0],
                choices=list(PLANTS),
                description="the simulated plant: ideal (the controller's own model) or realistic, with "
                "quirobot simulate's compensation (bringup.launch.py's plant)",
            ),
            DeclareLaunchArgument(
                "bone",
                default_value="incision",
                description="the bone in the simulated plant, thrusting on the drill tip: an incision "
                "task's (a shipped task name, or a task file: its bone at its entry; "
                "quirobot_control.simulation.simulated_backend.place_bone), none for no bone; also "
                "task_node's task, the bone model of a goal that names none",
            ),
            DeclareLaunchArgument(
                "homing",
                default_value="false",
                choices=["false", "true"],
                description="drives with incremental encoders: /quirobot/home, then /quirobot/enable",
            ),
            DeclareLaunchArgument(
                "calibration",
                default_value="",
                description="a calibration file (quirobot calibrate --output): task_node plans and "
                "drive_node measures the tip with the calibrated kinematics, and the robot description "
                "has its joint origins (default: none, the nominal model); refused before anything "
                "starts if malformed or outside the machine's tolerances",
            ),
            checked_calibration("calibration"),  # before every node: a bad file starts nothing
            bringup,
            task_node,
        ]
    )
