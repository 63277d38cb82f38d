"""Homing (issue 8 item 4) on the simulated drives (incremental encoders) and the MuJoCo plant:
motion before homing is refused naming the joints and nothing moves, the parameter file's order
runs with nothing moving towards the patient (gantry_z never goes down, the tool's lowest point
never goes lower, beyond the drives' sag at power-on), and after homing the same command runs; a
host that dies mid-homing leaves every drive stopped, and the sequence refuses a time that is
not finite or goes back.
"""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.axes.virtual_fixtures import ToolGeometry, tool_segments
from quirobot_control.drive_simulators.simulated_drive import drive_for_joint
from quirobot_control.drives.interface import DriveMode, DriveState
from quirobot_control.hardware.command_interfaces import NotHomedError
from quirobot_control.hardware.component import QuirobotHardware
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.hardware_info import hardware_info_from_urdf
from quirobot_control.hardware.homing import HomingError, homing_sequence
from quirobot_control.hardware.lifecycle import CallbackReturn, ReturnType
from quirobot_control.simulation.plant import MujocoPlant
from quirobot_description.parameters import axes_for
from quirobot_description.urdf import robot_description

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

#: A start pose near the home switches (short homing: about 6 s simulated), the tool pointing up
#: (wrist_pitch -1.2 rad) and the feed out by 4 mm.
Q0 = np.array([0.02, 0.02, 0.03, 0.05, -1.2, 0.004])
#: m: how far gantry_z sags when its drive powers on holding with an empty integrator (the
#: drive's PID builds up the weight's current; measured 0.10 mm).
POWER_ON_SAG = 0.15e-3


class Robot:
    """QuirobotHardware on incremental-encoder SimulatedDrives and the MuJoCo plant."""

    def __init__(self, parameters, mode: DriveMode, urdf=None, master_watchdog=False):
        self.control = control_configuration(parameters)
        self.drives = {
            n: drive_for_joint(parameters, n, absolute_encoder=False, master_watchdog=master_watchdog)
            for n in DRILL_AXES
        }
        self.ordered = [self.drives[n] for n in DRILL_AXES]
        armature = np.array([d.reflected_inertia for d in self.ordered])
        self.plant = MujocoPlant(parameters, armature, self.control.dt / self.control.physics_substeps, urdf)
        self.plant.reset(Q0)
        self.plant.sense(self.ordered)
        self.hardware = QuirobotHardware(parameters, self.control, lambda n: self.drives[n], drive_mode=mode)
        info = hardware_info_from_urdf(robot_description("drill", "real"))
        assert self.hardware.on_init(info) is CallbackReturn.SUCCESS
        assert self.hardware.on_configure() is CallbackReturn.SUCCESS, self.hardware.stop_reason
        self.t = 0.0

    def period(self, action) -> object:
        self.plant.sense(self.ordered)
        result = action(self.t)
        self.plant.step_period(self.ordered, self.control.physics_substeps)
        self.t += self.control.dt
        return result

    def run(self, position, velocity, cycles):
        hw = self.hardware

        def cycle(t):
            assert hw.read(t, self.control.dt) is ReturnType.OK, hw.stop_reason
            hw.set_commands(t, position, velocity)
            assert hw.write(t, self.control.dt) is ReturnType.OK, hw.stop_reason

        for _ in range(cycles):
            self.period(cycle)


