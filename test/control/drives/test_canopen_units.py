"""CANopen drive pieces without a bus: EDS validity, CiA 402 tables, unit conversions, bus load.

Independent references: the CiA 402 statusword and transition tables as the `canopen` library
encodes them (canopen.profiles.p402.State402), the report's motor table (K_T, I_max) and
transmission ratios, CiA 306 rules for the EDS, the CAN 2.0A frame layout.
"""

from __future__ import annotations

import configparser
import math

import canopen
import pytest
import yaml
from canopen.objectdictionary import INTEGER8, INTEGER16, INTEGER32, REAL32, UNSIGNED16, UNSIGNED32
from canopen.profiles.p402 import State402
from hypothesis import given
from hypothesis import strategies as st

from quirobot_control.drive_simulators.canopen_slave.joint_model import JointModel
from quirobot_control.drive_simulators.canopen_slave.profile import next_state, statusword_for
from quirobot_control.drives.bus_load import bus_load, can_frame_bits
from quirobot_control.drives.canopen_units import TorqueScaling
from quirobot_control.drives.cia402 import (
    DEFAULT_EDS,
    POSITION_CONTROL_SUBINDICES,
    RPDO1_MAPPING,
    RPDO2_MAPPING,
    TPDO1_MAPPING,
    TPDO2_MAPPING,
    Cia402State,
    StatuswordError,
    decode_statusword,
    describe_error_code,
)
from quirobot_description.parameters import DEFAULT_PARAMETER_FILE, ParameterError, axes_for, load_parameters

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

pytestmark = pytest.mark.canbus

# canopen's p402 state names -> ours
P402_NAMES = {state.value.upper(): state for state in Cia402State}


# --- the EDS ----------------------------------------------------------------------------------------
def eds_sections() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=True)
    parser.optionxform = str  # keys are case-sensitive in CiA 306 tools
    parser.read(DEFAULT_EDS)
    return parser


def test_eds_lists_exactly_the_objects_it_describes():
    """CiA 306: every object section is listed in Mandatory/Optional/ManufacturerObjects and vice versa."""
    eds = eds_sections()
    for section in ("FileInfo", "DeviceInfo", "MandatoryObjects", "OptionalObjects", "ManufacturerObjects"):
        assert eds.has_section(section), section
    listed = set()
    for group in ("MandatoryObjects", "OptionalObjects", "ManufacturerObjects"):
        count = int(eds[group]["SupportedObjects"])
        entries = [int(eds[group][str(i)], 0) for i in range(1, count + 1)]
        assert len(set(entries)) == count
        listed |= set(entries)
    described = {
        int(s, 16) for s in eds.sections() if len(s) == 4 and all(c in "0123456789ABCDEF" for c in s)
    }
    assert listed == described
    assert {0x1000, 0x1001, 0x1018} <= {int(eds["MandatoryObjects"][k], 0) for k in ("1", "2", "3")}
    for index in described:
        section = eds[f"{index:04X}"]
        if int(section["ObjectType"], 0) in (0x8, 0x9):  # array / record: SubNumber sub-sections
            subs = [s for s in eds.sections() if s.startswith(f"{index:04X}sub")]
            assert len(subs) == int(section["SubNumber"]), index
            assert int(eds[f"{index:04X}sub0"]["DefaultValue"], 0) == len(subs) - 1
    info = eds["DeviceInfo"]
    assert int(info["NrOfRXPDO"]) == 2 and int(info["NrOfTXPDO"]) == 2
    assert info["BaudRate_1000"] == "1"  # the parameter file's bit rate


