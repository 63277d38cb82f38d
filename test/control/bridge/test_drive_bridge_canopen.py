"""DriveBridge on the "canopen" backend, end to end on python-can's virtual bus.

Six simulated CiA 402 slaves (CanopenServoSimulator, one per axis) sit on three virtual
channels, one per bus of the parameter file (canopen.channels: can0, can1, can2); the bridge
opens its own networks on those channels (CanBusConfig(interface="virtual", channels=...)), as
it opens can0..can2 with socketcan on the robot. A sniffer per channel sees the raw frames,
decoded with struct (CiA 301 layouts), independently of the canopen library. The slaves advance
one SYNC period per SYNC, so the runs are deterministic; the only wall-clock waits are bounded
waits for frames (WAIT), never reached when things work.

The slaves' joints carry the gravity load of the start pose, held by the drive's holding brake
while it is engaged (the slave simulator applies it; the bridge pre-loads its integrators with
the holding efforts of the rigid-body model, as on the real robot), so a joint that is not
commanded must stay where it is.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from dataclasses import dataclass

import can
import can.interfaces.virtual
import canopen
import numpy as np
import pytest
from canopen.sdo import SdoAbortedError
from virtual_can import START, WAIT, network, sdo_downloads, sdo_upload_requests, sdo_uploads, wait_until

from quirobot_control.bridge.backend import DriveStartupError
from quirobot_control.bridge.canopen_backend import CanBusConfig, CanopenBackend, parse_channel_map
from quirobot_control.bridge.drive_bridge import DRIVE_BACKENDS, BridgeError, DriveBridge
from quirobot_control.drive_simulators.canopen_slave import CanopenServoSimulator, simulator_for_axis
from quirobot_control.drive_simulators.canopen_slave.joint_model import JointModel
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.cia402 import Cia402State
from quirobot_control.drives.interface import DriveMode, DriveState
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.models.dynamics import gravity_model
from quirobot_control.safety.pin_torque import PinInsertion, PinTorqueMonitor
from quirobot_description.machine_identity import SERIAL_NUMBER_OBJECT, MachineIdentity, simulated_machine
from quirobot_description.parameters import JOINT_NAMES, axes_for
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

pytestmark = pytest.mark.canbus

SYNC_ID = 0x80  # CiA 301 SYNC COB-ID


@dataclass
class LoadedJoint(JointModel):
    """The simulator's joint with a constant external effort `load` (N or N*m, gravity at the
    start pose). The drive's holding brake (the slave simulator holds the joint while it is
    engaged) keeps it still until the drive is enabled and after a stop."""

    load: float = 0.0

    def step(self, effort: float, dt: float) -> None:
        super().step(effort + self.load, dt)


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


@pytest.fixture(scope="module")
def loads(parameters):
    """Gravity effort on each axis at START (minus the holding effort of the rigid-body model)."""
    holding = gravity_model(parameters)(np.array([START[a] for a in DRILL_AXES]))
    return {axis: -float(h) for axis, h in zip(DRILL_AXES, holding, strict=True)}


def open_buses(channels) -> int:
    """Buses open on the virtual channels (python-can's registry of virtual channels)."""
    return sum(len(can.interfaces.virtual.channels.get(c, ())) for c in channels)


@dataclass
class Buses:
    config: CanBusConfig
    slaves: dict[str, canopen.Network]  # bus name -> the slaves' network
    sniffers: dict[str, can.BusABC]  # bus name -> raw reader
    simulators: dict[str, CanopenServoSimulator]  # axis -> slave

    def frames(self, bus: str) -> list[can.Message]:
        out = []
        while (message := self.sniffers[bus].recv(timeout=0)) is not None:
            out.append(message)
        return out


@pytest.fixture
def make_buses(parameters, control, loads):
    created: list[Buses] = []

    def make(silent=(), simulators=None) -> Buses:
        """Slaves on every bus but those in `silent`; `simulators` replaces some by axis."""
        tag = uuid.uuid4().hex
        channels = {bus: f"quirobot-bridge-{bus}-{tag}" for bus in parameters.canopen.channel_names}
        buses = Buses(CanBusConfig("virtual", channels), {}, {}, {})
        created.append(buses)
        for bus, channel in channels.items():
            buses.slaves[bus] = network(channel)
            buses.sniffers[bus] = can.Bus(interface="virtual", channel=channel)
            if bus in silent:
                continue
            for axis in parameters.canopen.axes_on(bus):
                sim = (simulators or {}).get(axis)
                if sim is None:
                    sim = simulator_for_axis(
                        parameters,
                        axis,
                        inertia=control.joint(axis).effective_inertia,
                        position=START[axis],
                        sync_period=control.dt,  # CST: the bridge SYNCs every control period
                    )
                    joint = sim.joint
                    sim.joint = LoadedJoint(joint.inertia, joint.damping, START[axis], load=loads[axis])
                sim.attach(buses.slaves[bus])
                buses.simulators[axis] = sim
        return buses

    yield make
    for buses in created:
        for net in buses.slaves.values():
            net.disconnect()
        for sniffer in buses.sniffers.values():
            sniffer.shutdown()


@pytest.fixture
def make_bridge(parameters, control):
    bridges = []

    def make(buses: Buses, tool: str = "drill", drive_mode=None, **options) -> DriveBridge:
        """`drive_mode`: the hardware component's (default control.drive_mode)."""
        config = control if drive_mode is None else dataclasses.replace(control, drive_mode=drive_mode)
        options.setdefault("feedback_wait", WAIT)
        info = hardware_info_from_urdf(robot_description(tool, "real"))
        options.setdefault("joints", [j.name for j in info.joints])
        backend = CanopenBackend(parameters, config, buses.config, **options)
        # The clock: the control periods run (the slaves advance one SYNC period per SYNC).
        bridge = DriveBridge(parameters, config, backend, info, now=0.0)
        bridges.append(bridge)
        # The hardware component has set the drives' mode: the SYNC period follows it (CST every
        # control period, CSP every canopen.sync_period), and so does the slaves' time per SYNC.
        for sim in buses.simulators.values():
            sim.sync_period = control.dt * backend.sync_every
        return bridge

    yield make
    for bridge in bridges:
        bridge.close()


def command_all(bridge, positions):
    bridge.command(list(DRILL_AXES), [positions[a] for a in DRILL_AXES], [], now=bridge.time)


def step_to_sync(bridge, positions=START):
    """Command and step control periods until one sent a SYNC (CSP: every canopen.sync_period);
    the sample of that period."""
    backend = bridge.backend
    syncs = backend.syncs
    while True:
        command_all(bridge, positions)
        sample = bridge.step(bridge.time)
        if backend.syncs > syncs or sample.stop_reason is not None:
            return sample


def align_to_sync(bridge):
    """Step until the next period starts with a SYNC."""
    while bridge.backend.cycles % bridge.backend.sync_every:
        command_all(bridge, START)
        assert bridge.step(bridge.time).stop_reason is None


# --- start-up ---------------------------------------------------------------------------------------
def test_start_up_enables_every_drive_on_its_bus(make_buses, make_bridge, parameters):
    buses = make_buses()
    bridge = make_bridge(buses)
    backend = bridge.backend
    assert list(backend.networks) == ["can0", "can1", "can2"]
    frames = {bus: buses.frames(bus) for bus in backend.networks}
    for axis in DRILL_AXES:
        bus = parameters.canopen.channels[axis]
        assert bridge.drives[axis].node.network is backend.networks[bus], axis
        assert buses.simulators[axis].state is Cia402State.OPERATION_ENABLED, axis
        assert buses.simulators[axis].nmt_state == "OPERATIONAL", axis
        assert bridge.drives[axis].feedback().state is DriveState.ENABLED, axis
        # Enabled by SDO on its own bus: Shutdown, Switch on, Enable operation (CiA 402).
        node = parameters.canopen.node_ids[axis]
        assert sdo_downloads(frames[bus], node, 0x6040) == [0x06, 0x07, 0x0F], axis
    sample = bridge.step(bridge.time)
    assert sample.stop_reason is None and sample.names == DRILL_AXES
    for k, axis in enumerate(DRILL_AXES):
        assert sample.position[k] == pytest.approx(START[axis], abs=bridge.drives[axis].encoder.resolution)


def test_the_drives_follow_the_description_no_feed_node_without_the_drill(
    make_buses, make_bridge, parameters
):
    buses = make_buses()
    bridge = make_bridge(buses, tool="arthroscope")
    assert bridge.names == JOINT_NAMES
    assert list(bridge.drives) == list(JOINT_NAMES)
    feed = buses.simulators["drill_feed"]
    assert feed.state is not Cia402State.OPERATION_ENABLED
    assert feed.nmt_state != "OPERATIONAL"
    bus = parameters.canopen.channels["drill_feed"]
    assert sdo_downloads(buses.frames(bus), parameters.canopen.node_ids["drill_feed"], 0x6040) == []
    for axis in JOINT_NAMES:
        assert buses.simulators[axis].state is Cia402State.OPERATION_ENABLED, axis
    bridge.command(list(JOINT_NAMES), [START[a] for a in JOINT_NAMES], [], now=bridge.time)
    sample = bridge.step(bridge.time)
    assert sample.stop_reason is None and sample.names == JOINT_NAMES
    with pytest.raises(BridgeError, match="unknown joint 'drill_feed'"):
        bridge.command(["drill_feed"], [START["drill_feed"]], now=bridge.time)


def test_one_sync_per_bus_every_period_in_cst_every_sync_period_in_csp(make_buses, make_bridge, parameters):
    buses = make_buses()
    bridge = make_bridge(buses)
    backend = bridge.backend
    modes = {drive.mode for drive in bridge.drives.values()}
    assert len(modes) == 1
    csp = modes == {DriveMode.CSP}
    # CST: the host PID needs a SYNC every 1 ms control period; CSP: every canopen.sync_period.
    assert backend.sync_every == (
        round(parameters.canopen.sync_period / backend.control_period) if csp else 1
    )
    for bus in buses.sniffers:
        buses.frames(bus)
    cycles = 6
    syncs = cycles // backend.sync_every
    for _ in range(cycles):
        command_all(bridge, START)
        bridge.step(bridge.time)
    for bus in buses.sniffers:
        frames = buses.frames(bus)
        ids = {parameters.canopen.node_ids[a] for a in parameters.canopen.axes_on(bus)}
        assert [f.arbitration_id for f in frames].count(SYNC_ID) == syncs, bus
        # Per node of this bus (and no other): the latest command once per SYNC, just before it
        # (RPDO1; RPDO2 with the target position in CSP; plus the holding setpoint written at
        # start-up, sent before the first SYNC), the answers to each SYNC (TPDO1, TPDO2).
        rpdos = (0x200, 0x300) if csp else (0x200,)
        pdo_ids = [f.arbitration_id for f in frames if 0x180 < f.arbitration_id < 0x400]
        assert set(pdo_ids) == {base + n for base in (0x180, 0x280, *rpdos) for n in ids}, bus
        assert all(pdo_ids.count(base + n) == syncs for base in (0x180, 0x280) for n in ids), bus
        assert all(pdo_ids.count(base + n) == syncs + 1 for base in rpdos for n in ids), bus
        # The master's heartbeat (0x700 + canopen.master_node_id) goes with the SYNCs.
        assert 0x700 + parameters.canopen.master_node_id in [f.arbitration_id for f in frames], bus
    # One SYNC at start-up (feedback before enabling), then one per SYNC period.
    assert all(sim.sync_count == syncs + 1 for sim in buses.simulators.values())


# --- motion -----------------------------------------------------------------------------------------
def test_a_position_command_moves_that_joint_and_the_published_state_follows(make_buses, make_bridge):
    buses = make_buses()
    bridge = make_bridge(buses)
    step = 0.001  # m on gantry_x, 1 mm
    target = START["gantry_x"] + step
    sim = buses.simulators["gantry_x"]
    bridge.command(["gantry_x"], [START["gantry_x"]], [0.0], now=bridge.time)  # taking over, here
    assert bridge.started
    published = []
    for _ in range(200):  # 0.2 s
        bridge.command(["gantry_x"], [target], [0.0], now=bridge.time)
        sample = bridge.step(bridge.time)
        assert sample.stop_reason is None
        published.append(sample.position[0])
        # The state published is the slave's encoder at this period's SYNC.
        resolution = bridge.drives["gantry_x"].encoder.resolution
        assert sample.position[0] == pytest.approx(sim.joint.position, abs=resolution)
    published = np.array(published)
    assert published[20] - START["gantry_x"] > 0.1 * step  # on its way after 20 ms
    assert sim.joint.position == pytest.approx(target, abs=0.02 * step)  # settled within 2 %
    assert published[-1] == pytest.approx(target, abs=0.02 * step)
    for k, axis in enumerate(DRILL_AXES[1:], start=1):  # the others hold their pose
        assert buses.simulators[axis].joint.position == pytest.approx(START[axis], abs=2e-5), axis
        assert sample.position[k] == pytest.approx(START[axis], abs=2e-5), axis


def test_a_pin_insertion_is_refused_with_no_pin_driver_on_the_bus(make_buses, make_bridge):
    """The pin torque monitor (bridge.pin_in_force) reads the pin driver's torque: the buses carry
    no spindle drive, so an insertion is refused rather than run unwatched, and nothing moves."""
    bridge = make_bridge(make_buses())
    insertion = PinInsertion("pin-1", PinTorqueMonitor(8.0, 0.026), 6.28, 0.00175, 4.0)
    with pytest.raises(BridgeError, match="no pin driver whose torque the monitor could read"):
        bridge.set_pin_insertion("pin-1", insertion)
    assert bridge.pin is None and bridge.step(bridge.time).stop_reason is None


# --- faults -----------------------------------------------------------------------------------------
def test_a_fault_in_one_slave_stops_every_drive_with_the_reason(make_buses, make_bridge):
    buses = make_buses()
    bridge = make_bridge(buses)
    for _ in range(5):
        command_all(bridge, START)
        assert bridge.step(bridge.time).stop_reason is None
    buses.simulators["wrist_yaw"].inject_fault(0x2310)
    sample = step_to_sync(bridge)
    assert sample.stop_reason == "drive fault on wrist_yaw: error code 0x2310: continuous over-current"
    for axis, sim in buses.simulators.items():
        expected = Cia402State.FAULT if axis == "wrist_yaw" else Cia402State.QUICK_STOP_ACTIVE
        assert wait_until(lambda sim=sim, expected=expected: sim.state is expected), axis
    assert bridge.step(bridge.time).stop_reason == sample.stop_reason  # latched


def test_a_silent_node_is_a_feedback_timeout_after_n_cycles(make_buses, make_bridge, parameters):
    buses = make_buses()
    # CST: a SYNC every control period, so the answered SYNC and the first silent one are one
    # period apart (in CSP two periods of a loaded machine's wall clock may exceed the timeout).
    bridge = make_bridge(buses, feedback_wait=0.05, drive_mode=DriveMode.CST)  # 50 ms per cycle
    assert bridge.backend.sync_every == 1
    command_all(bridge, START)
    bridge.step(bridge.time)
    buses.simulators["drill_feed"].stop_feedback()
    assert parameters.canopen.feedback_timeout < 0.05
    align_to_sync(bridge)
    samples = [step_to_sync(bridge) for _ in range(3)]
    # Freshness is wall-clock time between SYNCs: the first unanswered SYNC's cycle waited 50 ms,
    # so at the next SYNC the node has been silent longer than the 10 ms timeout: the second
    # silent cycle is the fault (counted SYNCs would allow ten).
    assert samples[0].stop_reason is None
    sample = samples[1]
    assert sample.stop_reason.startswith("drive fault on drill_feed: feedback timeout: no TPDO from node 6")
    for axis, sim in buses.simulators.items():
        if axis != "drill_feed":
            assert wait_until(lambda sim=sim: sim.state is Cia402State.QUICK_STOP_ACTIVE), axis


# --- shutdown ---------------------------------------------------------------------------------------
def test_close_quick_stops_every_drive_and_disconnects(make_buses, make_bridge):
    buses = make_buses()
    bridge = make_bridge(buses)
    command_all(bridge, START)
    bridge.step(bridge.time)
    channels = buses.config.channels.values()
    assert open_buses(channels) == 3 * 3  # slaves, sniffer and the bridge on each channel
    assert bridge.close() == []
    for axis, sim in buses.simulators.items():
        assert sim.state is Cia402State.QUICK_STOP_ACTIVE, axis
        assert wait_until(lambda sim=sim: sim.nmt_state == "PRE-OPERATIONAL"), axis
    assert all(net.bus is None for net in bridge.backend.networks.values())
    assert open_buses(channels) == 3 * 2
    for bus in buses.sniffers:
        ids = [f.arbitration_id for f in buses.frames(bus)]
        assert ids[-1] == 0  # NMT (enter pre-operational) is the last frame
    with pytest.raises(BridgeError, match="closed"):
        bridge.step(bridge.time)
    assert bridge.close() == []  # idempotent
    assert all(not buses.frames(bus) for bus in buses.sniffers)


# --- start-up errors -----------------------------------------------------------------------------
def test_a_bus_without_answer_fails_start_up_naming_the_node_and_enables_nothing(make_buses, make_bridge):
    buses = make_buses(silent=("can1",))
    with pytest.raises(DriveStartupError) as raised:
        make_bridge(buses)
    message = str(raised.value)
    channel = buses.config.channels["can1"]
    assert message.startswith(
        f"CAN bus can1 (virtual channel {channel}): drive gantry_z (CANopen node 3): start-up failed"
    )
    assert "\n" not in message
    for bus in ("can0", "can1", "can2"):
        frames = buses.frames(bus)
        for node in range(1, 7):
            assert sdo_downloads(frames, node, 0x6040) == [], (bus, node)  # no controlword: nothing enabled
        assert SYNC_ID not in [f.arbitration_id for f in frames]
    for axis, sim in buses.simulators.items():
        assert sim.state is Cia402State.SWITCH_ON_DISABLED, axis
        assert wait_until(lambda sim=sim: sim.nmt_state == "PRE-OPERATIONAL"), axis  # started, then stopped
    assert open_buses(buses.config.channels.values()) == 3 * 2  # the bridge's buses are closed


def test_a_node_that_sends_no_feedback_fails_start_up(make_buses, make_bridge, parameters):
    buses = make_buses()
    buses.simulators["drill_feed"].stop_feedback()  # answers SDOs, no TPDO on SYNC
    with pytest.raises(DriveStartupError) as raised:
        make_bridge(buses, feedback_wait=0.0)
    channel = buses.config.channels["can2"]
    timeout = parameters.canopen.transition_timeout
    assert str(raised.value) == (
        f"no feedback (TPDO1 and TPDO2) within {timeout} s of the first SYNC from "
        f"CAN bus can2 (virtual channel {channel}): drive drill_feed (CANopen node 6)"
    )
    assert all(sim.state is Cia402State.SWITCH_ON_DISABLED for sim in buses.simulators.values())


def test_a_drive_with_other_motor_data_fails_start_up(make_buses, make_bridge, parameters, control):
    wrong = CanopenServoSimulator(  # gantry_y's node with a wrist motor: 0x6075 is 1200 mA, not 12900
        parameters.canopen.node_ids["gantry_y"],
        drive_for_joint(parameters, "wrist_yaw"),
        JointModel(inertia=control.joint("wrist_yaw").effective_inertia, damping=0.0),
        control.dt,
    )
    buses = make_buses(simulators={"gantry_y": wrong})
    with pytest.raises(
        DriveStartupError, match=r"^CAN bus can0 \(.*\): drive gantry_y \(CANopen node 2\).*0x6075"
    ):
        make_bridge(buses)
    assert all(sim.state is Cia402State.SWITCH_ON_DISABLED for sim in buses.simulators.values())


class WithoutSerialNumber(CanopenServoSimulator):
    """A drive whose identity object has no serial number: a read of 0x1018:04 aborts."""

    def _on_read(self, index, subindex, od):
        if (index, subindex) == SERIAL_NUMBER_OBJECT:
            raise SdoAbortedError(0x06090011)  # CiA 301: sub-index does not exist
        return super()._on_read(index, subindex, od)


def test_start_up_reads_each_drive_serial_number_once_the_machine_on_the_buses(
    make_buses, parameters, control
):
    """`machine`: the serial numbers (0x1018:04) of the started drives, as the slaves answered
    them on the bus; the nominal simulated machine with the default slaves. Read once at
    start-up: the cycle sends no SDO for it."""
    buses = make_buses()
    backend = CanopenBackend(parameters, control, buses.config, feedback_wait=WAIT)
    try:
        for _ in range(5):
            backend.before_read()
            backend.after_write()
    finally:
        backend.close()
    assert backend.machine == simulated_machine(None, DRILL_AXES)
    sent = {bus: buses.frames(bus) for bus in buses.sniffers}
    for axis, serial in backend.machine.serials:
        node = parameters.canopen.node_ids[axis]
        frames = sent[parameters.canopen.channels[axis]]
        assert sdo_upload_requests(frames, node, *SERIAL_NUMBER_OBJECT) == 1, axis
        assert sdo_uploads(frames, node, *SERIAL_NUMBER_OBJECT) == [serial], axis


def test_a_drive_with_another_serial_number_is_another_machine(make_buses, parameters, control):
    """One replaced drive (another serial number) and no feed drive (a tool without one): the
    machine names the started drives, with the serial number the replaced one answers."""
    replaced = simulator_for_axis(
        parameters,
        "wrist_pitch",
        inertia=control.joint("wrist_pitch").effective_inertia,
        position=START["wrist_pitch"],
        sync_period=control.dt,
        serial_number=0x5EED0005,
    )
    buses = make_buses(simulators={"wrist_pitch": replaced})
    backend = CanopenBackend(parameters, control, buses.config, joints=JOINT_NAMES, feedback_wait=WAIT)
    backend.close()
    nominal = dict(simulated_machine(None, JOINT_NAMES).serials)
    assert backend.machine == MachineIdentity.of({**nominal, "wrist_pitch": 0x5EED0005})
    assert simulated_machine(None).differs_from(backend.machine) == (
        "drive wrist_pitch has serial number 0x5EED0005, the calibrated machine's 0x00000005"
    )


def test_a_drive_whose_serial_number_read_aborts_fails_start_up_naming_the_object(
    make_buses, parameters, control
):
    node = parameters.canopen.node_ids["wrist_pitch"]
    anonymous = WithoutSerialNumber(
        node,
        drive_for_joint(parameters, "wrist_pitch"),
        JointModel(inertia=control.joint("wrist_pitch").effective_inertia, damping=0.0),
        control.dt,
    )
    buses = make_buses(simulators={"wrist_pitch": anonymous})
    with pytest.raises(DriveStartupError) as raised:
        CanopenBackend(parameters, control, buses.config, feedback_wait=WAIT)
    bus = parameters.canopen.channels["wrist_pitch"]
    assert str(raised.value) == (
        f"CAN bus {bus} (virtual channel {buses.config.channels[bus]}): drive wrist_pitch (CANopen "
        f"node {node}): serial number 0x1018:04 not readable: Code 0x06090011, Subindex does not exist"
    )
    assert sdo_uploads(buses.frames(bus), node, *SERIAL_NUMBER_OBJECT) == [("abort", 0x06090011)]
    for axis, sim in buses.simulators.items():
        assert sim.state is Cia402State.SWITCH_ON_DISABLED, axis
        assert wait_until(lambda sim=sim: sim.nmt_state == "PRE-OPERATIONAL"), axis
    assert open_buses(buses.config.channels.values()) == 3 * 2  # the bridge's buses are closed


def test_an_interface_that_does_not_exist_is_named(parameters, control):
    config = CanBusConfig("no-such-interface")
    with pytest.raises(
        DriveStartupError, match=r"^CAN bus can0 \(no-such-interface channel can0\): cannot open"
    ):
        CanopenBackend(parameters, control, config)


def test_bad_bus_configuration_is_refused_before_any_bus_io(parameters, control):
    with pytest.raises(DriveStartupError, match="unknown bus.*can7"):
        CanopenBackend(parameters, control, CanBusConfig("virtual", {"can7": "x"}))
    odd = dataclasses.replace(parameters, canopen=dataclasses.replace(parameters.canopen, sync_period=0.0015))
    with pytest.raises(
        DriveStartupError, match="sync_period 0.0015 s is not a whole number of control periods"
    ):
        CanopenBackend(odd, control, CanBusConfig("virtual"), mode=DriveMode.CSP)
    with pytest.raises(ValueError, match="non-empty"):
        CanBusConfig("")
    with pytest.raises(ValueError, match="feedback wait"):
        CanopenBackend(parameters, control, CanBusConfig("virtual"), feedback_wait=float("nan"))


def test_channel_maps_and_backend_names():
    assert parse_channel_map("") == {}
    assert parse_channel_map("can0=vcan0, can1 = vcan1,") == {"can0": "vcan0", "can1": "vcan1"}
    with pytest.raises(ValueError, match="'can0' is not of the form bus=channel"):
        parse_channel_map("can0")
    with pytest.raises(ValueError, match="twice"):
        parse_channel_map("can0=a,can0=b")
    assert (
        CanBusConfig("socketcan", {"can0": "vcan0"}).describe("can0")
        == "CAN bus can0 (socketcan channel vcan0)"
    )
    assert DRIVE_BACKENDS == ("simulated", "canopen")


# --- hostile bus states (issue 11, item 7) ---------------------------------------------------------
QUICK_STOP_CONTROLWORD = 0x0002  # CiA 402 controlword "Quick stop"


def rpdo1_quick_stops(frames, node_ids) -> dict[int, int]:
    """Node id -> index in `frames` of its first RPDO1 with the Quick stop controlword."""
    first: dict[int, int] = {}
    for k, frame in enumerate(frames):
        node = frame.arbitration_id - 0x200
        if node not in node_ids or node in first or len(frame.data) < 2:
            continue
        if struct.unpack_from("<H", bytes(frame.data))[0] == QUICK_STOP_CONTROLWORD:
            first[node] = k
    return first


def test_with_every_sdo_server_dead_a_fault_quick_stops_every_drive_by_pdo_within_two_cycles(
    make_buses, make_bridge, parameters
):
    """The stop goes by RPDO to every drive before any SDO request: a dead SDO server (0.3 s
    timeout each) delays nobody's stop."""
    buses = make_buses()
    bridge = make_bridge(buses)
    for _ in range(3):
        command_all(bridge, START)
        assert bridge.step(bridge.time).stop_reason is None
    for sim in buses.simulators.values():
        sim.stop_sdo_server()
    for bus in buses.sniffers:
        buses.frames(bus)
    buses.simulators["wrist_yaw"].inject_fault(0x2310)
    samples = []
    for _ in range(2 * bridge.backend.sync_every):  # two SYNC periods from the fault on
        command_all(bridge, START)
        samples.append(bridge.step(bridge.time))
    # By the first SYNC after the fault at the latest (its EMCY, or the statusword).
    first = next(k for k, sample in enumerate(samples) if sample.stop_reason is not None)
    assert first < bridge.backend.sync_every
    reason = samples[first].stop_reason
    assert reason == "drive fault on wrist_yaw: error code 0x2310: continuous over-current"
    for bus in buses.sniffers:
        frames = buses.frames(bus)
        nodes = {parameters.canopen.node_ids[a] for a in parameters.canopen.axes_on(bus)}
        stops = rpdo1_quick_stops(frames, nodes)
        assert set(stops) == nodes, bus  # every drive got its quick stop by PDO
        syncs = [k for k, f in enumerate(frames) if f.arbitration_id == SYNC_ID]
        assert max(stops.values()) < syncs[1], bus  # before the second SYNC after the fault
        sdo = [k for k, f in enumerate(frames) if 0x600 < f.arbitration_id <= 0x67F]
        assert not sdo or min(sdo) > max(stops.values()), bus  # no stop waited on an SDO
    for axis, sim in buses.simulators.items():
        expected = Cia402State.FAULT if axis == "wrist_yaw" else Cia402State.QUICK_STOP_ACTIVE
        assert wait_until(lambda sim=sim, expected=expected: sim.state is expected), axis


# python-can's notifier thread dies on the closed bus (its own exception, not ours).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_bus_off_stops_the_drives_on_every_bus_at_once(make_buses, make_bridge, parameters):
    buses = make_buses()
    bridge = make_bridge(buses, feedback_wait=0.05)
    command_all(bridge, START)
    assert bridge.step(bridge.time).stop_reason is None
    align_to_sync(bridge)
    bridge.backend.networks["can1"].bus.shutdown()  # the interface is gone: every send fails
    command_all(bridge, START)
    sample = bridge.step(bridge.time)
    assert sample.stop_reason is not None and "can1" in sample.stop_reason
    assert "SYNC not sent" in sample.stop_reason
    for axis, sim in buses.simulators.items():
        if parameters.canopen.channels[axis] != "can1":
            assert wait_until(lambda sim=sim: sim.state is Cia402State.QUICK_STOP_ACTIVE), axis


def test_a_boot_up_frame_is_a_fault_at_once(make_buses, make_bridge, parameters):
    buses = make_buses()
    bridge = make_bridge(buses)
    command_all(bridge, START)
    assert bridge.step(bridge.time).stop_reason is None
    node = parameters.canopen.node_ids["gantry_z"]
    buses.slaves["can1"].send_message(0x700 + node, b"\x00")  # CiA 301 boot-up: the node restarted
    assert wait_until(lambda: bridge.drives["gantry_z"].feedback().state is DriveState.FAULT)
    command_all(bridge, START)
    sample = bridge.step(bridge.time)
    assert "gantry_z" in sample.stop_reason and "boot-up" in sample.stop_reason


def test_an_emcy_is_logged_and_is_a_fault(make_buses, make_bridge, parameters):
    buses = make_buses()
    bridge = make_bridge(buses)
    command_all(bridge, START)
    assert bridge.step(bridge.time).stop_reason is None
    buses.simulators["gantry_y"].node.emcy.send(0x3210, 0x01)  # DC link over-voltage, no state change
    drive = bridge.drives["gantry_y"]
    assert wait_until(lambda: len(drive.emcy_log) == 1)
    assert drive.emcy_log[0][1:] == (0x3210, 0x01)
    command_all(bridge, START)
    sample = bridge.step(bridge.time)
    assert sample.stop_reason.startswith("drive fault on gantry_y: error code 0x3210")


# --- the drives watch the master (issue 8) -----------------------------------------------------------
def test_a_drive_node_that_freezes_leaves_every_drive_stopped_by_itself(make_buses, make_bridge, parameters):
    """The bridge's loop stops (no SYNC, no command, no heartbeat) while every drive runs on its
    own clock: each stops itself within drive.master_timeout; when the loop comes back it reports
    the drives' reason and nothing moves again."""
    buses = make_buses()
    bridge = make_bridge(buses)
    for _ in range(10):
        command_all(bridge, START)
        assert bridge.step(bridge.time).stop_reason is None
    # The bridge produced the master's heartbeat: every drive's consumer is armed.
    assert all(sim._last_heartbeat is not None for sim in buses.simulators.values())
    frozen = {axis: sim.time for axis, sim in buses.simulators.items()}
    for sim in buses.simulators.values():
        sim.free_run(0.1)
    for axis, sim in buses.simulators.items():
        assert sim.master_lost is not None, axis
        assert sim.master_lost_time - frozen[axis] <= parameters.drive.master_timeout + 1e-9, axis
        assert sim.state is Cia402State.SWITCH_ON_DISABLED, axis  # category 1 done: braked, off
        assert sim.joint.velocity == 0.0 and sim.drive.brake_engaged, axis
    positions = {axis: sim.joint.position for axis, sim in buses.simulators.items()}
    sample = step_to_sync(bridge)
    assert sample.stop_reason is not None and "error code 0x81" in sample.stop_reason
    for _ in range(5):
        command_all(bridge, START)
        bridge.step(bridge.time)
    assert {axis: sim.joint.position for axis, sim in buses.simulators.items()} == positions
    assert all(sim.state is Cia402State.SWITCH_ON_DISABLED for sim in buses.simulators.values())
