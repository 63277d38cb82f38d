"""drive_node's drive-level services mid-goal (issue 33 item 2): /quirobot/drives/disable, enable,
home and acknowledge_stop reach DriveBridge directly, past task_node's busy guard (a disable
mid-feed left the bit 5.12 mm in bone). While a goal's hole is active each either changes
nothing (refused naming the goal, or a no-op on active drives) or, acknowledging a stop (the
drives already stopped), ends the hole and says so; nothing moves.
"""

from __future__ import annotations

import numpy as np
import pytest

from quirobot_control.bridge.drive_bridge import BridgeError
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.safety.hole_context import HoleContext
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.parameters import DrillParameters, axes_for
from quirobot_description.urdf import robot_description

pytest.importorskip("mujoco")

DRILL_AXES = axes_for("drill")
START = [0.8, 0.9, 1.0, 1.5, 0.5, 0.004]


@pytest.fixture(scope="module")
def control(parameters):
    return control_configuration(parameters)


def started(parameters, control):
    """A bridge whose controller has taken over (five commanded periods at START)."""
    bridge = simulated_bridge(parameters, control, robot_description("drill", "real"), now=0.0, initial=START)
    for k in range(5):
        bridge.command(list(DRILL_AXES), START, now=k * bridge.dt)
        bridge.step(k * bridge.dt)
    return bridge


def hole(bridge, goal_id: str = "goal-1") -> HoleContext:
    """A hole along the tool's axis from 10 mm ahead of the tip (no bone model)."""
    plant = bridge.backend.plant
    axis = (plant.tip - plant.tool0) / np.linalg.norm(plant.tip - plant.tool0)
    return HoleContext(
        goal_id=goal_id,
        entry=plant.tip + 0.01 * axis,
        direction=axis,
        depth=0.0252,
        feed_rate=0.0015,
        thrust_limit=60.0,
        arm_depth=0.0,
        exit_depth=None,
    )


def test_on_active_drives_mid_goal_every_service_leaves_the_goal_driving(parameters, control):
    """Mid-feed (hardware active, a hole in force): disable and home are refused naming the goal,
    enable and acknowledge_stop change nothing; the drives stay active under the same hole and
    the feed keeps its command."""
    with started(parameters, control) as bridge:
        bridge.set_drilling_context("goal-1", hole(bridge))
        bridge.step(5 * bridge.dt)
        feed = bridge.hardware.state(DrillParameters.feed_joint, "position")
        with pytest.raises(BridgeError, match="disable refused: goal 'goal-1' is drilling"):
            bridge.disable()
        with pytest.raises(BridgeError, match="home refused"):
            bridge.home()
        assert bridge.enable(6 * bridge.dt) == "already enabled"
        assert bridge.acknowledge_stop("test") == "no stop latched"
        bridge.command(list(DRILL_AXES), START, now=6 * bridge.dt)
        bridge.step(6 * bridge.dt)
        assert bridge.hardware.lifecycle.value == "active" and not bridge.homing
        assert bridge.hole.context.goal_id == "goal-1"
        assert bridge.hardware.state(DrillParameters.feed_joint, "position") == pytest.approx(feed, abs=1e-5)


def test_on_inactive_drives_mid_goal_enable_and_home_are_refused(parameters, control):
    """A goal's hole arriving while the drives are disabled (a disable raced the goal's start):
    enable would reactivate the controllers under a running goal and homing would move every axis
    with the bit at the hole; both are refused naming the goal (the old bridge enabled, and
    started homing). The goal's own end lifts the refusal."""
    with started(parameters, control) as bridge:
        assert bridge.disable() == "disabled"
        bridge.set_drilling_context("goal-1", hole(bridge))
        bridge.step(5 * bridge.dt)
        with pytest.raises(BridgeError, match="enable refused: goal 'goal-1'"):
            bridge.enable(6 * bridge.dt)
        with pytest.raises(BridgeError, match="home refused: goal 'goal-1'"):
            bridge.home()
        assert bridge.hardware.lifecycle.value != "active" and not bridge.homing
        bridge.set_drilling_context("goal-1", None)
        assert bridge.enable(7 * bridge.dt) == "enabled"


def test_acknowledging_a_stop_mid_goal_ends_the_hole_and_says_so(parameters, control):
    """A stop mid-goal (the feed's drive faults): enable and home stay refused while it is
    latched; acknowledging it ends the goal's hole, naming the goal (no goal goes on after a
    stop), and only then may the drives be enabled."""
    with started(parameters, control) as bridge:
        bridge.set_drilling_context("goal-1", hole(bridge))
        bridge.step(5 * bridge.dt)
        bridge.drives[DrillParameters.feed_joint].inject_fault("injected (test)")
        bridge.step(6 * bridge.dt)
        assert bridge.hardware.stop_reason
        with pytest.raises(BridgeError):
            bridge.enable(7 * bridge.dt)
        with pytest.raises(BridgeError, match="home refused"):
            bridge.home()
        k = 7
        while any(bridge.drives[n].feedback().stopping for n in bridge.names):
            bridge.step(k * bridge.dt)  # the category 1 stop runs to standstill first
            k += 1
            assert k < 5000, "the stop did not reach standstill in 5 s"
        message = bridge.acknowledge_stop("test")
        assert message.startswith("stop acknowledged") and "goal 'goal-1'" in message, message
        bridge.step(k * bridge.dt)
        assert bridge.hole.context is None
        assert bridge.enable(k * bridge.dt) == "enabled"
