"""Stops on the CANopen bus (issue 8): the drives watch their master and stop by themselves.

On python-can's virtual bus (test/support/canopen_rig.py), CanopenDrives in cyclic synchronous position
(CSP, the real motors' mode) against simulated CiA 402 slaves whose drive-side law is the
project's (drives.drive_control through SimulatedDrive). "Freezing" the master means it sends
nothing more (no SYNC, no RPDO, no heartbeat) while each drive runs on its own clock
(`CanopenServoSimulator.free_run`), as a real drive does when its host process stalls. What is
checked comes from the parameter file, not from the code under test: drive.master_timeout (the
consumer heartbeat time), canopen.sync_loss_periods, drive.quick_stop_deceleration (the stop
distance v^2 / (2 a)), the homing switch position.
"""

from __future__ import annotations

import struct

import can
import pytest
from canopen_rig import RigFactory
from virtual_can import sdo_downloads, wait_until

from quirobot_control.drives.cia402 import Cia402State
from quirobot_control.drives.interface import DriveError, DriveMode, DriveState
from quirobot_control.drives.pid import PID
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.homing import homing_sequence
from quirobot_control.planning.tasks import load_task
from quirobot_description.parameters import axes_for, load_parameters

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

pytestmark = pytest.mark.canbus

FEED_START = {"gantry_x": 0.5, "drill_feed": 0.02}
TIP_TRAVEL_LIMIT = 0.2e-3  # m, issue 8: the tip moves less than 0.2 mm after the master froze


@pytest.fixture(scope="module")
def params():
    return load_parameters()


@pytest.fixture(scope="module")
def control(params):
    return control_configuration(params)


@pytest.fixture
def make_rig(params, control):
    factory = RigFactory(params, {axis: control.joint(axis).effective_inertia for axis in DRILL_AXES})
    yield factory.make
    factory.close()


def enable_all(rig, control):
    for axis, drive in rig.drives.items():
        drive.configure_position_loop(control.joint(axis).gains, control.dt)
        drive.enable()


def move(rig, control, speed: float, duration: float, targets: dict[str, float]) -> None:
    """Every axis of the rig moving at `speed` (m/s or rad/s) for `duration` s, one command and
    one SYNC per period: CSP sends the target and the velocity offset; CST runs the host's PID."""
    pids = {}
    for axis, drive in rig.drives.items():
        if drive.mode is DriveMode.CST:
            pids[axis] = PID(control.joint(axis).gains, rig.period)
            pids[axis].reset(drive.feedback().position)
    for _ in range(round(duration / rig.period)):
        for axis, drive in rig.drives.items():
            targets[axis] += speed * rig.period
            if drive.mode is DriveMode.CSP:
                drive.command_position(targets[axis], speed, 0.0)
            else:
                drive.command_current(pids[axis].update(targets[axis], drive.feedback().position, speed))
        rig.step()


def run_frozen(rig, duration: float) -> dict[str, dict]:
    """The master sends nothing for `duration` s; each drive runs on its own clock. Per axis:
    when it found the master lost and stopped itself (s after the master's last SYNC), how far
    its joint moved after that SYNC (m), when it was switched off with the brake holding."""
    out = {}
    for axis, sim in rig.simulators.items():
        last_sync = sim.time - sim.sync_period  # the master's last frame: its last SYNC
        start = sim.joint.position
        switched_off = None
        for _ in range(round(duration / sim.sync_period)):
            sim.free_run(sim.sync_period)
            if switched_off is None and sim.state is Cia402State.SWITCH_ON_DISABLED:
                switched_off = sim.time - last_sync
        out[axis] = {
            "detected": None if sim.master_lost_time is None else sim.master_lost_time - last_sync,
            "travel": abs(sim.joint.position - start),
            "switched_off": switched_off,
            "brake": sim.drive.brake_engaged,
            "reason": sim.master_lost,
        }
    return out


