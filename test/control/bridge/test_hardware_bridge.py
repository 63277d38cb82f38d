"""DriveBridge (the ROS-free core of drive_node): JointState commands in, joint states out.

The commands are what joint_state_topic_hardware_interface publishes (see drive_bridge's module
docstring): NaN on every interface until a controller writes one, then the controller's
commands, once per controller-manager cycle. The clock is the adapter's (`now`, s).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from quirobot_control.bridge.drive_bridge import BridgeError, DriveBridge
from quirobot_control.drives.interface import DriveState
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.parameters import JOINT_NAMES, axes_for
from quirobot_description.urdf import robot_description
from quirobot_description.validation import FAIL, check_urdf

#: The drill's commanded axes: the arm's joints, then the feed.
DRILL_AXES = axes_for("drill")

START = [0.8, 0.9, 1.0, 1.5, 0.5, 0.004]
FEED = DRILL_AXES.index("drill_feed")
NAMES = list(DRILL_AXES)
NAN = [math.nan] * len(NAMES)


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


@pytest.fixture(scope="module")
def drill_real():
    return robot_description("drill", "real")


@pytest.fixture()
def bridge(parameters, control, drill_real):
    with simulated_bridge(parameters, control, drill_real, now=0.0, initial=START) as bridge:
        yield bridge


def run(bridge: DriveBridge, seconds: float, *, clock_step: float | None = None, command=None, start=0.0):
    """Step the bridge for `seconds` of control periods; the clock advances `clock_step` s per
    period (default: the period); `command` (list of positions) is sent before each step."""
    clock_step = bridge.dt if clock_step is None else clock_step
    now, sample = start, None
    for _ in range(round(seconds / bridge.dt)):
        if command is not None:
            bridge.command(NAMES, command, [0.0] * len(NAMES), now=now)
        sample = bridge.step(now)
        now += clock_step
    return sample, now


def stopped(bridge: DriveBridge) -> bool:
    return all(d.feedback().state is DriveState.QUICK_STOP for d in bridge.drives.values())


def test_commands_are_tracked_and_states_published(bridge):
    target = np.array(START) + np.array([0.002, -0.002, 0.002, 0.01, -0.01, 0.001])
    for k in range(1, 301):
        s = min(k / 200.0, 1.0)  # a 0.2 s ramp
        bridge.command(NAMES, list(START + s * (target - START)), [], now=k * bridge.dt)
        sample = bridge.step(k * bridge.dt)
    assert sample.names == DRILL_AXES
    assert sample.stop_reason is None
    np.testing.assert_allclose(sample.position, target, atol=2e-6)
    np.testing.assert_allclose(bridge.backend.plant.position, target, atol=2e-6)
    assert sample.time == pytest.approx(0.3)


def test_between_commands_the_hold_carries_position_and_velocity_on_at_the_commanded_acceleration(bridge):
    """Commands every 4th period (a 250 Hz controller manager on the 1 kHz drives): in the periods
    between, the hardware's commands are the last command carried on at the acceleration since the
    one before, exact for a constant acceleration (second order). A first-order hold left the
    velocity a staircase: 57 um of feed error at 250 Hz, the hole 9 um deeper."""
    acceleration = np.array([0.05, -0.05, 0.05, 0.2, -0.2, 0.02])  # m/s^2, rad/s^2

    def planned(t: float) -> tuple[np.ndarray, np.ndarray]:
        return START + 0.5 * acceleration * t * t, acceleration * t

    hw = bridge.hardware
    gaps = []
    for k in range(0, 200):
        t = k * bridge.dt
        if k % 4 == 0:
            q, v = planned(t)
            bridge.command(NAMES, list(q), list(v), now=t)
        bridge.step(t)
        if k >= 8 and k % 4:
            q, v = planned(t)
            commanded = [hw.joints[j].command for j in range(len(NAMES))]
            gaps.append(
                max(
                    max(abs(c["position"] - q[j]) for j, c in enumerate(commanded)),
                    max(abs(c["velocity"] - v[j]) for j, c in enumerate(commanded)),
                )
            )
    assert bridge.status().stop_reason is None
    assert max(gaps) < 1e-12


def test_a_partial_command_keeps_the_other_joints(bridge):
    # A controller takes over at the measured pose; then a 0.5 mm step of the feed: the safety
    # layer's command limiter takes it at the feed's acceleration limit (0.1 m/s^2: about
    # 0.14 s), so 0.2 s.
    bridge.command(NAMES, START, [0.0] * len(NAMES), now=0.0)
    assert bridge.started
    for k in range(200):
        bridge.command(["drill_feed"], [0.0045], [0.0], now=k * bridge.dt)
        sample = bridge.step(k * bridge.dt)
    np.testing.assert_allclose(sample.position[:5], START[:5], atol=2e-6)
    assert sample.position[5] == pytest.approx(0.0045, abs=5e-6)


def test_malformed_commands_are_refused_by_name(bridge):
    with pytest.raises(BridgeError, match="unknown joint 'elbow'"):
        bridge.command(["elbow"], [0.0], now=0.0)
    with pytest.raises(BridgeError, match="2 names, 1 positions"):
        bridge.command(["gantry_x", "gantry_y"], [0.1], now=0.0)


# --- command watchdog: the adapter's clock ---------------------------------------------------------
def test_silence_from_ros2_control_stops_the_drives(bridge, control):
    bridge.command(NAMES, START, [], now=0.0)
    sample, _ = run(bridge, control.watchdog_stop_timeout + 0.005)
    assert "command watchdog" in sample.stop_reason
    assert stopped(bridge)


def test_the_watchdog_measures_the_clock_not_the_periods_run(bridge, control):
    # The loop runs late (5 ms of clock per 1 ms period): the commands go stale in real time,
    # after a fifth of the periods a counting watchdog would wait for.
    bridge.command(NAMES, START, [], now=0.0)
    late = 5 * bridge.dt
    sample, now = run(bridge, 0.95 * control.watchdog_stop_timeout / 5, clock_step=late)
    assert sample.stop_reason is None
    sample, _ = run(bridge, 0.1 * control.watchdog_stop_timeout / 5, clock_step=late, start=now)
    assert sample.stop_reason.startswith("command watchdog: no command for")
    assert stopped(bridge)


def test_a_frozen_clock_does_not_disable_the_watchdog(bridge, control):
    bridge.command(NAMES, START, [], now=7.0)
    sample, _ = run(bridge, control.watchdog_stop_timeout + 0.005, clock_step=0.0, start=7.0)
    assert sample.stop_reason.startswith("command watchdog: no command for")
    assert stopped(bridge)


def test_a_non_finite_clock_stops_the_drives(bridge):
    bridge.command(NAMES, START, [], now=0.0)
    sample = bridge.step(math.nan)
    assert sample.stop_reason == "command watchdog: clock time nan is not finite"
    assert stopped(bridge)


def test_commands_on_every_cycle_hold_the_robot_indefinitely(bridge, control):
    # What the plugin sends with trigger_joint_command_threshold -1 while the robot holds still.
    sample, _ = run(bridge, 3 * control.watchdog_stop_timeout, command=START)
    assert sample.stop_reason is None
    np.testing.assert_allclose(sample.position, START, atol=2e-6)


def test_the_real_description_makes_the_plugin_publish_on_every_cycle(parameters, drill_real):
    # joint_state_topic_hardware_interface's write() publishes only while
    # sum |position state - position command| > trigger_joint_command_threshold (default 1e-5):
    # a robot holding still (sum ~ 0) would get no command and the watchdog would stop it.
    root = ET.fromstring(drill_real)
    hardware = root.find("ros2_control/hardware")
    assert hardware.findtext("plugin").strip() == "joint_state_topic_hardware_interface/JointStateTopicSystem"
    params = {p.get("name"): p.text.strip() for p in hardware.findall("param")}
    assert float(params["trigger_joint_command_threshold"]) < 0.0
    spamless = drill_real.replace(
        '<param name="trigger_joint_command_threshold">-1</param>',
        '<param name="trigger_joint_command_threshold">1e-5</param>',
    )
    results = {r.name: r for r in check_urdf(spamless, parameters, samples=10)}
    assert results["ros2_control"].status == FAIL
    assert any(
        "trigger_joint_command_threshold '1e-5' must be negative" in p
        for p in results["ros2_control"].problems
    )


# --- start-up handshake ----------------------------------------------------------------------------
def test_the_plugins_initial_nan_commands_are_not_commands(bridge, control):
    # Before a controller writes its command interfaces, the plugin publishes NaN.
    sample, now = run(bridge, 0.2, command=NAN)
    assert sample.stop_reason is None
    assert not bridge.started
    np.testing.assert_allclose(sample.position, START, atol=2e-6)
    # Nor do they count as the first command: the hardware's watchdog, armed at activation, gives
    # a controller watchdog_startup_timeout to come up, not the running stream's stop timeout...
    sample, now = run(bridge, 2 * control.watchdog_stop_timeout, start=now)
    assert sample.stop_reason is None
    np.testing.assert_allclose(sample.position, START, atol=2e-6)
    # ...and a hold that never receives a command stops after it (the adapter's clock).
    sample = bridge.step(control.watchdog_startup_timeout + 0.01)
    assert sample.stop_reason.startswith("command watchdog: no command since activation")
    assert stopped(bridge)


def test_placeholder_commands_far_from_the_robot_are_ignored_and_noted(bridge):
    # topic_based_ros2_control's initial commands: 0.0 (or the state's initial_value).
    sample, _ = run(bridge, 0.1, command=[0.0] * len(NAMES))
    assert sample.stop_reason is None
    np.testing.assert_allclose(sample.position, START, atol=2e-6)
    assert not bridge.started
    assert bridge.events == [
        "start-up: ignored a command of gantry_x at 0, 0.8 from its measured 0.8, beyond its takeover "
        "tolerance 5e-05 (a controller taking over commands the measured position)"
    ]


def test_the_first_controller_command_arms_the_watchdog(bridge, control):
    _, now = run(bridge, 0.05, command=NAN)
    hold = list(START)  # joint_trajectory_controller on activation: the current state
    _, now = run(bridge, 0.05, command=hold, start=now)
    assert bridge.started
    assert bridge.events[-1].startswith("start-up: first controller command accepted, command watchdog armed")
    sample, _ = run(bridge, control.watchdog_stop_timeout + 0.005, start=now)
    assert sample.stop_reason.startswith("command watchdog: no command for")


def test_after_an_enable_the_stopped_controllers_last_commands_are_no_takeover(bridge, control):
    """After a stop the plugin still sends the stopped controllers' last commands, short of where
    the stop left the axes (within the following-error limit: a ROS-tier enable took one and moved
    gantry_z 0.32 mm, the feed 0.08 mm, bit in bone). The drives hold the measured pose until a
    controller takes over there (within the takeover tolerance), and the stale ones are noted."""
    _, now = run(bridge, 0.05, command=START)
    assert bridge.started
    bridge.drives["drill_feed"].inject_fault("injected (test)")
    now = run(bridge, 0.01, command=START, start=now)[1]
    while any(bridge.drives[n].feedback().stopping for n in NAMES):  # the stop runs to standstill
        now = run(bridge, 0.01, start=now)[1]
        assert now < 5.0, "the stop did not reach standstill in 5 s"
    assert bridge.acknowledge_stop("test").startswith("stop acknowledged")
    assert bridge.enable(now) == "enabled"
    here = np.array(bridge.sample().position)
    stale = here + np.array([0.0, 0.0, 3.2e-4, 0.0, 0.0, 8e-5])
    for name, offset in (("gantry_z", 3.2e-4), ("drill_feed", 8e-5)):
        joint = control.joint(name)
        assert joint.takeover_tolerance < offset < joint.following_error, name
    sample, now = run(bridge, 0.2, command=list(stale), start=now)
    assert sample.stop_reason is None
    assert not bridge.started
    np.testing.assert_allclose(sample.position, here, atol=2e-6)  # nothing moved
    assert any(e.startswith("start-up: ignored a command of gantry_z") for e in bridge.events), bridge.events
    _, now = run(bridge, 0.01, command=list(here), start=now)  # the controller takes over here
    assert bridge.started
    assert bridge.events[-1].startswith("start-up: first controller command accepted")


@pytest.mark.parametrize(
    ("interface", "joint", "reason"),
    [
        ("position", 2, "non-finite position command nan for joint gantry_z"),
        ("velocity", 4, "non-finite velocity command inf for joint wrist_pitch"),
    ],
)
def test_after_the_handshake_a_non_finite_command_stops_every_drive_naming_it(
    bridge, interface, joint, reason
):
    _, now = run(bridge, 0.05, command=START)
    position, velocity = list(START), [0.0] * len(NAMES)
    if interface == "position":
        position[joint] = math.nan
    else:
        velocity[joint] = math.inf
    bridge.command(NAMES, position, velocity, now=now)
    sample = bridge.step(now)
    assert sample.stop_reason == reason
    assert stopped(bridge)


# --- the joints come from the launched description ---------------------------------------------------
def test_the_drives_follow_the_robot_description(parameters, control):
    arthroscope = robot_description("arthroscope", "real")
    with simulated_bridge(parameters, control, arthroscope, now=0.0, initial=START) as bridge:
        assert bridge.names == axes_for("arthroscope") == JOINT_NAMES  # the arm's joints, no feed
        assert list(bridge.drives) == list(JOINT_NAMES)
        with pytest.raises(BridgeError, match="unknown joint 'drill_feed'"):
            bridge.command(NAMES, START, now=0.0)
        target = np.array(START[:5]) + [0.001, 0.0, -0.001, 0.0, 0.005]
        for k in range(300):
            s = min(k / 200.0, 1.0)
            bridge.command(list(JOINT_NAMES), list(START[:5] + s * (target - START[:5])), now=k * bridge.dt)
            sample = bridge.step(k * bridge.dt)
        assert sample.stop_reason is None
        assert sample.names == JOINT_NAMES
        np.testing.assert_allclose(sample.position, target, atol=2e-6)
        # The plant's feed axis has no drive: its brake holds it where it started.
        assert bridge.backend.plant.position[5] == pytest.approx(START[5], abs=1e-6)


# --- the hardware's lifecycle from outside (drive_node's services), status, diagnostics ------------
def test_a_drive_fault_latches_until_acknowledged_then_enable_drives_again(bridge, control):
    from quirobot_control.bridge.diagnostics import ERROR, OK, drive_diagnostics

    sample, now = run(bridge, 0.05, command=START)
    assert bridge.status().enabled and not drive_diagnostics(bridge.status())[0].level
    bridge.drives["drill_feed"].inject_fault("overcurrent in phase U")
    sample, now = run(bridge, 0.05, command=START, start=now)
    assert "drive fault on drill_feed: overcurrent in phase U" in sample.stop_reason
    status = bridge.status()
    assert status.lifecycle == "inactive" and not status.enabled
    entries = {entry.name: entry for entry in drive_diagnostics(status)}
    assert entries["quirobot/drives"].level == ERROR
    assert "overcurrent in phase U" in entries["quirobot/drives"].message
    assert entries["quirobot/drives/drill_feed"].level == ERROR
    assert dict(entries["quirobot/drives/drill_feed"].values)["state"] == "fault"
    # Stopped, the state published is the drives' own feedback (the hardware reads nothing).
    for name, position in zip(NAMES, sample.position, strict=True):
        assert position == bridge.drives[name].feedback().position
    with pytest.raises(BridgeError, match="acknowledge_stop"):
        bridge.enable(now)
    assert bridge.acknowledge_stop("test: fault cleared").startswith(
        "stop acknowledged: drive fault on drill_feed"
    )
    assert bridge.status().stop_reason is None and not bridge.status().enabled
    assert any("stop acknowledged (test: fault cleared)" in event for event in bridge.hardware.events)
    assert bridge.enable(now) == "enabled"
    assert not bridge.started  # the start-up handshake again
    target = list(START)
    target[FEED] += 0.001
    for k in range(300):
        s = min(k / 200.0, 1.0)
        command = [a + s * (b - a) for a, b in zip(START, target, strict=True)]
        bridge.command(NAMES, command, [], now=now)
        sample = bridge.step(now)
        now += bridge.dt
    assert bridge.started and sample.stop_reason is None
    np.testing.assert_allclose(sample.position, target, atol=2e-6)
    assert all(entry.level == OK for entry in drive_diagnostics(bridge.status()))


def test_disable_switches_the_drives_off_and_enable_back_on(bridge):
    _, now = run(bridge, 0.02, command=START)
    assert bridge.disable() == "disabled"
    assert bridge.disable() == "already disabled"
    assert all(d.feedback().state is DriveState.DISABLED for d in bridge.drives.values())
    status = bridge.status()
    assert status.lifecycle == "inactive" and status.stop_reason is None
    assert [drive.state for drive in status.drives] == ["disabled"] * len(NAMES)
    sample, now = run(bridge, 0.02, command=START, start=now)
    assert sample.stop_reason is None  # disabled is no stop
    assert bridge.enable(now) == "enabled"
    assert all(d.feedback().state is DriveState.ENABLED for d in bridge.drives.values())
    sample, _ = run(bridge, 0.1, command=START, start=now)
    assert sample.stop_reason is None and bridge.status().enabled


def test_status_reports_each_drive_measured(bridge):
    run(bridge, 0.02, command=START)
    status = bridge.status()
    assert [drive.name for drive in status.drives] == NAMES
    for drive, start in zip(status.drives, START, strict=True):
        assert drive.state == "enabled" and drive.fault is None and drive.homed
        assert drive.position == pytest.approx(start, abs=2e-6)
        assert math.isfinite(drive.current)
    assert status.homed and status.enabled


def test_drives_that_need_homing_start_disabled_and_home_through_the_bridge(parameters, control, drill_real):
    # Near the home switches, the tool pointing up (test_homing's start): about 6 s of homing.
    near_switches = [0.02, 0.02, 0.03, 0.05, -1.2, 0.004]
    with simulated_bridge(
        parameters, control, drill_real, now=0.0, initial=near_switches, absolute_encoders=False
    ) as bridge:
        status = bridge.status()
        assert not status.homed and not status.enabled and status.stop_reason is None
        assert [drive.homed for drive in status.drives] == [False] * len(NAMES)
        assert "not homed" in bridge.events[-1]
        with pytest.raises(BridgeError, match="not homed"):
            bridge.enable(0.0)
        assert bridge.home() == "homing started"
        now = 0.0
        while bridge.homing:
            sample = bridge.step(now)
            now += bridge.dt
            assert now < 30.0 and sample.stop_reason is None, sample.stop_reason
        assert bridge.events[-1].startswith("homing done")
        assert bridge.status().homed and not bridge.status().enabled
        assert bridge.enable(now) == "enabled"
        hold = list(bridge.step(now).position)
        sample, _ = run(bridge, 0.05, command=hold, start=now)
        assert sample.stop_reason is None and bridge.started
