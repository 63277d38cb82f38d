"""CanopenDrive end to end on python-can's virtual bus against the simulated CiA 402 slave.

The master (canopen.Network + RemoteNode inside CanopenDrive) and the slave
(CanopenServoSimulator, a canopen.LocalNode on its own Network) share a virtual CAN channel; a
third bus on the channel sniffs the raw frames, which the tests decode with struct (CiA 301 SDO
and PDO layouts), independently of the canopen library. Simulated time advances one SYNC
period per SYNC; the master's watchdog reads a fake clock advanced by the same period, so
nothing depends on the wall clock except where a test says so.
"""

from __future__ import annotations

import math
import struct
import threading
import time
import uuid

import can
import canopen
import pytest
from canopen.sdo import SdoAbortedError
from canopen_rig import FakeClock, RigFactory
from virtual_can import (
    START,
    WAIT,
    answer_the_first_download_again_late,
    lose_the_first_upload_request,
    network,
    sdo_downloads,
    sdo_uploads,
    wait_until,
)

from quirobot_cli.canopen_servo_simulator import main
from quirobot_control.drive_simulators.canopen_slave import CanopenServoSimulator, serve, simulator_for_axis
from quirobot_control.drive_simulators.canopen_slave.joint_model import JointModel
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.bus_load import bus_load
from quirobot_control.drives.canopen_master import (
    canopen_drives_for_buses,
    canopen_drives_for_robot,
)
from quirobot_control.drives.canopen_units import CanopenConfigurationError
from quirobot_control.drives.cia402 import DEFAULT_EDS, Cia402State
from quirobot_control.drives.interface import Drive, DriveError, DriveMode, DriveState
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.control_config import control_configuration, load_control_config
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.hardware.lifecycle import CallbackReturn, ReturnType
from quirobot_description.machine_identity import SERIAL_NUMBER_OBJECT, simulated_machine
from quirobot_description.parameters import DrillParameters, axes_for, load_parameters
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

pytestmark = pytest.mark.canbus


@pytest.fixture(scope="module")
def params():
    return load_parameters()


@pytest.fixture(scope="module")
def control(params):
    return control_configuration(params)


@pytest.fixture(scope="module")
def inertias(params):
    """Effective inertia per axis (kg or kg*m^2) from the control configuration."""
    currents = {j.name: j.motor.max_current for j in params.joints}
    currents[DrillParameters.feed_joint] = params.drill.feed.motor.max_current
    control = load_control_config(max_currents=currents)
    return {axis: control.joint(axis).effective_inertia for axis in DRILL_AXES}


@pytest.fixture
def make_rig(params, inertias):
    factory = RigFactory(params, inertias)
    yield factory.make
    factory.close()


def rpdos(frames, node_id):
    """(controlword, target torque) of every RPDO1 to the node."""
    return [r[:2] for r in rpdo1s(frames, node_id)]


def rpdo1s(frames, node_id):
    """(controlword, target torque, torque offset) of every RPDO1 to the node."""
    return [struct.unpack("<Hhh", bytes(f.data)) for f in frames if f.arbitration_id == 0x200 + node_id]


def rpdo2s(frames, node_id):
    """(target position counts, velocity offset counts/s) of every RPDO2 to the node."""
    return [struct.unpack("<ii", bytes(f.data)) for f in frames if f.arbitration_id == 0x300 + node_id]


def tpdo1s(frames, node_id):
    """(statusword, position counts) of every TPDO1 from the node."""
    return [struct.unpack("<Hi", bytes(f.data)) for f in frames if f.arbitration_id == 0x180 + node_id]