# --- the master freezes in the middle of the feed --------------------------------------------------
@pytest.mark.parametrize("mode", [DriveMode.CSP, DriveMode.CST])
def test_a_master_frozen_mid_feed_leaves_every_drive_stopped_by_itself(make_rig, params, control, mode):
    """Feed at the incision's feed rate, gantry_x moving as fast: the master stops sending."""
    speed = load_task("incision").feed_rate
    assert speed == pytest.approx(0.0015)
    # CST: the host PID needs one SYNC per 1 ms control period (docs/canopen.md).
    period = params.canopen.sync_period if mode is DriveMode.CSP else control.dt
    rig = make_rig(axes=tuple(FEED_START), positions=FEED_START, mode=mode, sync_period=period)
    enable_all(rig, control)
    move(rig, control, speed, 0.3, dict(FEED_START))
    for axis, sim in rig.simulators.items():
        assert sim.joint.velocity == pytest.approx(speed, rel=0.1), axis  # mid-feed
    result = run_frozen(rig, 0.1)
    timeout = params.drive.master_timeout
    sync_loss = params.canopen.sync_loss_periods * params.canopen.sync_period
    assert (timeout, sync_loss) == (0.01, 0.01)
    tip_travel = 0.0
    for axis, r in result.items():
        # Found by the drive itself (SYNC loss or heartbeat) within the heartbeat time ...
        assert r["reason"] is not None and "master lost" in r["reason"], axis
        assert r["detected"] <= timeout + 1e-9, (axis, r)
        # ... then a category 1 stop: ramp, brake at standstill, switched off, braked.
        assert r["switched_off"] is not None and r["brake"], (axis, r)
        # The joint moved at most the feed speed over the detection time plus the ramp.
        deceleration = params.drive.quick_stop_deceleration[axis]
        assert r["travel"] <= speed * timeout + speed**2 / (2 * deceleration) + 10e-6, (axis, r)
        tip_travel += r["travel"]  # both along the tip's path at worst: the sum bounds its travel
    assert tip_travel < TIP_TRAVEL_LIMIT


