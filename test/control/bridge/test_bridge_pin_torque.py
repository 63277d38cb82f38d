"""The pin insertion's torque monitor on the robot path: drive_node's DriveBridge with a pin goal's
insertion (bridge.pin_in_force), on the simulated backend with the pin driver mounted and a
threaded pin in the bone (SimulatedBackend.place_pin).

The feed follows the thread here as a pin executor's controller would (feed = pitch x the
driver's revolutions, commanded every period), so the pin's depth is the feed's travel and the
driver carries models.pin_insertion's torque at it. Cross-checked against `quirobot simulate
--task pin` (simulation.pin_procedure.insert_pin), which runs the same monitor on its own
spindle-and-feed model: a bone hard enough to pass the limit stops both, at the same depth.
"""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from quirobot_control.bridge.drive_bridge import BridgeError
from quirobot_control.drives.interface import DriveState
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.hardware.lifecycle import LifecycleState
from quirobot_control.planning.tasks import load_task
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.safety.pin_torque import PinInsertion, PinTorqueMonitor
from quirobot_control.safety.stop_codes import StopCode
from quirobot_control.simulation.pin_procedure import insert_pin, load_pin
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.data_files import find_data_file
from quirobot_description.parameters import DrillParameters, axes_for
from quirobot_description.urdf import robot_description

pytest.importorskip("mujoco")

DRILL_AXES = axes_for("drill")
#: The arm anywhere reachable, the feed retracted to its soft limit: the pin's whole stroke ahead.
START = [0.8, 0.9, 1.0, 1.5, 0.5, 0.002]
FEED = DRILL_AXES.index(DrillParameters.feed_joint)
#: A bone 1.6 times harder than imaged: both cortices engaged give 1.6 x 5.2 = 8.3 N*m, past the
#: shipped task's 8 N*m limit in the far cortex (and below its driver's 10 N*m).
HARD_BONE = 1.6


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


@pytest.fixture(scope="module")
def pin_task():
    return load_pin(find_data_file("config/tasks/pin.yaml"))


def insertion(task, goal_id: str = "pin-1") -> PinInsertion:
    return PinInsertion(goal_id, PinTorqueMonitor(task.torque_limit, task.depth), task.speed)


def pin_bridge(parameters, control, task, factor: float):
    """A bridge with the pin driver mounted and the pin at the bone surface, held at START."""
    bridge = simulated_bridge(parameters, control, robot_description("drill", "real"), now=0.0, initial=START)
    driver = dataclasses.replace(
        parameters.drilling.spindle, speed=task.speed, max_torque=task.driver_max_torque
    )
    bridge.backend.place_pin(task.layers, driver, factor)
    bridge.command(list(DRILL_AXES), START, now=0.0)
    bridge.step(0.0)
    return bridge


def insert(bridge, task, goal_id: str = "pin-1"):
    """Run the insertion on the bridge, the feed following the driver's angle, until the depth or a
    stop: (the last sample, the driver's peak torque N*m, the feed's travel at the end m)."""
    bridge.set_pin_insertion(goal_id, insertion(task, goal_id))
    driver = bridge.backend.spindle
    angle, peak, sample = 0.0, 0.0, None
    position = list(START)
    for k in range(1, int(2.0 * task.depth / (task.pitch * task.speed / (2.0 * math.pi)) / bridge.dt)):
        now = k * bridge.dt
        position[FEED] = START[FEED] + task.pitch * angle / (2.0 * math.pi)
        velocity = [0.0] * len(DRILL_AXES)
        velocity[FEED] = task.pitch * driver.speed / (2.0 * math.pi)
        bridge.command(list(DRILL_AXES), position, velocity, now=now)
        sample = bridge.step(now)
        peak = max(peak, driver.motor_torque)
        angle += driver.speed * bridge.dt
        if sample.stop_reason is not None or position[FEED] - START[FEED] >= task.depth:
            break
    return sample, peak, sample.position[FEED] - START[FEED]


def test_a_bone_harder_than_the_limit_stops_the_driver_and_every_drive_where_simulate_stops(
    parameters, control, pin_task
):
    """The robot path's monitor trips as `quirobot simulate --task pin` does on the same bone: the
    same reason, the stop within 0.05 mm of simulate's depth (the feed tracks its command within
    micrometres; the torque rises 1.04 N*m per mm in this cortex, so 0.05 mm is 0.05 N*m), every
    drive stopped by the hardware (StopCode.DRILLING_MONITOR), the driver switched off."""
    simulated = insert_pin(pin_task, parameters, control.dt, HARD_BONE)
    assert simulated.metrics.procedure.stopped_on_torque, "the bone must pass the limit in simulate too"
    with pin_bridge(parameters, control, pin_task, HARD_BONE) as bridge:
        sample, peak, depth = insert(bridge, pin_task)
        assert sample.stop_reason is not None and sample.stop_reason.startswith("pin insertion torque ")
        assert f"above the limit {pin_task.torque_limit:.2f} N*m" in sample.stop_reason
        assert bridge.status().stop_code is StopCode.DRILLING_MONITOR
        assert bridge.hardware.lifecycle is not LifecycleState.ACTIVE
        assert bridge.backend.spindle.command == 0.0, "the pin driver must be off"
        for name, drive in bridge.drives.items():
            assert drive.feedback().state in (DriveState.QUICK_STOP, DriveState.FAULT), name
        # Where each stopped, as each monitor's message says it (mm) and as the bridge measured it.
        bridge_at, simulate_at = (
            float(re.search(r" at ([0-9.]+) mm of ", reason).group(1)) * 1e-3
            for reason in (sample.stop_reason, simulated.metrics.run.stop_reason)
        )
        assert bridge_at == pytest.approx(simulate_at, abs=0.05e-3)
        assert depth == pytest.approx(bridge_at, abs=0.01e-3)
        assert peak == pytest.approx(simulated.metrics.procedure.peak_drive_torque, abs=0.1)
        # Switched off, the driver runs down within its speed loop's time constant and stays at rest.
        for _ in range(1000):
            bridge.step(bridge.time)
        assert bridge.backend.spindle.speed == pytest.approx(0.0, abs=1e-6)


