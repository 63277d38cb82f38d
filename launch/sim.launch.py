"""The whole stack in simulation, driven from another node through the task-level API.

    ros2 launch quirobot sim.launch.py [test_fault_injection:=false|true] [homing:=false|true]
        [controller_rate:=HZ]  (bringup.launch.py's: the controller manager's update_rate)
        [plant:=ideal|realistic]  (the simulated plant; realistic with quirobot simulate's compensation)

bringup.launch.py hardware:=real tool:=drill drive_backend:=simulated simulated_bone:=incision
sim_clock:=true (the simulated plant's time is the ROS time, task_node uses it too)
(ros2_control_node with joint_state_topic_hardware_interface, the trajectory controllers,
robot_state_publisher, drive_node's SimulatedDrives on the MuJoCo plant with the shipped
incision's bone thrusting on the drill tip) plus `task_node`: the /quirobot/drill_hole action,
/quirobot/state and the enable, disable and reset_fault services, and the registered `patient`
frame (config/registration.yaml on /tf_static) goals may be given in
(docs/drive_from_another_node.md).
"""

# ruff: noqa: I001  (the repository's launch/ folder makes isort take ROS's `launch` for first-party)
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from quirobot_description.plant_parameters import PLANTS


def generate_launch_description() -> LaunchDescription:
    bringup = IncludeLaunchDescription(
        PythonLaunchDescriptionSource(
            PathJoinSubstitution([FindPackageShare("quirobot"), "launch", "bringup.launch.py"])
        ),
        launch_arguments={
            "hardware": "real",
            "tool": "drill",
            "drive_backend": "simulated",
            "simulated_bone": "incision",
            "sim_clock": "true",
            "test_fault_injection": LaunchConfiguration("test_fault_injection"),
            "homing": LaunchConfiguration("homing"),
            "plant": LaunchConfiguration("plant"),
        }.items(),
    )
    task_node = Node(
        package="quirobot",
        executable="task_node",
        # The plant's clock, in lock-step with the controller manager (bridge.lockstep): the joint
        # states reach the controllers one or two periods (1-2 ms of plant time) after they were
        # measured, whatever the load. What tracking_lag must cover is the drives' own following
        # error on the ROS path (no feed-forward): 40 ms (20 ms let gantry_z reach 1.025 mm against
        # its 1 mm path tolerance in the approach, 10 ms the feed's retract its 0.2 mm).
        # start_delay 4 s of plant time for the controllers to accept both goals (1 s was too
        # short in the load test: an action round trip takes seconds of wall time under load).
        # registration_file: the patient frame (world -> patient on /tf_static) DrillHole goals may
        # use; config/registration.yaml is `quirobot register --seed 1 --output` (a simulated
        # registration at the shipped incision's entry, its rotation 27 deg: a test fixture).
        parameters=[
            {
                "use_sim_time": True,
                "tracking_lag": 0.04,
                "start_delay": 4.0,
                "task": "incision",
                "registration_file": PathJoinSubstitution(
                    [FindPackageShare("quirobot"), "config", "registration.yaml"]
                ),
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
                "plant",
                default_value=PLANTS[0],
                choices=list(PLANTS),
                description="the simulated plant: ideal (the controller's own model) or realistic, with "
                "quirobot simulate's compensation (bringup.launch.py's plant)",
            ),
            DeclareLaunchArgument(
                "homing",
                default_value="false",
                choices=["false", "true"],
                description="drives with incremental encoders: /quirobot/home, then /quirobot/enable",
            ),
            bringup,
            task_node,
        ]
    )