# --- start-up ---------------------------------------------------------------------------------------
def test_start_configures_the_node_over_the_bus(make_rig, params):
    rig = make_rig(positions={"gantry_x": 0.5}, first_step=False, mode=DriveMode.CSP)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    node_id = params.canopen.node_ids["gantry_x"]
    assert node_id == 1 and drive.node_id == node_id
    assert isinstance(drive, Drive)
    # The mapping reached the slave by SDO (the EDS defaults are not in its data store).
    store = sim.node.data_store
    assert struct.unpack("<I", store[0x1A00][1])[0] == 0x60410010
    assert struct.unpack("<I", store[0x1A00][2])[0] == 0x60640020
    assert struct.unpack("<I", store[0x1A01][1])[0] == 0x606C0020
    assert struct.unpack("<I", store[0x1A01][2])[0] == 0x60780010
    assert struct.unpack("<I", store[0x1600][1])[0] == 0x60400010
    assert struct.unpack("<I", store[0x1600][2])[0] == 0x60710010
    assert struct.unpack("<I", store[0x1600][3])[0] == 0x60B20010  # torque offset
    assert struct.unpack("<I", store[0x1601][1])[0] == 0x607A0020  # target position
    assert struct.unpack("<I", store[0x1601][2])[0] == 0x60B10020  # velocity offset
    assert struct.unpack("<I", store[0x1800][1])[0] & 0x7FF == 0x181
    assert struct.unpack("<I", store[0x1401][1])[0] & 0x7FF == 0x301
    assert store[0x1800][2] == bytes([1]) and store[0x1400][2] == bytes([255])
    frames = rig.frames()
    assert sdo_downloads(frames, node_id, 0x6060) == [8]  # cyclic synchronous position
    assert sdo_downloads(frames, node_id, 0x605A) == [2]  # ramp at 0x6085, then off: category 1
    # 0x6085 in counts/s^2: gantry_x's quick-stop deceleration (7.1 m/s^2 in the parameter file)
    # over the encoder's 2 pi / (60 rad/m * 131072) m per count.
    deceleration = params.drive.quick_stop_deceleration["gantry_x"]
    assert deceleration == 7.1
    assert sdo_downloads(frames, node_id, 0x6085) == [round(7.1 * 60.0 * 131072 / (2 * math.pi))]
    assert sdo_downloads(frames, node_id, 0x6007) == [3]  # abort connection: quick stop
    # Consumer heartbeat (CiA 301 0x1016:1): the master's node id in bits 16-23, 10 ms.
    assert params.canopen.master_node_id == 127 and params.drive.master_timeout == 0.01
    assert sdo_downloads(frames, node_id, 0x1016) == [127 << 16 | 10]
    # Homing: method, speeds, acceleration, home offset from homing.gantry_x, in counts.
    homing = params.homing["gantry_x"]
    counts = 60.0 * 131072 / (2 * math.pi)  # per m
    assert sdo_downloads(frames, node_id, 0x6098) == [homing.method]
    assert sdo_downloads(frames, node_id, 0x6099) == [
        round(homing.switch_speed * counts),
        round(homing.zero_speed * counts),
    ]
    assert sdo_downloads(frames, node_id, 0x609A) == [round(homing.acceleration * counts)]
    assert sdo_downloads(frames, node_id, 0x607C) == [round(homing.home_offset * counts)]
    # NMT start (command 1 to the node) was the last thing sent.
    assert bytes(frames[-1].data) == bytes([1, node_id]) and frames[-1].arbitration_id == 0
    assert wait_until(lambda: sim.nmt_state == "OPERATIONAL")
    # Position from the start-up SDO read, then from TPDO1: 0.5 m of a 60 rad/m screw with a
    # 131072-count encoder is 0.5 * 60 / (2 pi) * 131072 counts.
    counts = round(0.5 * 60.0 / (2 * math.pi) * 131072)
    resolution = 2 * math.pi / (60.0 * 131072)
    assert drive.feedback().position == pytest.approx(counts * resolution, abs=1e-15)
    rig.step()
    ((statusword, position_counts),) = tpdo1s(rig.frames(), node_id)
    assert position_counts == counts
    assert statusword & 0x4F == 0x40  # Switch on disabled
    fb = drive.feedback()
    assert fb.state is DriveState.DISABLED and fb.fault is None
    assert abs(fb.position - 0.5) <= resolution / 2


def test_a_drive_with_other_motor_data_is_refused(params, inertias):
    channel = f"quirobot-test-{uuid.uuid4().hex}"
    slave, master = network(channel), network(channel)
    try:
        # The gantry_x node carries a wrist motor: its rated current 0x6075 is 1200 mA, not 12900.
        wrong = CanopenServoSimulator(
            params.canopen.node_ids["gantry_x"],
            drive_for_joint(params, "wrist_yaw"),
            JointModel(inertia=inertias["wrist_yaw"], damping=0.0),
            params.canopen.sync_period,
        )
        wrong.attach(slave)
        with pytest.raises(CanopenConfigurationError, match=r"0x6075.*1200 mA.*12900 mA"):
            canopen_drives_for_robot(params, master, axes=["gantry_x"])
    finally:
        master.disconnect()
        slave.disconnect()


class KeepsNoAbortAction(CanopenServoSimulator):
    """A drive that takes the abort-connection option 0x6007 but keeps 0 (CiA 402: no action on a
    lost master): it would go on without its master in every mode."""

    def _on_read(self, index, subindex, od):
        return 0 if index == 0x6007 else super()._on_read(index, subindex, od)