# CiA 402 object definitions: index -> (data type, access, PDO-mappable).
CIA402_OBJECTS = {
    0x603F: (UNSIGNED16, "ro", True),
    0x6040: (UNSIGNED16, "rw", True),
    0x6041: (UNSIGNED16, "ro", True),
    0x605A: (INTEGER16, "rw", False),
    0x6060: (INTEGER8, "rw", True),
    0x6061: (INTEGER8, "ro", True),
    0x6064: (INTEGER32, "ro", True),
    0x606C: (INTEGER32, "ro", True),
    0x6071: (INTEGER16, "rw", True),
    0x6075: (UNSIGNED32, "rw", False),
    0x6076: (UNSIGNED32, "rw", False),
    0x6078: (INTEGER16, "ro", True),
    0x6007: (INTEGER16, "rw", False),
    0x607A: (INTEGER32, "rw", True),
    0x607C: (INTEGER32, "rw", False),
    0x6085: (UNSIGNED32, "rw", False),
    0x6098: (INTEGER8, "rw", False),
    0x609A: (UNSIGNED32, "rw", False),
    0x60B1: (INTEGER32, "rw", True),
    0x60B2: (INTEGER16, "rw", True),
}


def test_eds_objects_have_the_cia402_types_and_pdo_mapping():
    od = canopen.import_od(str(DEFAULT_EDS), 5)
    assert od[0x1000].default == 0x00020192  # device profile 402, servo drive
    for index, (data_type, access, mappable) in CIA402_OBJECTS.items():
        entry = od[index]
        assert entry.data_type == data_type, hex(index)
        assert entry.access_type == access, hex(index)
        assert entry.pdo_mappable == mappable, hex(index)
    assert od[0x608F][1].data_type == UNSIGNED32 and od[0x608F][2].data_type == UNSIGNED32
    assert od[0x6099][1].data_type == UNSIGNED32 and od[0x6099][2].data_type == UNSIGNED32
    assert od[0x1016][1].data_type == UNSIGNED32  # CiA 301: node id << 16 | time in ms
    # 0x60FB: one REAL32 per field of the project's PIDGains, in SI units.
    assert set(POSITION_CONTROL_SUBINDICES) == {"kp", "ki", "kd", "derivative_filter", "output_limit"}
    assert all(od[0x60FB][sub].data_type == REAL32 for sub in POSITION_CONTROL_SUBINDICES.values())
    # Default PDO COB-IDs follow the CiA 301 predefined connection set for node 5.
    assert od[0x1400][1].default == 0x205 and od[0x1401][1].default == 0x305
    assert od[0x1800][1].default == 0x185 and od[0x1801][1].default == 0x285
    # The default mapping entries are the ones the master configures: index << 16 | bits.
    for record, mapping in (
        (0x1600, RPDO1_MAPPING),
        (0x1601, RPDO2_MAPPING),
        (0x1A00, TPDO1_MAPPING),
        (0x1A01, TPDO2_MAPPING),
    ):
        assert od[record][0].default == len(mapping)
        for sub, (index, bits) in enumerate(mapping, start=1):
            assert od[record][sub].default == index << 16 | bits
            assert len(od[index]) == bits  # the mapped length is the object's own size
    for pdo_mapping in (RPDO1_MAPPING, RPDO2_MAPPING, TPDO1_MAPPING, TPDO2_MAPPING):
        assert sum(bits for _, bits in pdo_mapping) <= 64


# --- CiA 402 state machine -------------------------------------------------------------------------
def p402_state(statusword: int) -> Cia402State | None:
    for name, (mask, value) in State402.SW_MASK.items():
        if statusword & mask == value:
            return P402_NAMES[name]
    return None


def test_statusword_decoding_agrees_with_the_p402_table_for_every_statusword():
    for statusword in range(0x10000):
        expected = p402_state(statusword)
        if expected is None:
            with pytest.raises(StatuswordError, match=f"0x{statusword:04X}"):
                decode_statusword(statusword)
        else:
            assert decode_statusword(statusword) is expected, hex(statusword)


@pytest.mark.parametrize("state", list(Cia402State))
def test_simulator_statusword_reports_its_state(state):
    assert p402_state(statusword_for(state)) is state