@pytest.fixture(scope="module")
def homed_robot(parameters, exported_urdf_factory):
    """The robot homed from Q0 in CSP, with the trace of the homing: joint positions, the tool's
    lowest point and the axis homing at each period."""
    robot = Robot(parameters, DriveMode.CSP, exported_urdf_factory("drill"))
    hw = robot.hardware
    assert hw.unhomed == DRILL_AXES
    # Motion before homing (checked in test_motion_before_homing_is_refused_and_nothing_moves).
    refusals = {"activate": hw.on_activate(), "activate_reason": hw.refused}
    target = Q0 + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.002])  # 2 mm of feed
    for label, command in (
        ("set_commands", lambda: hw.set_commands(0.0, target, np.zeros(6))),
        ("set_command", lambda: hw.set_command("drill_feed", "position", float(target[5]))),
    ):
        try:
            command()
            refusals[label] = None
        except NotHomedError as error:
            refusals[label] = str(error)
    refusals["write"] = hw.write(0.0, robot.control.dt)  # only while active
    for _ in range(200):
        robot.period(lambda t: None)
    refusals["states"] = [d.feedback().state for d in robot.ordered]
    before = robot.plant.position.copy()
    tool = ToolGeometry.from_parameters(parameters)
    trace, lowest, axes = [], [], []
    progress = None
    while progress is None or not progress.done:
        progress = robot.period(hw.home)
        q = robot.plant.position.copy()
        trace.append(q)
        lowest.append(min(float(end[0, 2]) for start, end, _ in tool_segments(q[None], tool).values()))
        axes.append(progress.axis)
        assert robot.t < 60.0, progress
    return robot, before, np.array(trace), np.array(lowest), axes, refusals


def hw_positions(hw):
    return np.array([hw.state(n, "position") for n in DRILL_AXES])


def test_motion_before_homing_is_refused_and_nothing_moves(homed_robot):
    """Before homing: activation refused naming every unhomed joint (the drives stay disabled and
    braked), commands raise NotHomedError naming them, write is refused; nothing moved."""
    _, before, _, _, _, refusals = homed_robot
    assert refusals["activate"] is CallbackReturn.ERROR
    assert refusals["activate_reason"] == (
        "activate refused: gantry_x, gantry_y, gantry_z, wrist_yaw, wrist_pitch, drill_feed not homed; "
        "home() first (while inactive)"
    )
    assert refusals["set_commands"].startswith("motion refused: gantry_x, gantry_y, gantry_z, wrist_yaw")
    assert (
        refusals["set_command"].startswith("motion refused:")
        and "drill_feed not homed" in refusals["set_command"]
    )
    assert refusals["write"] is ReturnType.ERROR
    assert all(state is DriveState.DISABLED for state in refusals["states"])
    np.testing.assert_allclose(before, Q0, atol=1e-5)  # held by the brakes


def test_homing_runs_in_the_parameter_files_order(homed_robot, parameters):
    robot, _, _, _, axes, _ = homed_robot
    order = [a for k, a in enumerate(axes) if a is not None and (k == 0 or axes[k - 1] != a)]
    assert tuple(order) == parameters.homing_order
    assert robot.hardware.unhomed == ()
    assert all(d.feedback().state is DriveState.DISABLED for d in robot.ordered)  # braked, off
    assert all(d.feedback().mode is DriveMode.CSP for d in robot.ordered)


def test_homing_moves_nothing_towards_the_patient(homed_robot, parameters):
    """gantry_z (d3, positive down) never goes down and the tool's lowest point never lower than
    at the start, beyond the power-on sag; every axis ends at its home offset."""
    robot, before, trace, lowest, _, _ = homed_robot
    start_lowest = lowest[0]
    assert trace[:, 2].max() <= before[2] + POWER_ON_SAG
    assert lowest.min() >= start_lowest - POWER_ON_SAG
    homes = np.array([parameters.homing[n].home_offset for n in DRILL_AXES])
    # Each axis stops within its zero speed's stopping distance past the switch's edge.
    np.testing.assert_allclose(trace[-1], homes, atol=2e-3)
    np.testing.assert_allclose(hw_positions(robot.hardware), trace[-1], atol=1e-4)


def test_after_homing_the_same_motion_runs(homed_robot):
    robot, _, _, _, _, _ = homed_robot
    hw = robot.hardware
    assert hw.on_activate() is CallbackReturn.SUCCESS, hw.refused
    start = hw_positions(hw)
    target = start + np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.002])
    # A 2 mm step of the feed through the command limiter (it brakes at the acceleration limit).
    robot.run(target, np.zeros(6), 600)
    assert hw.stop_reason is None
    np.testing.assert_allclose(hw_positions(hw)[5], target[5], atol=1e-5)