def test_a_drive_that_does_not_keep_its_master_watch_is_refused(params, inertias):
    """Issue 32 item 4: start-up reads back what makes a drive stop itself on a lost master
    (0x605A, 0x6007, 0x1016:1); one that reads otherwise is refused, naming the object. Before,
    the writes were trusted: this drive was started, and would have gone on without its master."""
    channel = f"quirobot-test-{uuid.uuid4().hex}"
    slave, master = network(channel), network(channel)
    try:
        drive = KeepsNoAbortAction(
            params.canopen.node_ids["gantry_x"],
            drive_for_joint(params, "gantry_x"),
            JointModel(inertia=inertias["gantry_x"], damping=0.0),
            params.canopen.sync_period,
        )
        drive.attach(slave)
        with pytest.raises(
            CanopenConfigurationError, match=r"abort-connection option code 0x6007:0 reads 0 after 3"
        ):
            canopen_drives_for_robot(params, master, axes=["gantry_x"])
    finally:
        master.disconnect()
        slave.disconnect()


def test_a_silent_node_fails_start_up_with_a_drive_error(params):
    channel = f"quirobot-test-{uuid.uuid4().hex}"
    master = network(channel)
    try:
        with pytest.raises(DriveError, match=r"gantry_z \(CANopen node 3\): start-up failed"):
            canopen_drives_for_robot(params, master, axes=["gantry_z"])
    finally:
        master.disconnect()


def test_an_unconnected_network_is_refused(params):
    with pytest.raises(DriveError, match="not connected"):
        canopen_drives_for_robot(params, canopen.Network(), axes=["gantry_x"])


def test_unknown_axis_is_refused(params):
    with pytest.raises(ValueError, match="no CANopen node id for axis 'elbow'"):
        canopen_drives_for_robot(params, canopen.Network(), axes=["elbow"])


def test_the_slave_answers_its_serial_number_and_the_master_reads_it(params, inertias):
    """0x1018:04 is the nominal simulated machine's serial number for the drive's joint, or the one
    the simulator is given; 0x1018:01..03 stay the EDS's (the slave's read callback keys its
    values by index: the serial number must not answer them); read-only; a restart keeps it."""
    channel = f"quirobot-test-{uuid.uuid4().hex}"
    slave, master = network(channel), network(channel)
    sniffer = can.Bus(interface="virtual", channel=channel)
    index, subindex = SERIAL_NUMBER_OBJECT
    other = 0xC0FFEE05
    try:
        simulators = {
            "gantry_y": simulator_for_axis(params, "gantry_y", inertia=inertias["gantry_y"]),
            "wrist_pitch": simulator_for_axis(
                params, "wrist_pitch", inertia=inertias["wrist_pitch"], serial_number=other
            ),
        }
        for simulator in simulators.values():
            simulator.attach(slave)
        drives = canopen_drives_for_robot(params, master, axes=list(simulators), start=False)
        expected = {"gantry_y": dict(simulated_machine(None).serials)["gantry_y"], "wrist_pitch": other}
        eds = canopen.objectdictionary.import_od(str(DEFAULT_EDS))[index]
        for axis, drive in drives.items():
            assert drive.serial_number is None
            assert drive.read_serial_number() == expected[axis] == drive.serial_number, axis
            identity = [drive.node.sdo[index][sub].raw for sub in (1, 2, 3)]
            assert identity == [eds[sub].default for sub in (1, 2, 3)], axis
        frames = []
        while (message := sniffer.recv(timeout=0)) is not None:
            frames.append(message)
        for axis, drive in drives.items():
            assert sdo_uploads(frames, drive.node_id, index, subindex) == [expected[axis]], axis
        wrist = drives["wrist_pitch"]
        with pytest.raises(SdoAbortedError) as refused:
            wrist.node.sdo[index][subindex].raw = 7
        assert refused.value.code == 0x06010002  # CiA 301: attempt to write a read-only object
        simulators["wrist_pitch"].reboot()
        assert wrist.read_serial_number() == other
        with pytest.raises(ValueError, match="serial number"):
            simulator_for_axis(params, "gantry_y", inertia=inertias["gantry_y"], serial_number=2**32)
    finally:
        master.disconnect()
        slave.disconnect()
        sniffer.shutdown()


