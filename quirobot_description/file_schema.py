"""What each key of the {value, unit, source} files may hold: its unit and its plausible range.

The one home of the schemas of every file a user writes or hands in (`USER_FILES`): the robot
parameter file, the control configuration, the task files (incision and line, arthroscopy, pin
insertion), the calibration file and the registration file. One table per file kind, read by
`sourced_yaml.SourcedReader`, the one reader of those files (each loader passes its table), and
written out as docs/parameter_files.md (`python -m quirobot_cli.parameter_reference --write`):
- a key not in its file's table is refused by name (a typo is never silently ignored);
- a number whose unit is not the expected one is converted when the file allows it (task files
  and the control configuration: "150 mm" -> 0.15 m) or refused by name (the parameter file:
  xacro reads its values raw, so a converted unit would disagree with the URDF);
- every number must lie in its key's range (inclusive): a 10 s brake time, a 10 Hz control rate
  or a mass of 5e9 kg is refused naming the key. Ranges are plausibility bounds for this robot
  (a few metres of workspace, servo motors of tens of amperes), not design limits: a value
  outside one is a typo or a wrong unit, never a design choice.

The task files' structure is bounded too (`max_items`: at most 16 bone layers and 8 no-go zones;
`max_text`: names of at most 64 printable characters on one line).

Adding a key to a file: add one line to its table here (`Expect(unit, low, high)`, or `TEXT`
for a word, flag or colour). Patterns: `*` matches one dotted segment (a joint, a motor, a
list index).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from quirobot_description.joint_names import FEED_JOINT, PRISMATIC_JOINTS, REVOLUTE_JOINTS

PI = math.pi


@dataclass(frozen=True)
class Expect:
    """A key's expected unit (None: not a number) and its plausible range (inclusive, SI units)."""

    unit: str | None
    low: float = -math.inf
    high: float = math.inf


#: A key whose value is not a {value, unit, source} number (a name, a flag, a colour, a version).
TEXT = Expect(None)