def test_a_bone_as_imaged_takes_the_whole_pin_below_the_limit(parameters, control, pin_task):
    """The shipped bone: the pin reaches its depth with no stop, the driver's torque below the
    limit all the way (both cortices engaged near the end: 5.2 N*m), as in simulate."""
    with pin_bridge(parameters, control, pin_task, 1.0) as bridge:
        sample, peak, depth = insert(bridge, pin_task)
        assert sample.stop_reason is None
        assert depth == pytest.approx(pin_task.depth, abs=0.05e-3)
        assert 5.0 < peak < pin_task.torque_limit
        assert bridge.set_pin_insertion("pin-1", None).endswith("the pin driver stops")
        bridge.step(bridge.time)
        assert bridge.backend.spindle.command == 0.0


def test_an_insertion_belongs_to_one_goal_and_excludes_a_hole(parameters, control, pin_task):
    """Refused with nothing changed: a second goal's insertion, another goal's end, a hole while
    the pin goes in (and an insertion while a hole is active); the drive services mid-insertion."""
    incision = load_task("incision")
    hole = HoleContext(
        goal_id="hole-1",
        entry=incision.entry,
        direction=incision.direction,
        depth=0.0252,
        feed_rate=0.0015,
        thrust_limit=60.0,
        arm_depth=0.0,
        exit_depth=None,
    )
    with pin_bridge(parameters, control, pin_task, 1.0) as bridge:
        bridge.set_pin_insertion("pin-1", insertion(pin_task))
        with pytest.raises(BridgeError, match="goal 'pin-1''s insertion is active"):
            bridge.set_pin_insertion("pin-2", insertion(pin_task, "pin-2"))
        with pytest.raises(BridgeError, match="the active one is goal 'pin-1''s"):
            bridge.set_pin_insertion("pin-2", None)
        with pytest.raises(BridgeError, match="goal 'pin-1''s pin insertion is active"):
            bridge.set_drilling_context("hole-1", hole)
        with pytest.raises(BridgeError, match="disable refused: goal 'pin-1' is inserting a pin"):
            bridge.disable()
        bridge.step(bridge.time)
        assert bridge.pin is not None and bridge.backend.spindle.command == pin_task.speed
        bridge.set_pin_insertion("pin-1", None)
        bridge.step(bridge.time)
        assert bridge.pin is None
        bridge.set_drilling_context("hole-1", hole)
        with pytest.raises(BridgeError, match="goal 'hole-1''s hole is active"):
            bridge.set_pin_insertion("pin-3", insertion(pin_task, "pin-3"))


def test_a_stop_from_elsewhere_stops_the_driver_and_acknowledging_it_ends_the_insertion(
    parameters, control, pin_task
):
    """A stop that is not the monitor's (here the hardware's own, as an emergency stop latches it)
    switches the driver off at once: a pin turning against a stopped feed strips its thread; the
    acknowledgement ends the insertion (no goal goes on after a stop)."""
    with pin_bridge(parameters, control, pin_task, 1.0) as bridge:
        bridge.set_pin_insertion("pin-1", insertion(pin_task))
        for _ in range(50):
            bridge.command(list(DRILL_AXES), START, now=bridge.time)
            bridge.step(bridge.time)
        assert bridge.backend.spindle.command == pin_task.speed
        bridge.hardware.stop("emergency stop", StopCode.EMERGENCY_STOP)
        bridge.step(bridge.time)
        assert bridge.backend.spindle.command == 0.0
        for _ in range(500):  # the drives' stop ramps and brakes end
            bridge.step(bridge.time)
        assert "goal 'pin-1''s pin insertion ended" in bridge.acknowledge_stop("test")
        bridge.step(bridge.time)
        assert bridge.pin is None


def test_without_a_drill_feed_an_insertion_is_refused(parameters, control, pin_task):
    description = robot_description("arthroscope", "real")
    with (
        simulated_bridge(parameters, control, description, now=0.0) as bridge,
        pytest.raises(BridgeError, match="no drill feed among the joints"),
    ):
        bridge.set_pin_insertion("pin-1", insertion(pin_task))


def test_the_monitor_refuses_bad_numbers_and_stops_on_a_torque_that_is_not_one():
    monitor = PinTorqueMonitor(8.0, 0.026)
    assert monitor.check(7.99, 0.01) is None
    assert (
        monitor.check(8.01, 0.0231)
        == "pin insertion torque 8.01 N*m above the limit 8.00 N*m at 23.10 mm of 26.00 mm"
    )
    assert "not a number" in monitor.check(math.nan, 0.01)
    for limit, depth in ((0.0, 0.026), (math.nan, 0.026), (8.0, -1.0), (math.inf, 0.026)):
        with pytest.raises(ValueError, match="must be a finite number > 0"):
            PinTorqueMonitor(limit, depth)
    with pytest.raises(ValueError, match="a goal id is needed"):
        PinInsertion("", monitor, 6.28)
    with pytest.raises(ValueError, match="driver speed"):
        PinInsertion("pin-1", monitor, 0.0)