# --- enable, torque, motion ---------------------------------------------------------------------
def test_enable_sequence_reaches_operation_enabled(make_rig, params):
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    rig.step()
    rig.frames()
    drive.enable()
    # Shutdown, Switch on, Enable operation, in that order, by SDO.
    assert sdo_downloads(rig.frames(), 1, 0x6040) == [0x06, 0x07, 0x0F]
    assert sim.state is Cia402State.OPERATION_ENABLED
    rig.step()
    assert drive.feedback().state is DriveState.ENABLED
    assert tpdo1s(rig.frames(), 1)[-1][0] & 0x6F == 0x27  # Operation enabled on the wire
    drive.enable()  # no-op when enabled
    assert sdo_downloads(rig.frames(), 1, 0x6040) == []
    drive.disable()  # Disable operation: the drive brakes under power, then off (0x605C = 1)
    assert sdo_downloads(rig.frames(), 1, 0x6040) == [0x07]
    rig.step()
    assert drive.feedback().state is DriveState.DISABLED
    assert sim.state is Cia402State.SWITCHED_ON


def test_a_lost_sdo_answer_before_a_command_does_not_count_against_the_drive(make_rig, params):
    """The drive's transition time runs from each command. A statusword answer lost before the
    first command (a retry after the SDO response time-out) is the bus's delay: enable goes on.
    A clean-clone CI run's enable failed "within 2.0 s ... in Switched on" when two lost frames
    took two SDO time-outs before Enable operation was ever sent (frames lost over
    udp_multicast)."""
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    assert params.canopen.transition_timeout < canopen.sdo.SdoClient.RESPONSE_TIMEOUT
    lost = lose_the_first_upload_request(sim, 0x6041)  # the statusword
    drive.enable()
    assert lost and sim.state is Cia402State.OPERATION_ENABLED
    assert sdo_downloads(rig.frames(), 1, 0x6040) == [0x06, 0x07, 0x0F]


def test_a_late_answer_to_an_earlier_request_is_dropped_not_taken(make_rig):
    """An SDO answer that comes late (its request timed out, or was sent again by a retry) reaches
    the master after its next request: it is no answer to that request. A clean-clone CI run's
    disable failed on it, the statusword read taking the controlword write's late acknowledgement
    ("statusword 0x6041 not readable: Unexpected response 0x60"). The drive now drops it and takes
    the statusword's own answer."""
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    drive.enable()
    late = answer_the_first_download_again_late(sim, 0x6040)  # the controlword
    drive.disable()  # writes the controlword, then reads the statusword
    assert late and drive.sdo_answers.dropped == 1
    assert drive.feedback().state is DriveState.DISABLED and sim.state is Cia402State.SWITCHED_ON
    # On the wire: the statusword read (after the write) had two answers, the late one first.
    frames = [f for f in rig.frames() if f.arbitration_id == 0x581]
    assert [bytes(f.data[:4]) for f in frames[-3:]] == [
        bytes([0x60, 0x40, 0x60, 0x00]),
        bytes([0x60, 0x40, 0x60, 0x00]),
        bytes([0x4B, 0x41, 0x60, 0x00]),
    ]


@pytest.mark.parametrize("current", [2.0, -2.0])
def test_a_current_command_gives_the_torque_and_moves_the_joint(make_rig, params, inertias, current):
    rig = make_rig(positions={"gantry_x": 1.0})
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    drive.enable()
    rig.frames()
    steps = round(0.2 / rig.period)  # 0.2 s
    for _ in range(steps):
        drive.command_current(current)
        rig.step()
    # Report ch.6: K_T = 0.155 N*m/A; rated torque K_T * 12.9 A = 1.9995 N*m stored as 2000 mN*m:
    # 2 A -> 0.31 N*m -> 155 per-mille, on the wire in RPDO1 with controlword Enable operation.
    per_mille = round(1000 * 0.155 * current / 2.000)
    assert abs(per_mille) == 155
    assert set(rpdos(rig.frames(), 1)) == {(0x0F, per_mille)}
    assert sim.target_torque == per_mille
    applied = per_mille * 2.000 / 1000 / 0.155  # A, what the drive's current loop is asked for
    fb = drive.feedback()
    assert fb.state is DriveState.ENABLED
    assert fb.current == pytest.approx(applied, abs=12.9 / 1000 / 2 + 1e-12)  # half a count of 0x6078
    ratio, efficiency = 60.0, params.joint("gantry_x").transmission.efficiency
    assert fb.effort == pytest.approx(0.155 * fb.current * ratio * efficiency, rel=1e-12)
    # Motion: m x'' = F - b x' from rest for `steps` SYNC periods, F = K_T * i * ratio * eta.
    force = 0.155 * applied * ratio * efficiency
    m, b, t = inertias["gantry_x"], params.joint("gantry_x").damping, steps * rig.period
    a = b / m
    expected = 1.0 + force / b * (t - (1 - math.exp(-a * t)) / a)
    travel = fb.position - 1.0
    assert math.copysign(1.0, travel) == math.copysign(1.0, current)  # the right way
    assert travel == pytest.approx(expected - 1.0, rel=0.01)
    # The drive's velocity is the backward difference of encoder positions over one control
    # period h: (x(t) - x(t - h)) / h, within one count per h of quantization.
    h = 1.0 / params.drive.control_rate

    def x(time):
        return force / b * (time - (1 - math.exp(-a * time)) / a)

    assert fb.velocity == pytest.approx((x(t) - x(t - h)) / h, abs=1.01 * drive.encoder.resolution / h)