@pytest.mark.parametrize(
    ("source", "target", "controlword"),
    [
        (P402_NAMES[a], P402_NAMES[b], cw)
        for (a, b), cw in State402.TRANSITIONTABLE.items()
        if a in P402_NAMES and a not in ("NOT READY TO SWITCH ON", "FAULT REACTION ACTIVE")
    ],
)
def test_simulator_transitions_follow_the_p402_controlwords(source, target, controlword):
    assert next_state(source, controlword, previous_controlword=0) is target


def test_fault_reset_needs_a_rising_edge_and_other_states_ignore_bit_7():
    assert next_state(Cia402State.FAULT, 0x80, previous_controlword=0x80) is Cia402State.FAULT
    assert next_state(Cia402State.FAULT, 0x0F, previous_controlword=0) is Cia402State.FAULT
    assert next_state(Cia402State.OPERATION_ENABLED, 0x8F, 0) is Cia402State.OPERATION_ENABLED
    # CiA 402 transitions 3 + 4: "enable operation" from Ready to switch on goes straight through.
    assert next_state(Cia402State.READY_TO_SWITCH_ON, 0x0F, 0x06) is Cia402State.OPERATION_ENABLED
    # Quick stop from Switched on / Ready to switch on disables (transitions 7 and 10).
    assert next_state(Cia402State.SWITCHED_ON, 0x02, 0x07) is Cia402State.SWITCH_ON_DISABLED
    assert next_state(Cia402State.READY_TO_SWITCH_ON, 0x02, 0x06) is Cia402State.SWITCH_ON_DISABLED


def test_error_codes_are_described():
    assert describe_error_code(0x2310) == "error code 0x2310: continuous over-current"
    assert describe_error_code(0x8611).endswith("following error")
    # Not in our table: the CiA 301 error class.
    assert describe_error_code(0x3333) == "error code 0x3333: voltage"


# --- units -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def params():
    return load_parameters()


def test_rated_values_are_the_continuous_rating_in_drive_units(params):
    # Report ch.6 motor table: K_T = 0.155 N*m/A (gantry), 0.035 N*m/A (wrist); the parameter
    # file's continuous current is one third of I_max (38.7 A, 3.6 A).
    gantry = TorqueScaling.for_motor(params.motors["gantry_motor"])
    assert gantry.rated_current_milliamps == 12900
    assert gantry.rated_torque_millinewton_metres == 2000  # 0.155 * 12.9 = 1.9995 N*m, whole mN*m
    wrist = TorqueScaling.for_motor(params.motors["wrist_motor"])
    assert wrist.rated_current_milliamps == 1200
    assert wrist.rated_torque_millinewton_metres == 42  # 0.035 * 1.2 N*m


def test_current_command_to_target_torque(params):
    gantry = TorqueScaling.for_motor(params.motors["gantry_motor"])
    # 2 A * 0.155 N*m/A = 0.31 N*m = 310 mN*m of 2000 mN*m -> 155 per-mille.
    assert gantry.target_torque(2.0) == 155
    assert gantry.target_torque(-2.0) == -155
    assert gantry.current_for_target_torque(155) == pytest.approx(2.0, rel=1e-12)
    # The peak current 38.7 A: 0.155 * 38.7 / 2.0 * 1000 = 2999.25 -> 2999 per-mille.
    assert gantry.target_torque(38.7) == 2999
    wrist = TorqueScaling.for_motor(params.motors["wrist_motor"])
    # 1 A * 0.035 N*m/A = 35 mN*m of 42 mN*m -> 833.3 per-mille.
    assert wrist.target_torque(1.0) == 833
    # Current actual: 5 A of 12.9 A -> 387.6 -> 388 per-mille -> 5.0052 A.
    assert gantry.current_actual(5.0) == 388
    assert gantry.current(388) == pytest.approx(5.0052, abs=1e-12)
    assert gantry.target_torque(1e9) == 2**15 - 1  # saturates at int16