def test_a_host_that_dies_during_homing_leaves_every_drive_stopped(parameters, exported_urdf_factory):
    """Issue 19 item 2, issue 32 item 4. The host stops calling home() while gantry_z homes (the
    drives have their master watchdog, drive.master_timeout): every drive stops itself (category 1)
    within the timeout plus a period, gantry_z too, wherever its run is (the sequence held its
    homing command every period: that fed its watchdog); all end braked, inverters off. Before:
    every drive stayed in HOMING mode, powered with its brake released, forever (issue 19), then
    gantry_z went on homing for up to its whole allowance without a master (issue 32)."""
    robot = Robot(parameters, DriveMode.CSP, exported_urdf_factory("drill"), master_watchdog=True)
    hw = robot.hardware
    progress = None
    while progress is None or progress.axis != "gantry_z":
        progress = robot.period(hw.home)
        assert robot.t < 30.0, progress
    for _ in range(100):  # gantry_z homes for 0.1 s
        progress = robot.period(hw.home)
    assert progress.axis == "gantry_z"
    died = robot.t
    stopped_at = {}
    while len(stopped_at) < len(DRILL_AXES) and robot.t - died < 1.0:
        robot.period(lambda t: None)  # the host is gone; the drives and the plant go on
        for name, drive in robot.drives.items():
            if name not in stopped_at and drive.feedback().state is DriveState.QUICK_STOP:
                stopped_at[name] = robot.t - died
    assert set(stopped_at) == set(DRILL_AXES), f"still powered: {set(DRILL_AXES) - set(stopped_at)}"
    timeout, dt = parameters.drive.master_timeout, robot.control.dt
    for name, after in stopped_at.items():
        assert after <= timeout + 2 * dt, (name, after)
        assert robot.drives[name].feedback().fault.startswith("master lost"), name
    assert "during a homing run" in robot.drives["gantry_z"].feedback().fault
    assert not robot.drives["gantry_z"].feedback().homed  # stopped mid-run: home again
    for _ in range(200):  # the category 1 stops end: brake holding, inverter off
        robot.period(lambda t: None)
    for name, drive in robot.drives.items():
        assert drive.brake_engaged and not drive.control.power, name


@pytest.mark.parametrize(
    ("times", "message"),
    [
        ((0.0, float("nan")), "time must be a finite number of seconds, got nan"),
        ((0.0, float("inf")), "time must be a finite number of seconds, got inf"),
        ((float("-inf"),), "time must be a finite number of seconds, got -inf"),
        ((0.0, 1.0, 0.5), "time went back from 1.0 s to 0.5 s"),
        ((0.0, "soon"), "time must be a number of seconds, got 'soon'"),
    ],
)
def test_the_sequence_refuses_a_time_that_is_not_finite_or_goes_back(parameters, times, message):
    """Issue 32 item 4: a NaN never exceeds the allowance and a clock gone back gives the run
    more time, so the sequence never timed out: it took both (and inf) as times. Now each is a
    HomingError naming the axis and the time."""
    drives = {n: drive_for_joint(parameters, n, absolute_encoder=False) for n in DRILL_AXES}
    config = control_configuration(parameters)
    for name, drive in drives.items():
        drive.configure_position_loop(config.joint(name).gains, config.dt)
        drive.advance(0.0, 0.1, 0.0)
    sequence = homing_sequence(parameters, drives, DriveMode.CSP)
    *good, bad = times
    for time in good:
        sequence.step(time)
    with pytest.raises(HomingError, match=f"homing drill_feed: {message}"):
        sequence.step(bad)


def test_the_hardware_stops_every_drive_on_a_non_finite_homing_time(parameters, exported_urdf_factory):
    """Through the hardware component: home(NaN) stops every drive with the sequence's reason."""
    robot = Robot(parameters, DriveMode.CSP, exported_urdf_factory("drill"))
    hw = robot.hardware
    robot.period(hw.home)
    with pytest.raises(HomingError, match="time must be a finite number of seconds, got nan"):
        hw.home(float("nan"))
    assert hw.stop_reason.startswith("homing failed: homing drill_feed: time must be a finite number")
    assert all(d.feedback().state is DriveState.QUICK_STOP for d in robot.ordered)