def test_commands_are_clipped_to_the_peak_current(make_rig):
    rig = make_rig(axes=("wrist_pitch",))
    drive, sim = rig.drives["wrist_pitch"], rig.simulators["wrist_pitch"]
    drive.enable()
    drive.command_current(100.0)
    rig.step(rig.settle)
    # Report ch.6: wrist motor I_max = 3.6 A -> 0.126 N*m of 42 mN*m rated = 3000 per-mille.
    assert sim.target_torque == 3000
    assert drive.feedback().current == pytest.approx(3.6, abs=0.0006)


# --- quick stop, faults, bad commands --------------------------------------------------------------
def test_quick_stop(make_rig):
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    drive.enable()
    drive.command_current(5.0)
    rig.step(3)
    assert drive.feedback().current > 4.9
    drive.quick_stop()  # by RPDO: the slave applies it on reception, no SDO round trip
    assert wait_until(lambda: sim.state is Cia402State.QUICK_STOP_ACTIVE)
    rig.step(rig.settle)
    fb = drive.feedback()
    assert fb.state is DriveState.QUICK_STOP and fb.fault is None
    assert abs(fb.current) < 1e-3 and abs(sim.drive.feedback().current) < 1e-6
    rig.frames()
    drive.command_current(5.0)  # ignored: nothing is sent
    assert rpdos(rig.frames(), 1) == []
    with pytest.raises(DriveError, match="reset_fault"):
        drive.enable()
    drive.disable()  # latched
    assert drive.feedback().state is DriveState.QUICK_STOP
    drive.reset_fault()
    rig.step()
    assert drive.feedback().state is DriveState.DISABLED
    assert sim.state is Cia402State.SWITCH_ON_DISABLED
    drive.enable()
    drive.command_current(1.0)
    rig.step()
    assert drive.feedback().state is DriveState.ENABLED and drive.feedback().current > 0.9


def test_quick_stop_of_a_disabled_drive_is_latched_on_the_master(make_rig):
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    drive.quick_stop()
    rig.step()
    assert sim.state is Cia402State.SWITCH_ON_DISABLED  # CiA 402 transition-free
    assert drive.feedback().state is DriveState.QUICK_STOP
    with pytest.raises(DriveError, match="QUICK_STOP"):
        drive.enable()
    drive.reset_fault()
    drive.enable()
    assert sim.state is Cia402State.OPERATION_ENABLED


def test_a_slave_fault_reaches_the_master_with_its_error_code(make_rig):
    rig = make_rig(axes=("wrist_yaw",))
    drive, sim = rig.drives["wrist_yaw"], rig.simulators["wrist_yaw"]
    node_id = drive.node_id
    drive.enable()
    drive.command_current(1.0)
    rig.step(2)
    rig.frames()
    sim.inject_fault(0x2310)
    rig.step()
    frames = rig.frames()
    # EMCY (CiA 301): 0x80 + node id, error code 0x2310, error register bit 0.
    emcy = [f for f in frames if f.arbitration_id == 0x80 + node_id]
    assert [struct.unpack_from("<HB", bytes(f.data)) for f in emcy] == [(0x2310, 0x01)]
    assert tpdo1s(frames, node_id)[-1][0] & 0x4F == 0x08  # Fault
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT
    assert fb.fault == "error code 0x2310: continuous over-current"
    assert fb.current == 0.0
    with pytest.raises(DriveError, match="over-current"):
        drive.command_current(1.0)
    with pytest.raises(DriveError, match="FAULT"):
        drive.enable()
    drive.quick_stop()  # does not hide the fault
    assert drive.feedback().state is DriveState.FAULT
    drive.reset_fault()
    # Fault reset is the rising edge of controlword bit 7.
    assert sdo_downloads(rig.frames(), node_id, 0x6040)[-3:] == [0x00, 0x80, 0x00]
    rig.step()
    fb = drive.feedback()
    assert fb.state is DriveState.DISABLED and fb.fault is None
    assert sim.error_code == 0 and sim.state is Cia402State.SWITCH_ON_DISABLED
    drive.enable()
    assert drive.feedback().state is DriveState.ENABLED