MOTORS = load_parameters().motors  # loaded once: hypothesis runs the test many times


@given(st.sampled_from(["gantry_motor", "wrist_motor", "drill_feed_motor"]), st.floats(-1.0, 1.0))
def test_round_trip_is_within_half_a_count(motor_name, fraction):
    motor = MOTORS[motor_name]
    scaling = TorqueScaling.for_motor(motor)
    current = fraction * motor.max_current
    one_count = scaling.rated_torque / 1000.0 / motor.torque_constant  # A per per-mille
    assert (
        abs(scaling.current_for_target_torque(scaling.target_torque(current)) - current)
        <= 0.5 * one_count + 1e-12
    )
    assert (
        abs(scaling.current(scaling.current_actual(current)) - current)
        <= 0.5 * scaling.rated_current / 1000 + 1e-12
    )


def test_zero_rating_is_refused():
    with pytest.raises(ValueError, match="must be > 0"):
        TorqueScaling(rated_current_milliamps=0, rated_torque_millinewton_metres=2000, torque_constant=0.155)


# --- joint model -------------------------------------------------------------------------------------
@pytest.mark.parametrize("damping", [0.0, 0.06, 50.0])
def test_joint_model_is_exact_for_constant_effort(damping):
    inertia, effort, t = 22.6786, 16.74, 0.8
    joint = JointModel(inertia=inertia, damping=damping, position=0.3, velocity=-0.1)
    for _ in range(400):
        joint.step(effort, t / 400)
    if damping == 0.0:
        position = 0.3 - 0.1 * t + effort / inertia * t**2 / 2
        velocity = -0.1 + effort / inertia * t
    else:
        a = damping / inertia
        terminal = effort / damping
        velocity = terminal + (-0.1 - terminal) * math.exp(-a * t)
        position = 0.3 + terminal * t + (-0.1 - terminal) * (1 - math.exp(-a * t)) / a
    assert joint.position == pytest.approx(position, rel=1e-12, abs=1e-12)
    assert joint.velocity == pytest.approx(velocity, rel=1e-12, abs=1e-12)


def test_joint_model_refuses_bad_numbers():
    with pytest.raises(ValueError, match="inertia"):
        JointModel(inertia=0.0, damping=0.1)
    with pytest.raises(ValueError, match="finite"):
        JointModel(inertia=1.0, damping=float("nan"))


# --- bus load ----------------------------------------------------------------------------------------
def test_frame_bits_follow_the_can_frame_layout():
    # CAN 2.0A: SOF 1, id 11, RTR 1, IDE 1, r0 1, DLC 4, data, CRC 15, CRC delimiter 1, ACK 2,
    # EOF 7, intermission 3.
    layout = 1 + 11 + 1 + 1 + 1 + 4 + 15 + 1 + 2 + 7 + 3
    for n in range(9):
        assert can_frame_bits(n) == layout + 8 * n
        stuffable = 1 + 11 + 1 + 1 + 1 + 4 + 8 * n + 15
        assert can_frame_bits(n, worst_case_stuffing=True) == layout + 8 * n + (stuffable - 1) // 4
    with pytest.raises(ValueError, match="0 to 8"):
        can_frame_bits(9)