@dataclass(frozen=True)
class FileSchema:
    """The keys of one kind of file (see the module doc)."""

    kind: str  # e.g. "parameter file"
    version: int  # the schema_version the file must declare
    keys: dict[str, Expect] = field(default_factory=dict)
    convert_units: bool = True  # False: a unit other than the expected one is refused
    #: The key whose value selects a variant of the file (task files: "task") and the top-level
    #: keys each variant takes: a key of another variant is unknown in this one.
    variant_key: str | None = None
    variants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: Keys a {value, unit, source} leaf may hold besides those three; None: any (the parameter
    #: file's realistic_plant distributions, checked by their own reader).
    leaf_extras: tuple[str, ...] | None = None
    #: The file's lists (dotted keys) and their longest length: a longer list is refused naming
    #: the key and the limit (its size bounds what the planner and the control cycle do with it).
    max_items: dict[str, int] = field(default_factory=dict)
    #: characters: the longest text value (names, words), one printable line; None: no bound.
    max_text: int | None = None

    def expect(self, key: str) -> Expect | None:
        """The entry whose pattern matches dotted `key` (list indices are segments), or None."""
        parts = key.split(".")
        exact = self.keys.get(key)
        if exact is not None:
            return exact
        for pattern, expect in self.keys.items():
            segments = pattern.split(".")
            if len(segments) == len(parts) and all(
                s in ("*", p) for s, p in zip(segments, parts, strict=True)
            ):
                return expect
        return None


LINEAR, ANGULAR = "linear", "angular"


def _joint_keys(prefix: str, names: tuple[str, ...], kind: str, table: dict[str, tuple]) -> dict[str, Expect]:
    """Entries prefix.<joint>.<key> for each joint of `names`: table maps key -> (linear, angular)."""
    column = 0 if kind == LINEAR else 1
    return {
        f"{prefix}.{name}.{key}": entry[column] if isinstance(entry, tuple) else entry
        for name in names
        for key, entry in table.items()
    }


_JOINT = {
    "type": TEXT,
    "report_symbol": TEXT,
    "motor": TEXT,
    "transmission": TEXT,
    "lower": (Expect("m", -5.0, 5.0), Expect("rad", -4 * PI, 4 * PI)),
    "upper": (Expect("m", -5.0, 5.0), Expect("rad", -4 * PI, 4 * PI)),
    "velocity": (Expect("m/s", 0.0, 5.0), Expect("rad/s", 0.0, 20.0)),
    "acceleration": (Expect("m/s^2", 0.0, 100.0), Expect("rad/s^2", 0.0, 500.0)),
    "jerk": (Expect("m/s^3", 0.0, 1e4), Expect("rad/s^3", 0.0, 1e5)),
    "damping": (Expect("N*s/m", 0.0, 1e4), Expect("N*m*s/rad", 0.0, 1e3)),
    "friction": (Expect("N", 0.0, 1e3), Expect("N*m", 0.0, 100.0)),
    "soft_margin": (Expect("m", 0.0, 0.2), Expect("rad", 0.0, 0.5)),
    "k_position": Expect("1/s", 0.0, 1e4),
    "k_velocity": (Expect("N*s/m", 0.0, 1e7), Expect("N*m*s/rad", 0.0, 1e6)),
}

#: The axes moving along a line: the gantry and the drill's feed.
_LINEAR_AXES = (*PRISMATIC_JOINTS, FEED_JOINT)
#: CiA 402 homing (0x6098 method, 0x6099 speeds, 0x609A acceleration, 0x607C offset) of one axis.
_HOMING = {
    "method": Expect("1", -4.0, 37.0),  # the reader accepts the limit-switch methods 17 and 18
    "switch_position": (Expect("m", -5.0, 5.0), Expect("rad", -4 * PI, 4 * PI)),
    "switch_speed": (Expect("m/s", 0.0, 1.0), Expect("rad/s", 0.0, 5.0)),
    "zero_speed": (Expect("m/s", 0.0, 1.0), Expect("rad/s", 0.0, 5.0)),
    "acceleration": (Expect("m/s^2", 0.0, 50.0), Expect("rad/s^2", 0.0, 100.0)),
    "home_offset": (Expect("m", -5.0, 5.0), Expect("rad", -4 * PI, 4 * PI)),
}
_DENSITY = Expect("kg/m^3", 100.0, 25000.0)
#: A fraction the parameter reader checks to be in (0, 1] with its own message; this bound only
#: catches a wrong scale (a percentage).
_FRACTION = Expect("1", -10.0, 10.0)
_MASS = Expect("kg", 0.0, 200.0)

#: The geometric_errors section's keys (quirobot_description.geometric_errors.GeometricErrors).
_GEOMETRIC_ANGLES = (
    "xy_squareness",
    "z_tilt_x",
    "z_tilt_y",
    "wrist_yaw_tilt_x",
    "wrist_yaw_tilt_y",
    "wrist_pitch_tilt_x",
    "wrist_pitch_tilt_z",
)
_GEOMETRIC_LENGTHS = (
    "x_straightness_y",
    "x_straightness_z",
    "y_straightness_x",
    "y_straightness_z",
    "z_straightness_x",
    "z_straightness_y",
    "wrist_yaw_offset_x",
    "wrist_yaw_offset_y",
    "wrist_pitch_offset_x",
    "l4_error",
    "l5_error",
    "tcp_offset_x",
    "tcp_offset_y",
    "tcp_offset_z",
)

PARAMETER_FILE = FileSchema(
    "parameter file",
    1,
    {
        "schema_version": TEXT,
        "gravity": Expect("m/s^2", 9.7, 9.9),
        "kinematics.*": Expect("m", 0.0, 2.0),
        **_joint_keys("joints", PRISMATIC_JOINTS, LINEAR, _JOINT),
        **_joint_keys("joints", REVOLUTE_JOINTS, ANGULAR, _JOINT),
        "links.*.description": TEXT,
        "links.*.shape": TEXT,
        "links.*.colour": TEXT,
        "links.*.axis": TEXT,
        "links.*.size": Expect("m", 0.0, 5.0),
        "links.*.origin": Expect("m", -5.0, 5.0),
        "links.*.mass": _MASS,
        "links.*.radius": Expect("m", 0.0, 1.0),
        "links.*.length": Expect("m", 0.0, 5.0),
        "structure.guide_section": Expect("m", 0.0, 1.0),
        "structure.guide_margin": Expect("m", 0.0, 2.0),
        "structure.ceiling_height": Expect("m", 0.0, 5.0),
        "structure.mount_height": Expect("m", 0.0, 10.0),
        "structure.density": _DENSITY,
        "structure.section_fill": _FRACTION,
        "structure.colour": TEXT,
        "meshes.circle_segments": Expect("1", 8.0, 256.0),
        "meshes.bit_point_angle": Expect("rad", 0.0, PI),
        **{
            f"meshes.{name}": Expect("m", 0.0, 1.0)
            for name in (
                "profile_slot_width",
                "profile_slot_depth",
                "fork_length",
                "fork_clearance",
                "housing_nose_length",
                "housing_nose_radius",
                "spindle_radius",
                "chuck_length",
                "scope_head_radius",
                "scope_head_length",
                "light_post_radius",
                "light_post_length",
            )
        },
        "motors.*.description": TEXT,
        "motors.*.resistance": Expect("ohm", 0.0, 100.0),
        "motors.*.inductance": Expect("H", 0.0, 1.0),
        "motors.*.torque_constant": Expect("N*m/A", 0.0, 10.0),
        "motors.*.back_emf_constant": Expect("V*s/rad", 0.0, 10.0),
        "motors.*.max_current": Expect("A", 0.0, 500.0),
        "motors.*.continuous_current": Expect("A", 0.0, 500.0),
        "motors.*.rotor_inertia": Expect("kg*m^2", 0.0, 1.0),
        "motors.*.max_speed": Expect("rad/s", 0.0, 5000.0),
        "transmissions.*.type": TEXT,
        "transmissions.gantry_x_screw.ratio": Expect("rad/m", 0.0, 1e5),
        "transmissions.gantry_y_screw.ratio": Expect("rad/m", 0.0, 1e5),
        "transmissions.gantry_z_screw.ratio": Expect("rad/m", 0.0, 1e5),
        "transmissions.drill_feed_screw.ratio": Expect("rad/m", 0.0, 1e5),
        "transmissions.wrist_yaw_gearbox.ratio": Expect("1", 0.0, 1e4),
        "transmissions.wrist_pitch_gearbox.ratio": Expect("1", 0.0, 1e4),
        "transmissions.*.efficiency": _FRACTION,
        "drive.bus_voltage": Expect("V", 0.0, 1000.0),
        "drive.voltage_headroom": _FRACTION,
        "drive.current_loop_bandwidth": Expect("rad/s", 100.0, 1e5),
        "drive.current_loop_rate": Expect("Hz", 1e3, 1e6),
        "drive.encoder_counts_per_rev": Expect("counts/rev", 1.0, 2.0**32),
        "drive.control_rate": Expect("Hz", 100.0, 1e5),
        "drive.brake_engage_time": Expect("s", 0.0, 0.5),
        "drive.brake_holding_ratio": Expect("1", 0.0, 10.0),
        **{f"drive.quick_stop_deceleration.{n}": Expect("m/s^2", 0.0, 200.0) for n in _LINEAR_AXES},
        **{f"drive.quick_stop_deceleration.{n}": Expect("rad/s^2", 0.0, 1000.0) for n in REVOLUTE_JOINTS},
        "drive.master_timeout": Expect("s", 1e-4, 1.0),
        "homing.order": TEXT,
        **_joint_keys("homing", _LINEAR_AXES, LINEAR, _HOMING),
        **_joint_keys("homing", REVOLUTE_JOINTS, ANGULAR, _HOMING),
        "canopen.bitrate": Expect("bit/s", 1e4, 1e6),
        "canopen.sync_period": Expect("s", 1e-4, 0.1),
        "canopen.feedback_timeout_periods": Expect("1", 1.0, 1000.0),
        "canopen.transition_timeout": Expect("s", 0.0, 10.0),
        "canopen.master_node_id": Expect("1", 1.0, 127.0),
        "canopen.heartbeat_period": Expect("s", 1e-4, 1.0),
        "canopen.sync_loss_periods": Expect("1", 1.0, 1000.0),
        "canopen.node_ids.*": Expect("1", 1.0, 127.0),
        "canopen.channels.*": TEXT,
        "tools.drill.feed_lower": Expect("m", -0.5, 0.5),
        "tools.drill.feed_upper": Expect("m", -0.5, 0.5),
        "tools.drill.feed_velocity": Expect("m/s", 0.0, 1.0),
        "tools.drill.feed_acceleration": Expect("m/s^2", 0.0, 100.0),
        "tools.drill.feed_jerk": Expect("m/s^3", 0.0, 1e4),
        "tools.drill.feed_effort": Expect("N", 0.0, 1e4),
        "tools.drill.feed_damping": Expect("N*s/m", 0.0, 1e4),
        "tools.drill.feed_friction": Expect("N", 0.0, 1e3),
        "tools.drill.feed_soft_margin": Expect("m", 0.0, 0.1),
        "tools.drill.feed_k_position": Expect("1/s", 0.0, 1e4),
        "tools.drill.feed_k_velocity": Expect("N*s/m", 0.0, 1e7),
        "tools.drill.spindle_speed": Expect("rad/s", 0.0, 1e4),
        "tools.drill.spindle_max_torque": Expect("N*m", 0.0, 100.0),
        "tools.drill.spindle_inertia": Expect("kg*m^2", 0.0, 1.0),
        "tools.drill.spindle_speed_time_constant": Expect("s", 1e-4, 10.0),
        "tools.drill.spindle_torque_per_thrust": Expect("m", 0.0, 0.1),
        "tools.drill.spindle_at_speed_fraction": Expect("1", 0.0, 1.0),
        "tools.drill.spindle_stall_fraction": Expect("1", 0.0, 1.0),
        "tools.drill.spindle_stall_time": Expect("s", 1e-4, 10.0),
        "tools.drill.thrust_limit": Expect("N", 0.0, 1e4),
        "tools.drill.thrust_filter_time": Expect("s", 1e-4, 1.0),
        "tools.drill.breakthrough_drop": Expect("1", 0.0, 1.0),
        "tools.drill.breakthrough_min_thrust": Expect("N", 0.0, 1e3),
        "tools.drill.breakthrough_arm_margin": Expect("m", 0.0, 0.1),
        "tools.drill.breakthrough_exit_tolerance": Expect("m", 0.0, 0.1),
        "tools.drill.breakthrough_peak_time": Expect("s", 1e-4, 10.0),
        "tools.drill.breakthrough_limit": Expect("m", 0.0, 0.01),
        "tools.drill.bit_radius": Expect("m", 0.0, 0.1),
        "tools.drill.bit_length": Expect("m", 0.0, 1.0),
        "tools.drill.density": _DENSITY,
        "tools.drill.motor": TEXT,
        "tools.drill.transmission": TEXT,
        "tools.drill.colour": TEXT,
        "tools.arthroscope.scope_radius": Expect("m", 0.0, 0.1),
        "tools.arthroscope.scope_length": Expect("m", 0.0, 1.0),
        "tools.arthroscope.density": _DENSITY,
        "tools.arthroscope.field_of_view": Expect("rad", 0.0, PI),
        "tools.arthroscope.colour": TEXT,
        "report_model.gravity": Expect("m/s^2", 9.7, 9.9),
        "report_model.carriage_mass": _MASS,
        "report_model.link4_mass": _MASS,
        "report_model.link5_mass": _MASS,
        "report_model.link4_radius": Expect("m", 0.0, 1.0),
        "report_model.link5_radius": Expect("m", 0.0, 1.0),
        "report_model.inertia_formula": TEXT,
        "report_model.prismatic_damping": Expect("N*s/m", 0.0, 1e4),
        "report_model.revolute_damping": Expect("N*m*s/rad", 0.0, 1e3),
        "report_model.transmission_efficiency": Expect("1", 0.0, 1.0),
        "sizing.acceleration_time": Expect("s", 0.0, 100.0),
        "sizing.cruise_time": Expect("s", 0.0, 100.0),
        "sizing.deceleration_time": Expect("s", 0.0, 100.0),
        "sizing.dwell_time": Expect("s", 0.0, 100.0),
        "sizing.safety_factor": Expect("1", 0.0, 10.0),  # the reader refuses < 1 with its reason
        "sizing.search_poses": Expect("1", 1.0, 20000.0),  # the CLI bounds --poses alike
        # The realistic plant (quirobot_description.plant_parameters); a leaf's distribution is
        # checked by that reader.
        "realistic_plant.wrist_gear_stiffness": Expect("N*m/rad", 0.0, 1e8),
        "realistic_plant.wrist_gear_backlash": Expect("rad", 0.0, 0.1),
        "realistic_plant.wrist_gear_damping_ratio": Expect("1", 0.0, 2.0),
        "realistic_plant.wrist_coulomb_friction": Expect("N*m", 0.0, 100.0),
        "realistic_plant.wrist_output_friction": Expect("N*m", 0.0, 100.0),
        "realistic_plant.wrist_viscous_friction": Expect("N*m*s/rad", 0.0, 1e3),
        "realistic_plant.screw_axial_stiffness": Expect("N/m", 0.0, 1e11),
        "realistic_plant.gantry_coulomb_friction": Expect("N", 0.0, 1e3),
        "realistic_plant.gantry_viscous_friction": Expect("N*s/m", 0.0, 1e4),
        "realistic_plant.actuation_delay": Expect("s", 0.0, 0.1),
        "realistic_plant.encoder_noise": Expect("counts", 0.0, 1e3),
        "realistic_plant.load_encoder_counts_per_rev": Expect("counts/rev", 1.0, 2.0**32),
        "realistic_plant.ram_section_side": Expect("m", 0.0, 1.0),
        "realistic_plant.ram_wall_thickness": Expect("m", 0.0, 0.5),
        "realistic_plant.ram_free_length": Expect("m", 0.0, 5.0),
        "realistic_plant.ram_youngs_modulus": Expect("Pa", 1e8, 1e12),
        "realistic_plant.ram_modal_mass": _MASS,
        "realistic_plant.ram_damping_ratio": Expect("1", 0.0, 2.0),
        "realistic_plant.bit_diameter": Expect("m", 0.0, 0.1),
        "realistic_plant.bit_free_length": Expect("m", 0.0, 1.0),
        "realistic_plant.bit_youngs_modulus": Expect("Pa", 1e8, 1e12),
        "realistic_plant.skiving_coefficient": Expect("1", 0.0, 10.0),
        "realistic_plant.spindle_speed": Expect("rad/s", 0.0, 1e4),
        "realistic_plant.regenerative_stiffness": Expect("N/m", 0.0, 1e11),
        # The machine's geometric errors (quirobot_description.geometric_errors): tolerances, the
        # distribution checked by that reader. Angles up to 0.1 rad, lengths up to 10 mm.
        **{f"geometric_errors.{name}": Expect("rad", 0.0, 0.1) for name in _GEOMETRIC_ANGLES},
        **{f"geometric_errors.{name}": Expect("m", 0.0, 0.01) for name in _GEOMETRIC_LENGTHS},
        # The calibration campaign (quirobot_kinematics.calibration).
        "calibration.optical_tracker_noise": Expect("m", 0.0, 0.01),
        "calibration.laser_tracker_noise": Expect("m", 0.0, 0.01),
        "calibration.poses": Expect("1", 6.0, 1000.0),
        "calibration.candidate_poses": Expect("1", 6.0, 100000.0),
        "calibration.pivot_poses": Expect("1", 3.0, 1000.0),
        "calibration.pivot_tilt": Expect("rad", 0.0, 1.5),
        "calibration.pivot_seating_noise": Expect("m", 0.0, 0.01),
        # Patient registration (quirobot_kinematics.registration).
        "registration.fiducials": Expect("1", 3.0, 100.0),
        "registration.fiducial_radius": Expect("m", 0.0, 1.0),
        "registration.fiducial_height": Expect("m", 0.0, 1.0),
        "registration.target_depth": Expect("m", 0.0, 1.0),
        "registration.fiducial_localization_error": Expect("m", 0.0, 0.01),
        "registration.patient_rotation": Expect("rad", 0.0, 3.15),
        "registration.max_predicted_tre": Expect("m", 0.0, 0.01),
        "registration.max_rotation_error": Expect("rad", 0.0, 0.2),
    },
    convert_units=False,
)

_GAINS = {
    "effective_inertia": (Expect("kg", 0.0, 1e4), Expect("kg*m^2", 0.0, 100.0)),
    "kp": (Expect("A/m", 0.0, 1e9), Expect("A/rad", 0.0, 1e9)),
    "ki": (Expect("A/(m*s)", 0.0, 1e12), Expect("A/(rad*s)", 0.0, 1e12)),
    "kd": (Expect("A*s/m", 0.0, 1e7), Expect("A*s/rad", 0.0, 1e7)),
    "following_error": (Expect("m", 0.0, 0.5), Expect("rad", 0.0, 1.0)),
    "path_tolerance": (Expect("m", 0.0, 0.5), Expect("rad", 0.0, 1.0)),
    "takeover_tolerance": (Expect("m", 0.0, 0.01), Expect("rad", 0.0, 0.1)),
}

CONTROL_FILE = FileSchema(
    "control configuration",
    1,
    {
        "schema_version": TEXT,
        "physics_substeps": Expect("1", 1.0, 100.0),
        "feedforward.gravity": TEXT,
        "feedforward.inverse_dynamics": TEXT,
        "drive_mode.*.value": TEXT,  # csp or cst (hardware.control_config)
        "drive_mode.*.source": TEXT,
        "pole_placement.bandwidth": Expect("rad/s", 0.0, 1e4),
        "pole_placement.integral_ratio": Expect("1", 0.0, 10.0),
        "pole_placement.derivative_filter": Expect("s", 0.0, 1.0),
        **_joint_keys("joints", (*PRISMATIC_JOINTS, FEED_JOINT), LINEAR, _GAINS),
        **_joint_keys("joints", REVOLUTE_JOINTS, ANGULAR, _GAINS),
        "safety.watchdog_timeout": Expect("s", 0.0, 10.0),
        "safety.watchdog_stop_timeout": Expect("s", 0.0, 10.0),
        "safety.watchdog_startup_timeout": Expect("s", 0.0, 600.0),
        "safety.overspeed_ratio": Expect("1", 1.0, 10.0),
    },
)

_POSE = Expect("m, m, m, rad, rad, m", -10.0, 10.0)

TASK_FILE = FileSchema(
    "task file",
    1,
    {
        "schema_version": TEXT,
        "task": TEXT,
        "entry": Expect("m", -5.0, 5.0),
        "direction": Expect("1", -10.0, 10.0),  # the reader refuses a non-unit vector
        "depth": Expect("m", 0.0, 0.2),
        "feed_rate": Expect("m/s", 1e-4, 0.1),
        "feed_acceleration": Expect("m/s^2", 0.0, 10.0),
        "feed_jerk": Expect("m/s^3", 0.0, 1e3),
        "standoff": Expect("m", 0.0, 0.5),
        "approach_distance": Expect("m", 0.0, 1.0),
        "dwell": Expect("s", 0.0, 60.0),
        "retract_rate": Expect("m/s", 1e-4, 1.0),
        "park": _POSE,
        "start": _POSE,
        "end": Expect("m", -5.0, 5.0),
        "settle": Expect("s", 0.0, 60.0),
        "line.speed": Expect("m/s", 1e-4, 5.0),
        "line.acceleration": Expect("m/s^2", 0.0, 100.0),
        "line.jerk": Expect("m/s^3", 0.0, 1e4),
        "bone.layers.*.name": TEXT,
        "bone.layers.*.thickness": Expect("m", 0.0, 0.1),
        "bone.layers.*.thrust_factor": Expect("1", 0.0, 100.0),
        "bone.reference_thrust": Expect("N", 0.0, 1e4),
        "bone.reference_feed_rate": Expect("m/s", 0.0, 1.0),
        "bone.feed_rate_exponent": Expect("1", 0.0, 5.0),
        "bone.point_length": Expect("m", 0.0, 0.1),
        "bone.time_constant": Expect("s", 0.0, 10.0),
        # Virtual fixtures (quirobot_control.axes.virtual_fixtures), world frame.
        "no_go_zones.*.name": TEXT,
        "no_go_zones.*.shape": TEXT,  # box or capsule
        "no_go_zones.*.center": Expect("m", -5.0, 5.0),
        "no_go_zones.*.size": Expect("m", 0.0, 10.0),
        "no_go_zones.*.rpy": Expect("rad", -2 * PI, 2 * PI),
        "no_go_zones.*.start": Expect("m", -5.0, 5.0),
        "no_go_zones.*.end": Expect("m", -5.0, 5.0),
        "no_go_zones.*.radius": Expect("m", 0.0, 5.0),
        "entry_speed_limit.radius": Expect("m", 0.0, 1.0),
        "entry_speed_limit.speed": Expect("m/s", 1e-4, 1.0),
    },
    variant_key="task",
    variants={
        "incision": (
            *("task", "entry", "direction", "depth", "feed_rate", "feed_acceleration", "feed_jerk"),
            *("standoff", "approach_distance", "dwell", "retract_rate", "park", "line", "bone"),
            *("no_go_zones", "entry_speed_limit", "schema_version"),
        ),
        "line": ("task", "start", "end", "line", "settle", "no_go_zones", "schema_version"),
    },
    leaf_extras=(),
    # Design assumptions. A bone along one drilling axis is a few layers (near cortex, canal, far
    # cortex; a second bone behind a gap: 7 with the gaps): 16 leave room, and the bone model and
    # its thrust prediction sum over every layer at every sample. A surgeon draws a handful of
    # no-go zones (table, the other limb, a tray, an implant): each adds nine segment tests to
    # every 1 ms cycle of the hardware component (three tool parts at the commanded, measured and
    # stopping poses, axes.virtual_fixtures), about 0.1 ms per zone measured on a loaded
    # 2-core machine: 8 zones.
    max_items={"bone.layers": 16, "no_go_zones": 8},
    # Names appear in every refusal and stop reason, which stay one short line.
    max_text=64,
)

#: The arthroscopy task file (planning.arthroscopy): its own table, so that a new procedure
#: leaves TASK_FILE alone; its no-go zones are the task file's.
ARTHROSCOPY_FILE = FileSchema(
    "arthroscopy task file",
    1,
    {
        "schema_version": TEXT,
        "task": TEXT,
        "portal": Expect("m", -5.0, 5.0),
        "direction": Expect("1", -10.0, 10.0),
        "depth": Expect("m", 0.0, 0.5),
        "min_depth": Expect("m", 0.0, 0.5),
        "max_depth": Expect("m", 0.0, 0.5),
        "cone_half_angle": Expect("rad", 0.0, 1.5707963267948966),
        "tip_speed": Expect("m/s", 1e-4, 0.5),
        "pivot_rate": Expect("rad/s", 1e-3, 5.0),
        "timeout": Expect("s", 1e-3, 10.0),
        "joint_state_timeout": Expect("s", 1e-3, 10.0),
        "servo_rate": Expect("1/s", 1.0, 1e4),
        "settle": Expect("s", 0.0, 60.0),
        "servo.*.duration": Expect("s", 0.0, 60.0),
        "servo.*.linear": Expect("m/s", -1.0, 1.0),
        "servo.*.angular": Expect("rad/s", -5.0, 5.0),
        "servo.*.send": TEXT,
        **{key: value for key, value in TASK_FILE.keys.items() if key.startswith("no_go_zones")},
    },
    leaf_extras=(),
    max_items={"servo": 64, "no_go_zones": 8},
    max_text=64,
)

#: The Schanz-pin insertion task file (simulation.pin_procedure).
PIN_FILE = FileSchema(
    "pin task file",
    1,
    {
        "schema_version": TEXT,
        "task": TEXT,
        "depth": Expect("m", 0.0, 0.2),
        "pitch": Expect("m", 1e-4, 0.01),
        "diameter": Expect("m", 1e-3, 0.02),
        "speed": Expect("rad/s", 0.1, 200.0),
        "approach_rate": Expect("1/s", 0.1, 1e3),
        "torque_limit": Expect("N*m", 0.0, 100.0),
        "driver_max_torque": Expect("N*m", 0.0, 100.0),
        "bone_factor": Expect("1", 0.0, 100.0),
        "protrusion_limit": Expect("m", 0.0, 0.01),
        "layers.*.name": TEXT,
        "layers.*.thickness": Expect("m", 0.0, 0.1),
        "layers.*.torque_per_length": Expect("N*m/m", 0.0, 1e5),
    },
    leaf_extras=(),
    max_items={"layers": 16},
    max_text=64,
)

#: The calibration file (`quirobot calibrate --output`, geometric_errors.read_calibration): one
#: machine's identified geometric errors, signed. Their ranges are the parameter file's largest
#: tolerance bands; the reader's own check is tighter, each value within the file's band. Version 2
#: names the machine: its drives' serial numbers (machine_identity: CiA 301 0x1018:04, UNSIGNED32).
CALIBRATION_FILE = FileSchema(
    "calibration file",
    2,
    {
        "schema_version": TEXT,
        "machine.drive_serial_numbers.*": Expect("1", 0.0, 4294967295.0),
        **{f"geometric_errors.{name}": Expect("rad", -0.1, 0.1) for name in _GEOMETRIC_ANGLES},
        **{f"geometric_errors.{name}": Expect("m", -0.01, 0.01) for name in _GEOMETRIC_LENGTHS},
    },
    convert_units=False,
    leaf_extras=(),
)

#: The registration file (`quirobot register --output`, quirobot_kinematics.registration): the
#: patient frame in the world, a translation and a unit quaternion (x, y, z, w; the reader checks
#: its norm). Translations within the workspace's few metres, like a task file's poses.
REGISTRATION_FILE = FileSchema(
    "registration file",
    1,
    {
        "schema_version": TEXT,
        "parent_frame": TEXT,
        "child_frame": TEXT,
        "transform.translation": Expect("m", -10.0, 10.0),
        "transform.rotation": Expect("1", -1.0 - 1e-3, 1.0 + 1e-3),
    },
    convert_units=False,
    leaf_extras=(),
)

#: Every file a user writes or hands in, in the order of docs/parameter_files.md.
USER_FILES = (
    PARAMETER_FILE,
    CONTROL_FILE,
    TASK_FILE,
    ARTHROSCOPY_FILE,
    PIN_FILE,
    CALIBRATION_FILE,
    REGISTRATION_FILE,
)