def test_overspeed_on_the_slave_is_a_fault_with_its_code(make_rig, params):
    rig = make_rig(axes=("wrist_pitch",))
    drive, sim = rig.drives["wrist_pitch"], rig.simulators["wrist_pitch"]
    drive.enable()
    # Motor speed = 500 * joint speed; the wrist motor's rating is max_speed (8000 rpm).
    sim.joint.velocity = 1.01 * params.motors["wrist_motor"].max_speed / 500.0
    rig.step()
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT and fb.fault.startswith("error code 0x8400")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "abc", None])
def test_a_bad_command_is_refused_with_a_quick_stop(make_rig, bad):
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    drive.enable()
    drive.command_current(3.0)
    rig.step()
    rig.frames()
    with pytest.raises(DriveError, match="quick stop|must be a number"):
        drive.command_current(bad)
    assert wait_until(lambda: sim.state is Cia402State.QUICK_STOP_ACTIVE)
    assert rpdos(rig.frames(), 1) == [(0x02, 0)]  # quick stop, zero torque: never the bad value
    rig.step(rig.settle)
    assert drive.feedback().state is DriveState.QUICK_STOP
    assert abs(sim.drive.feedback().current) < 1e-6


def test_an_invalid_statusword_is_a_fault(make_rig):
    rig = make_rig()
    drive = rig.drives["gantry_x"]
    drive.enable()
    target = drive.feedback_count + 1
    # A TPDO1 whose statusword (0x0001) matches no CiA 402 state, then TPDO2, from "the drive".
    rig.sniffer.send(
        can.Message(arbitration_id=0x181, data=struct.pack("<Hi", 0x0001, 0), is_extended_id=False)
    )
    rig.sniffer.send(can.Message(arbitration_id=0x281, data=struct.pack("<ih", 0, 0), is_extended_id=False))
    assert drive.wait_for_feedback(target, WAIT)
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT and "statusword 0x0001 matches no CiA 402 state" in fb.fault
    with pytest.raises(DriveError, match="invalid statusword"):
        drive.command_current(1.0)


def test_stop_leaves_the_node_pre_operational(make_rig):
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    drive.enable()
    drive.stop()
    assert wait_until(lambda: sim.state is Cia402State.QUICK_STOP_ACTIVE)
    assert wait_until(lambda: sim.nmt_state == "PRE-OPERATIONAL")
    count = sim.sync_count
    rig.frames()
    rig.master.sync.transmit()
    assert drive.node.sdo[0x6041].raw  # a round trip: the slave has handled the SYNC before it answers
    ids = [f.arbitration_id for f in rig.frames()]
    assert ids[0] == 0x80 and 0x181 not in ids and 0x281 not in ids  # no TPDO answers the SYNC
    assert sim.sync_count == count


# --- feedback timeout -------------------------------------------------------------------------------
def test_stale_feedback_is_a_fault_after_n_periods(make_rig, params):
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    drive.enable()
    drive.command_current(1.0)
    rig.step(3)
    periods = params.canopen.feedback_timeout_periods
    sim.stop_feedback()
    for _ in range(periods):
        rig.clock.now += rig.period
        rig.master.sync.transmit()
        rig.heartbeat.tick(rig.clock.now)  # the master is alive: the drive must not stop itself
    rig.clock.now -= rig.period / 2  # N - 1/2 periods since the last TPDO: not yet
    assert drive.feedback().state is DriveState.ENABLED
    drive.command_current(1.0)
    rig.clock.now += rig.period  # N + 1/2 periods
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT
    assert fb.fault.startswith("feedback timeout") and f"{periods} SYNC periods" in fb.fault
    # The master told the drive to stop (RPDO quick stop, zero torque).
    assert wait_until(lambda: sim.state is Cia402State.QUICK_STOP_ACTIVE)
    with pytest.raises(DriveError, match="feedback timeout"):
        drive.command_current(1.0)
    sim.resume_feedback()
    with pytest.raises(DriveError, match="stop still in progress"):
        drive.reset_fault()  # the drive still ramps: no Disable voltage mid-ramp
    for _ in range(100):
        rig.step()
        if sim.state is Cia402State.SWITCH_ON_DISABLED:
            break
    drive.reset_fault()
    rig.step()
    assert drive.feedback().state is DriveState.DISABLED
    drive.enable()
    assert drive.feedback().state is DriveState.ENABLED