def test_configured_cycle_keeps_the_bus_at_half_load(params):
    load = bus_load(params.canopen)  # the busiest bus, CSP
    busiest = max(len(params.canopen.axes_on(c)) for c in params.canopen.channel_names)
    assert busiest == 2
    # SYNC, the master's heartbeat, and per node RPDO1, RPDO2, TPDO1, TPDO2.
    assert load.frames_per_cycle == 2 + 4 * busiest
    # CAN 2.0A: 47 bits + 8 per byte; SYNC 0 bytes, heartbeat 1, RPDO1 6, RPDO2 8, TPDO1 6, TPDO2 6.
    assert load.bits_per_cycle == 47 + 55 + busiest * (4 * 47 + 8 * (6 + 8 + 6 + 6)) == 894
    # The YAML's source quotes 894 bits, 1080 with worst-case stuffing: 45 % and 54 % of 2 ms.
    assert load.worst_bits_per_cycle == 1080
    assert load.load == pytest.approx(0.447) and load.worst_load == pytest.approx(0.54)
    # CSP: a SYNC every 2 ms (the drives close their loops at drive.control_rate).
    assert params.canopen.sync_period == pytest.approx(2.0 / params.drive.control_rate)
    # Six nodes on one bus would not fit in that cycle; at 4 ms they would.
    assert bus_load(params.canopen, nodes=len(DRILL_AXES)).worst_load > 1.0
    assert bus_load(params.canopen, nodes=len(DRILL_AXES), cycle_time=0.004).worst_load < 0.8
    # CST with the host PID at its 1 ms control period: RPDO1 only, 672 bits (810): 67 % (81 %).
    cst = bus_load(params.canopen, csp=False, cycle_time=1.0 / params.drive.control_rate)
    assert (cst.bits_per_cycle, cst.worst_bits_per_cycle) == (672, 810)


# --- the parameter file's canopen section -----------------------------------------------------------
def test_canopen_parameters(params):
    bus = params.canopen
    assert set(bus.node_ids) == set(DRILL_AXES)
    assert len(set(bus.node_ids.values())) == len(DRILL_AXES)
    assert bus.feedback_timeout == pytest.approx(bus.feedback_timeout_periods * bus.sync_period)
    assert set(bus.channels) == set(DRILL_AXES)
    assert bus.channel_names == ("can0", "can1", "can2")
    assert sum((bus.axes_on(c) for c in bus.channel_names), ()) == DRILL_AXES


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("node_ids.gantry_y", 1, "must all differ"),
        ("node_ids.gantry_y", 128, r"whole number in \[1, 127\]"),
        ("node_ids.gantry_y", 2.5, "whole number"),
        ("feedback_timeout_periods", 0, "whole number"),
        ("sync_period", -0.001, "must be > 0"),
        ("master_node_id", 3, "3 is a drive's node id too"),
        ("master_node_id", 0, r"whole number in \[1, 127\]"),
        ("heartbeat_period", 0.0, "must be > 0"),
        ("sync_loss_periods", 0, "whole number"),
    ],
)
def test_bad_canopen_parameters_are_refused(tmp_path, key, value, message):
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    node = raw["canopen"]
    *path, leaf = key.split(".")
    for part in path:
        node = node[part]
    node[leaf]["value"] = value
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match=message) as error:
        load_parameters(broken)
    assert "canopen." in str(error.value)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda c: c.update(gantry_x=""), "channels.gantry_x: must name a CAN interface"),
        (lambda c: c.update(gantry_x=3), "channels.gantry_x: must be a string"),
        (lambda c: c.pop("drill_feed"), "channels.drill_feed: missing"),
        (lambda c: c.update(elbow="can0"), "channels: unknown axes"),
    ],
)
def test_bad_channels_are_refused(tmp_path, change, message):
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    change(raw["canopen"]["channels"])
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match=message):
        load_parameters(broken)


def test_missing_and_unknown_axes_are_refused(tmp_path):
    raw = yaml.safe_load(DEFAULT_PARAMETER_FILE.read_text())
    raw["canopen"]["node_ids"]["elbow"] = raw["canopen"]["node_ids"].pop("drill_feed")
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match="canopen.node_ids.drill_feed: missing"):
        load_parameters(broken)
    raw["canopen"]["node_ids"]["drill_feed"] = {"value": 6, "unit": "1", "source": "design assumption: test"}
    broken.write_text(yaml.safe_dump(raw))
    with pytest.raises(ParameterError, match="unknown axes"):
        load_parameters(broken)