def test_at_the_fastest_feed_the_tip_still_moves_less_than_the_limit(make_rig, params, control):
    """drill_feed at its velocity limit (tools.drill.feed_velocity, 10 mm/s) when the master freezes."""
    speed = params.drill.feed.velocity
    rig = make_rig(axes=("drill_feed",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    move(rig, control, speed, 0.3, dict(FEED_START))
    result = run_frozen(rig, 0.1)["drill_feed"]
    deceleration = params.drive.quick_stop_deceleration["drill_feed"]
    assert result["detected"] <= params.drive.master_timeout + 1e-9
    assert result["travel"] <= speed * params.drive.master_timeout + speed**2 / (2 * deceleration) + 10e-6
    assert result["travel"] < TIP_TRAVEL_LIMIT


def test_a_sync_timer_that_outlives_the_loop_is_caught_by_the_heartbeat(make_rig, params, control):
    """SYNC from a timer (e.g. SocketCAN's broadcast manager) goes on while the control loop is
    frozen: no command, no heartbeat. The consumer heartbeat (0x1016) stops the drive."""
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    speed = 0.01
    move(rig, control, speed, 0.1, dict(FEED_START))
    sim = rig.simulators["gantry_x"]
    start, frozen_at = sim.joint.position, sim.time
    for _ in range(round(0.05 / rig.period)):  # SYNCs only
        target = rig.drives["gantry_x"].feedback_count + 1
        rig.master.sync.transmit()
        assert rig.drives["gantry_x"].wait_for_feedback(target, 2.0)
    assert "no heartbeat from the master" in sim.master_lost
    # The last heartbeat was at most one heartbeat period before the freeze.
    assert sim.master_lost_time - frozen_at <= params.drive.master_timeout + 1e-9
    assert sim.state in (Cia402State.QUICK_STOP_ACTIVE, Cia402State.SWITCH_ON_DISABLED)
    assert abs(sim.joint.position - start) < TIP_TRAVEL_LIMIT


def test_heartbeats_without_sync_are_a_sync_loss(make_rig, params, control):
    """The heartbeat goes on (its producer alive) but the cycle stopped: SYNC loss stops the drive
    after canopen.sync_loss_periods periods."""
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    move(rig, control, 0.01, 0.1, dict(FEED_START))
    sim = rig.simulators["gantry_x"]
    last_sync = sim.time - sim.sync_period
    for _ in range(2 * params.canopen.sync_loss_periods):
        sim.free_run(sim.sync_period)
        rig.master.send_message(0x700 + params.canopen.master_node_id, bytes([5]))
        assert wait_until(lambda: sim._last_heartbeat == sim.time)
    assert "no SYNC for" in sim.master_lost
    assert sim.master_lost_time - last_sync == pytest.approx(
        params.canopen.sync_loss_periods * params.canopen.sync_period
    )


def test_after_a_master_loss_nothing_restarts_until_an_explicit_reset(make_rig, params, control):
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    targets = dict(FEED_START)
    move(rig, control, 0.01, 0.1, targets)
    run_frozen(rig, 0.1)
    assert sim.state is Cia402State.SWITCH_ON_DISABLED
    # The master comes back: its EMCY told it what happened; the drive stays stopped.
    rig.step()
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT
    assert fb.fault in (
        "error code 0x8100: monitoring",  # SYNC lost (CiA 301 generic communication error)
        "error code 0x8130: life guard or heartbeat error",
    ) or fb.fault.startswith("error code 0x81")
    with pytest.raises(DriveError, match="FAULT"):
        drive.command_position(targets["gantry_x"])
    # A master that restarts and sends Enable operation by RPDO does not restart the drive: from
    # Switch on disabled only Shutdown, Switch on, Enable operation in turn do.
    position = sim.joint.position
    rig.sniffer.send(
        can.Message(arbitration_id=0x201, data=struct.pack("<Hhh", 0x0F, 0, 0), is_extended_id=False)
    )
    rig.step(20)
    assert sim.state is Cia402State.SWITCH_ON_DISABLED and sim.joint.position == position
    with pytest.raises(DriveError, match="reset_fault"):
        drive.enable()
    drive.reset_fault()
    drive.enable()
    assert sim.state is Cia402State.OPERATION_ENABLED
    drive.command_position(position + 1e-4)
    rig.step(100)
    assert sim.joint.position == pytest.approx(position + 1e-4, abs=2e-6)


def test_a_drive_fault_is_not_reset_by_anything_but_a_fault_reset(make_rig, control):
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    sim.inject_fault(0x2310)
    rig.step()
    for controlword in (0x06, 0x07, 0x0F, 0x00, 0x0F):  # every command but the bit-7 edge
        rig.sniffer.send(
            can.Message(
                arbitration_id=0x201, data=struct.pack("<Hhh", controlword, 0, 0), is_extended_id=False
            )
        )
        rig.step(5)
        assert sim.state is Cia402State.FAULT and drive.feedback().state is DriveState.FAULT
    drive.reset_fault()
    assert sim.state is Cia402State.SWITCH_ON_DISABLED
    assert drive.feedback().state is DriveState.DISABLED


def test_the_fault_reaction_depends_on_the_error_code(make_rig, control):
    """0x605E: an over-temperature (0x4310) leaves the drive in control: Fault at once, its quick-stop
    ramp under power, the brake commanded at standstill and held before the power stage goes off;
    an over-current (0x2310) switches the power stage off at once (category 0)."""
    for code, ramps in ((0x4310, True), (0x2310, False)):
        rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
        enable_all(rig, control)
        drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
        sim.inject_fault(code)
        # Ramping under power: Fault reaction active (every controlword ignored), then Fault.
        reacting = Cia402State.FAULT_REACTION_ACTIVE if ramps else Cia402State.FAULT
        assert sim.drive.control.power is ramps and sim.state is reacting
        rig.step()
        assert drive.feedback().state is DriveState.FAULT and drive.feedback().stopping is ramps
        rig.step(25)  # 50 ms: the standstill, the brake's 15 ms, the switch-off
        assert sim.state is Cia402State.FAULT and not drive.feedback().stopping
        assert drive.feedback().state is DriveState.FAULT
        assert sim.drive.brake_engaged and not sim.drive.control.power


def test_disable_operation_brakes_under_power_disable_voltage_switches_off(make_rig, control):
    """Controlword 0x07 in Operation enabled (disable operation, 0x605C = 1): the power stage stays on
    until the brake holds, then Switched on; 0x00 (disable voltage): off at once."""
    for controlword, state, ramps in (
        (0x07, Cia402State.SWITCHED_ON, True),
        (0x00, Cia402State.SWITCH_ON_DISABLED, False),
    ):
        rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
        enable_all(rig, control)
        sim = rig.simulators["gantry_x"]
        rig.sniffer.send(
            can.Message(
                arbitration_id=0x201, data=struct.pack("<Hhh", controlword, 0, 0), is_extended_id=False
            )
        )
        assert wait_until(lambda sim=sim, state=state: sim.state is state)
        assert sim.drive.control.power is ramps
        rig.step(25)  # 50 ms: the brake's 15 ms, the switch-off
        assert sim.state is state and sim.drive.brake_engaged and not sim.drive.control.power


# --- controlled stops -------------------------------------------------------------------------------
def test_a_quick_stop_ramps_at_the_quick_stop_deceleration_then_brakes_and_switches_off(
    make_rig, params, control
):
    """Category 1 from 0.2 m/s on gantry_x: one RPDO, the drive's own ramp (0x6085), the stop
    distance v^2 / (2 a), no following-error trip, brake at standstill, Switch on disabled."""
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    speed = 0.2
    move(rig, control, speed, 0.3, dict(FEED_START))
    assert sim.joint.velocity == pytest.approx(speed, rel=0.01)
    rig.frames()
    start = sim.joint.position
    drive.quick_stop()  # returns at once: one RPDO, no SDO
    frames = rig.frames()
    assert [(f.arbitration_id, struct.unpack("<Hhh", bytes(f.data))[0]) for f in frames] == [(0x201, 0x02)]
    assert wait_until(lambda: sim.state is Cia402State.QUICK_STOP_ACTIVE)
    deceleration = params.drive.quick_stop_deceleration["gantry_x"]
    peak_error = 0.0
    for _ in range(round(0.2 / rig.period)):
        rig.step()
        if sim.drive.control.stopping is not None:
            reference = sim.drive.control.reference[0]
            peak_error = max(peak_error, abs(reference - sim.drive.feedback().position))
    distance = sim.joint.position - start
    predicted = speed**2 / (2 * deceleration)
    assert distance == pytest.approx(predicted, rel=0.05)  # measured 2.77 mm for 2.82 mm
    assert peak_error < control.joint("gantry_x").following_error / 2  # no trip (measured 0.23 of 2 mm)
    assert sim.state is Cia402State.SWITCH_ON_DISABLED and sim.drive.brake_engaged
    fb = drive.feedback()
    assert fb.state is DriveState.QUICK_STOP and fb.fault is None  # latched until reset_fault()


def test_halt_holds_under_power_and_resume_follows_again(make_rig, params, control):
    """Category 2 (controlword bit 8): ramp down and hold in Operation enabled; resume."""
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    targets = dict(FEED_START)
    move(rig, control, 0.05, 0.2, targets)
    rig.frames()
    drive.halt()
    assert struct.unpack("<Hhh", bytes(rig.frames()[-1].data))[0] == 0x010F  # enable operation + halt
    for _ in range(round(0.1 / rig.period)):  # the host keeps commanding: ignored while halted
        targets["gantry_x"] += 0.05 * rig.period
        drive.command_position(targets["gantry_x"], 0.05)
        rig.step()
    held = sim.joint.position
    rig.step(50)
    assert sim.joint.position == pytest.approx(held, abs=1e-6)
    fb = drive.feedback()
    assert fb.state is DriveState.ENABLED and fb.halted
    assert sim.state is Cia402State.OPERATION_ENABLED and not sim.drive.brake_engaged
    drive.resume()
    fb = drive.feedback()
    drive.command_position(fb.position + 1e-4)
    rig.step(100)
    assert sim.joint.position == pytest.approx(fb.position + 1e-4, abs=2e-6)
    assert not drive.feedback().halted


def test_commands_of_another_mode_are_refused_naming_both(make_rig, control):
    rig = make_rig(axes=("gantry_x",), mode=DriveMode.CSP)
    drive = rig.drives["gantry_x"]
    with pytest.raises(DriveError, match="needs the drive's position loop"):
        drive.enable()
    enable_all(rig, control)
    with pytest.raises(DriveError, match="command_current is a CST command, the drive is in CSP"):
        drive.command_current(1.0)
    with pytest.raises(DriveError, match="only while not enabled"):
        drive.set_mode(DriveMode.CST)
    with pytest.raises(DriveError, match="start_homing is a HOMING command"):
        drive.start_homing()


# --- homing -----------------------------------------------------------------------------------------
def test_homing_on_the_bus_finds_the_switch_and_reports_homed(make_rig, params, control):
    """An incremental encoder (counts from power-up) is referenced by CiA 402 homing: method 17
    towards the switch at homing.gantry_x.switch_position, its falling edge reads home_offset."""
    homing = params.homing["gantry_x"]
    start = homing.switch_position + 0.01
    rig = make_rig(
        axes=("gantry_x",), positions={"gantry_x": start}, mode=DriveMode.HOMING, absolute_encoder=False
    )
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    assert sdo_downloads([], 1, 0x6098) == []
    assert not drive.feedback().homed and drive.feedback().position == pytest.approx(0.0, abs=1e-6)
    enable_all(rig, control)
    drive.start_homing()
    for _ in range(round(2.0 / rig.period)):
        rig.step()
        if drive.feedback().homed:
            break
    fb = drive.feedback()
    assert fb.homed and fb.mode is DriveMode.HOMING
    # Now the position reads the joint coordinate (home_offset is the switch's position).
    assert fb.position == pytest.approx(sim.joint.position, abs=homing.zero_speed * control.dt + 1e-6)
    # It never went beyond the switch by more than the stop from the search speed.
    assert sim.joint.position >= homing.switch_position - homing.switch_speed**2 / homing.acceleration
    drive.disable()
    drive.set_mode(DriveMode.CSP)
    drive.enable()
    drive.command_position(fb.position + 1e-3)
    rig.step(200)
    assert sim.joint.position == pytest.approx(fb.position + 1e-3, abs=2e-6)
    assert drive.feedback().homed
    # The node restarts (power loss, reset: its boot-up frame): a fault, and the incremental
    # position is lost with it; the fault reset does not bring it back.
    sim.reboot()
    assert wait_until(lambda: drive.feedback().state is DriveState.FAULT)
    assert "boot-up" in drive.feedback().fault and not drive.feedback().homed
    drive.reset_fault()
    assert not drive.feedback().homed


def test_an_absolute_drive_stays_homed_through_a_restart_but_not_an_encoder_fault(make_rig):
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP, absolute_encoder=True)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    assert drive.feedback().homed
    rig.sniffer.send(can.Message(arbitration_id=0x701, data=bytes([0]), is_extended_id=False))
    assert wait_until(lambda: drive.feedback().state is DriveState.FAULT)
    assert "boot-up" in drive.feedback().fault and drive.feedback().homed
    # An encoder fault: the position is no longer trusted, reset or not.
    sim.inject_fault(0x7305)
    rig.step()
    assert not drive.feedback().homed
    assert "encoder" in drive.read_error_code()


# --- issue 19: acknowledging during a ramp, a node that restarts -------------------------------------
def test_a_fault_reset_during_the_ramp_is_refused_and_the_drive_finishes_its_stop(make_rig, params, control):
    """Issue 19 item 1 on the bus. gantry_z at 0.2 m/s (down, towards the patient), quick stop; the
    master's reset_fault() at once is refused naming the stop in progress and sends nothing (no
    Disable voltage mid-ramp); a Disable voltage sent anyway (another master) does not cut the
    drive's ramp either. The joint stops within v^2 / (2 a) and brakes at standstill. Before: the
    reset's Disable voltage switched the power stage off at once and the joint coasted on
    (measured: 3.16 mm to the brake for the ramp's 1.36 mm; now 1.32 mm)."""
    rig = make_rig(axes=("gantry_z",), positions={"gantry_z": 0.3}, mode=DriveMode.CSP)
    enable_all(rig, control)
    drive, sim = rig.drives["gantry_z"], rig.simulators["gantry_z"]
    speed = 0.2
    move(rig, control, speed, 0.3, {"gantry_z": 0.3})
    start = sim.joint.position
    drive.quick_stop()
    assert wait_until(lambda: sim.state is Cia402State.QUICK_STOP_ACTIVE)
    rig.step()
    assert drive.feedback().stopping and drive.feedback().confirmed
    rig.frames()
    with pytest.raises(DriveError, match="stop still in progress .*Quick stop active"):
        drive.reset_fault()
    assert sdo_downloads(rig.frames(), sim.node.id, 0x6040) == []  # no controlword written
    rig.sniffer.send(
        can.Message(arbitration_id=0x205, data=struct.pack("<Hhh", 0x00, 0, 0), is_extended_id=False)
    )
    rig.step()
    assert sim.state is Cia402State.QUICK_STOP_ACTIVE and sim.drive.control.power
    speed_at_brake = None
    for _ in range(round(0.3 / rig.period)):
        rig.step()
        if speed_at_brake is None and sim.drive.brake_engaged:
            speed_at_brake = abs(sim.joint.velocity)
    predicted = speed**2 / (2 * params.drive.quick_stop_deceleration["gantry_z"])
    assert sim.joint.position - start == pytest.approx(predicted, rel=0.05)
    assert speed_at_brake is not None and speed_at_brake < 1e-3
    assert sim.state is Cia402State.SWITCH_ON_DISABLED and not drive.feedback().stopping
    drive.reset_fault()  # complete: the reset goes through
    assert drive.feedback().state is DriveState.DISABLED


def test_a_restarted_node_is_reconfigured_before_it_is_enabled(make_rig, params, control):
    """Issue 19 item 9. The node restarts (boot-up frame: pre-operational, the EDS defaults: no
    consumer heartbeat, abort-connection option 1, no PDO until started). The master latches a
    fault; its fault reset configures the node again as at start-up (stop options, heartbeat
    watch, PDOs, NMT operational) before it clears the fault, so after enable() the next quick stop
    (one RPDO) reaches the drive. Before: acknowledge + enable powered the node up
    pre-operational and unconfigured, the quick stop RPDO was ignored, and the master called
    the stop confirmed."""
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    move(rig, control, 0.01, 0.05, dict(FEED_START))
    sim.reboot()
    assert wait_until(lambda: drive.feedback().state is DriveState.FAULT)
    fb = drive.feedback()
    assert "boot-up" in fb.fault and not fb.stopping and fb.confirmed  # it boots switched off
    assert sim.nmt_state == "PRE-OPERATIONAL" and sim.node.sdo[0x6007].raw == 1
    drive.reset_fault()
    assert wait_until(lambda: sim.nmt_state == "OPERATIONAL")  # the NMT command is not confirmed
    assert sim.node.sdo[0x605A].raw == 2 and sim.node.sdo[0x6007].raw == 3
    milliseconds = round(params.drive.master_timeout * 1000)
    assert sim.node.sdo[0x1016][1].raw == params.canopen.master_node_id << 16 | milliseconds
    rig.step()  # the first TPDOs of the restarted node: enable() waits for them
    drive.configure_position_loop(control.joint("gantry_x").gains, control.dt)
    drive.enable()
    assert sim.state is Cia402State.OPERATION_ENABLED
    rig.step(5)
    drive.quick_stop()
    assert wait_until(lambda: sim.state is Cia402State.QUICK_STOP_ACTIVE)
    rig.step()
    assert drive.feedback().confirmed


def test_a_stop_that_cannot_reach_the_drive_is_never_confirmed(make_rig, control):
    """Issue 19 item 9: the node left operational (here an NMT command; after a restart it is
    pre-operational), so the quick stop RPDO does not reach it. The master's state says QUICK_STOP
    (latched) but not confirmed by the drive; after the feedback timeout it is a FAULT, still not
    a confirmed stop; the fault reset is refused while the drive reports Operation enabled."""
    rig = make_rig(axes=("gantry_x",), positions=FEED_START, mode=DriveMode.CSP)
    enable_all(rig, control)
    drive, sim = rig.drives["gantry_x"], rig.simulators["gantry_x"]
    rig.step(3)
    rig.sniffer.send(can.Message(arbitration_id=0x000, data=bytes([0x80, sim.node.id]), is_extended_id=False))
    assert wait_until(lambda: sim.nmt_state == "PRE-OPERATIONAL")
    drive.quick_stop()
    fb = drive.feedback()
    assert fb.state is DriveState.QUICK_STOP and not fb.confirmed
    assert sim.state is Cia402State.OPERATION_ENABLED  # the RPDO did not reach it
    rig.clock.now += 2 * rig.params.canopen.feedback_timeout
    fb = drive.feedback()
    assert fb.state is DriveState.FAULT and not fb.confirmed
    with pytest.raises(DriveError, match="stop still in progress .*Operation enabled"):
        drive.reset_fault()


def test_the_homing_sequence_homes_on_the_bus_holding_its_command(make_rig, params, control):
    """The homing sequence holds the homing drive's command every period (start_homing() again,
    what feeds a simulated drive's master watchdog during its run): on the bus the run goes on
    (controlword bit 4 stays set, no new rising edge), so each axis homes and the hand-over leaves
    both braked and off in CSP. A start_homing() that sent its edge again restarted the run every
    period: gantry_z never reached its switch."""
    axes = ("drill_feed", "gantry_z")
    positions = {"drill_feed": 0.004, "gantry_z": 0.03}
    rig = make_rig(axes=axes, positions=positions, mode=DriveMode.CSP, absolute_encoder=False)
    for axis, drive in rig.drives.items():
        drive.configure_position_loop(control.joint(axis).gains, control.dt)
    sequence = homing_sequence(params, rig.drives, DriveMode.CSP)
    t, progress = 0.0, None
    while progress is None or not progress.done:
        progress = sequence.step(t)
        rig.step()
        t += rig.period
        assert t < 30.0, progress
    assert progress.homed == axes
    for axis, drive in rig.drives.items():
        fb = drive.feedback()
        assert fb.homed and fb.mode is DriveMode.CSP and fb.state is DriveState.DISABLED, (axis, fb)
        assert fb.position == pytest.approx(params.homing[axis].home_offset, abs=2e-3), axis


def test_a_master_that_dies_during_homing_leaves_every_drive_stopped(make_rig, params, control):
    """Issue 19 item 2 on the bus: the homing sequence (hardware.homing) runs over CANopen, drill_feed
    homed and gantry_z homing (drill_feed holding in CSP with the sequence's commands), when the
    master freezes (no SYNC, no heartbeat, no command). Every drive stops itself (the CiA 301
    watchdogs act in every mode, the homing drive's too: at once, within its allowance) within
    drive.master_timeout, ends in Switch on disabled with its brake holding."""
    axes = ("drill_feed", "gantry_z")
    positions = {"drill_feed": 0.004, "gantry_z": 0.03}
    rig = make_rig(axes=axes, positions=positions, mode=DriveMode.CSP, absolute_encoder=False)
    for axis, drive in rig.drives.items():
        drive.configure_position_loop(control.joint(axis).gains, control.dt)
    sequence = homing_sequence(params, rig.drives, DriveMode.CSP)
    t, progress = 0.0, None
    homing_since = None
    while homing_since is None or t - homing_since < 0.1:  # gantry_z homes for 0.1 s
        progress = sequence.step(t)
        rig.step()
        t += rig.period
        if homing_since is None and progress.axis == "gantry_z":
            homing_since = t
        assert t < 30.0, progress
    assert progress.homed == ("drill_feed",)
    assert rig.drives["drill_feed"].mode is DriveMode.CSP and rig.drives["gantry_z"].mode is DriveMode.HOMING
    result = run_frozen(rig, 0.1)
    for axis, r in result.items():
        assert r["reason"] is not None and "master lost" in r["reason"], axis
        assert r["detected"] <= params.drive.master_timeout + 1e-9, (axis, r)
        assert r["switched_off"] is not None and r["brake"], (axis, r)