def test_feedback_timeout_in_real_time(make_rig, params):
    """SYNC from a background thread at the configured period, the wall clock as the watchdog's."""
    rig = make_rig(clock=time.monotonic, first_step=False)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    rig.master.sync.start(params.canopen.sync_period)
    assert wait_until(lambda: drive.feedback_count >= 3)
    sim.stop_feedback()
    assert wait_until(lambda: drive.feedback().state is DriveState.FAULT)
    assert drive.feedback().fault.startswith("feedback timeout")


def test_no_drive_is_enabled_without_feedback(make_rig, params):
    rig = make_rig(first_step=False)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    rig.clock.now += 100 * rig.period  # no SYNC, no TPDO: the watchdog is not armed yet
    assert drive.feedback().state is DriveState.DISABLED
    with pytest.raises(DriveError, match="no feedback .* is the SYNC running"):
        drive.enable()
    assert sim.state is Cia402State.SWITCH_ON_DISABLED
    rig.step()
    drive.enable()
    assert sim.state is Cia402State.OPERATION_ENABLED


def test_a_vanished_node_faults_and_cannot_be_reset(make_rig, params):
    rig = make_rig()
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    rig.step()
    sim.detach()
    rig.clock.now += params.canopen.feedback_timeout + rig.period
    assert drive.feedback().state is DriveState.FAULT
    with pytest.raises(DriveError, match="statusword 0x6041 not readable"):
        drive.reset_fault()


# --- the whole robot --------------------------------------------------------------------------------
def test_every_axis_on_one_bus(make_rig, params, control):
    positions = {"gantry_x": 0.4, "gantry_y": 0.8, "gantry_z": 1.2, "wrist_yaw": 1.0, "wrist_pitch": -0.5}
    rig = make_rig(axes=DRILL_AXES, positions=positions, first_step=False, mode=DriveMode.CSP)
    assert list(rig.drives) == list(DRILL_AXES)
    assert [d.node_id for d in rig.drives.values()] == [params.canopen.node_ids[a] for a in DRILL_AXES]
    rig.step()
    for axis, drive in rig.drives.items():
        fb = drive.feedback()
        assert fb.state is DriveState.DISABLED and fb.mode is DriveMode.CSP
        assert fb.position == pytest.approx(positions.get(axis, 0.0), abs=drive.encoder.resolution)
    for axis, drive in rig.drives.items():
        drive.configure_position_loop(control.joint(axis).gains, control.dt)
        drive.enable()
    rig.step()
    rig.frames()
    targets = {axis: positions.get(axis, 0.0) for axis in DRILL_AXES}
    for _ in range(2):  # two cycles: one master heartbeat (canopen.heartbeat_period = 2 SYNCs)
        for axis, drive in rig.drives.items():
            targets[axis] += 1e-5
            drive.command_position(targets[axis], 0.0, 0.0)
        rig.step()
    frames = rig.frames()
    # On the wire: SYNC + RPDO1, RPDO2, TPDO1, TPDO2 per node, and the heartbeat, as bus_load()
    # counts them (it counts a heartbeat in every cycle: an upper bound).
    assert params.canopen.heartbeat_period == pytest.approx(2 * rig.period)
    assert [f.arbitration_id for f in frames].count(0x77F) == 1
    bits = sum(47 + 8 * len(f.data) for f in frames)  # CAN 2.0A frame, 47 bits + data
    load = bus_load(params.canopen, nodes=len(DRILL_AXES))
    assert len(frames) == 2 * load.frames_per_cycle - 1
    assert bits == 2 * load.bits_per_cycle - (47 + 8)
    for _ in range(100):
        for axis, drive in rig.drives.items():
            drive.command_position(targets[axis], 0.0, 0.0)
        rig.step()
    for axis, drive in rig.drives.items():
        fb = drive.feedback()
        assert fb.state is DriveState.ENABLED, axis
        # Each drive's own PID took its axis to the new target (2e-5 m or rad beyond the start).
        assert fb.position == pytest.approx(targets[axis], abs=2e-6), axis
        assert rig.simulators[axis].joint.position == pytest.approx(targets[axis], abs=2e-6), axis


# --- bench-top demo entry point -----------------------------------------------------------------------
def test_serve_answers_a_master_until_stopped(params, inertias):
    channel = f"quirobot-test-{uuid.uuid4().hex}"
    slave, master = network(channel), network(channel)
    stop = threading.Event()
    server = threading.Thread(
        target=serve, args=(params, slave, inertias, stop), kwargs={"axes": ("gantry_y",)}
    )
    server.start()
    try:
        assert wait_until(lambda: 2 in slave.nodes)  # gantry_y is node 2
        drive = canopen_drives_for_robot(params, master, axes=["gantry_y"], mode=DriveMode.CST)["gantry_y"]
        master.sync.start(params.canopen.sync_period)
        drive.enable()
        assert drive.feedback().state is DriveState.ENABLED
        # The master goes silent: in real time the drive runs on its own clock, finds the SYNC
        # lost and stops itself; its EMCY tells the master why.
        master.sync.stop()
        assert wait_until(lambda: any(code == 0x8100 for _, code, _ in drive.emcy_log))  # SYNC lost
        assert drive.feedback().state is DriveState.FAULT
    finally:
        stop.set()
        server.join(WAIT)
        master.sync.stop()
        master.disconnect()
        slave.disconnect()
    assert not server.is_alive()


def test_main_reports_a_bad_interface_in_one_line(capsys):
    assert main(["--interface", "no-such-interface", "--channel", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("canopen_servo_simulator: error:") and "\n" not in err


# --- with the hardware component ----------------------------------------------------------------------
def test_the_hardware_component_runs_on_canopen_drives(make_rig, params):
    """QuirobotHardware (1 kHz, config/control.yaml) on six CanopenDrives, one SYNC per cycle."""
    control = control_configuration(params)
    # CST: the host PID needs one SYNC per 1 ms control period (docs/canopen.md).
    rig = make_rig(axes=DRILL_AXES, positions=START, parameters=params, sync_period=control.dt)
    assert rig.period == pytest.approx(control.dt)
    hardware = QuirobotHardware(params, control, lambda name: rig.drives[name])
    assert (
        hardware.on_init(hardware_info_from_urdf(robot_description("drill", "real")))
        is CallbackReturn.SUCCESS
    )
    assert hardware.on_configure() is CallbackReturn.SUCCESS
    assert hardware.on_activate() is CallbackReturn.SUCCESS, hardware.stop_reason
    assert all(sim.state is Cia402State.OPERATION_ENABLED for sim in rig.simulators.values())
    target = {axis: START[axis] + (0.001 if axis == "gantry_x" else 0.0) for axis in DRILL_AXES}
    command = [target[axis] for axis in DRILL_AXES]
    for k in range(200):
        t = k * control.dt
        rig.step()
        assert hardware.read(t, control.dt) is ReturnType.OK, hardware.stop_reason
        hardware.set_commands(t, command, [0.0] * len(command))
        assert hardware.write(t, control.dt) is ReturnType.OK, hardware.stop_reason
    for axis, sim in rig.simulators.items():
        assert sim.joint.position == pytest.approx(target[axis], abs=2e-5), axis  # 2 % of the 1 mm step
    # A drive fault stops the robot, with the drive's reason.
    rig.simulators["wrist_yaw"].inject_fault(0x4310)
    rig.step()
    assert hardware.read(0.2, control.dt) is ReturnType.ERROR
    assert "wrist_yaw" in hardware.stop_reason and "0x4310" in hardware.stop_reason
    for axis, sim in rig.simulators.items():
        # An over-temperature ramps under power (Fault reaction active), the others quick-stop.
        expected = Cia402State.FAULT_REACTION_ACTIVE if axis == "wrist_yaw" else Cia402State.QUICK_STOP_ACTIVE
        assert wait_until(lambda sim=sim, expected=expected: sim.state is expected), axis


def test_drives_on_three_buses(params, inertias):
    """Each axis on the network of its bus (canopen.channels), one SYNC per bus."""
    networks, slaves = {}, []
    try:
        for channel in params.canopen.channel_names:
            name = f"quirobot-test-{channel}-{uuid.uuid4().hex}"
            slave = network(name)
            slaves.append(slave)
            for axis in params.canopen.axes_on(channel):
                simulator_for_axis(params, axis, inertia=inertias[axis]).attach(slave)
            networks[channel] = network(name)
        with pytest.raises(ValueError, match="no network for CAN bus"):
            canopen_drives_for_buses(params, {"can0": networks["can0"]})
        drives = canopen_drives_for_buses(params, networks, clock=FakeClock(), mode=DriveMode.CST)
        assert list(drives) == list(DRILL_AXES)
        assert sorted(slave_ids(slaves)) == sorted(params.canopen.node_ids.values())
        for channel, net in networks.items():
            for axis in params.canopen.axes_on(channel):
                assert drives[axis].node.network is net
            net.sync.transmit()
        for drive in drives.values():
            assert drive.wait_for_feedback(1, WAIT)
            drive.enable()
            assert drive.feedback().state is DriveState.ENABLED
    finally:
        for net in [*networks.values(), *slaves]:
            net.disconnect()


def slave_ids(slaves):
    return [node_id for slave in slaves for node_id in slave.nodes]
