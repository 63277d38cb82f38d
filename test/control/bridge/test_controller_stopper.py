"""bridge.controller_stopper: the trajectory controllers stop with the drives, restart on enable.

Driven by the real drive bridge on the simulated drives (its stops, disable and enable), not by
hand-set flags: the states the stopper sees are the hardware's.
"""

from __future__ import annotations

import pytest

from quirobot_control.bridge.controller_stopper import DEFAULT_STOPPED_CONTROLLERS, RESTART, ControllerStopper
from quirobot_control.bridge.drive_bridge import BridgeError
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.simulation.simulated_backend import simulated_bridge
from quirobot_description.parameters import DrillParameters, load_parameters
from quirobot_description.urdf import robot_description

pytest.importorskip("mujoco")


@pytest.fixture(scope="module")
def bridge():
    params = load_parameters()
    control = control_configuration(params)
    with simulated_bridge(params, control, robot_description("drill", "real"), now=0.0) as bridge:
        yield bridge


def observe(stopper: ControllerStopper, bridge, ok: bool = True):
    status = bridge.status()
    switch = stopper.update(status.enabled, status.stop_reason, status.stale_controller)
    if switch is not None:
        stopper.done(switch, ok)
    return switch


def test_a_drive_fault_deactivates_and_enable_reactivates(bridge):
    stopper = ControllerStopper()
    assert observe(stopper, bridge) is None  # enabled at start-up: nothing to switch
    bridge.drives[DrillParameters.feed_joint].inject_fault("test: feed drive fault")
    now = 0.0
    for _ in range(3):
        now += bridge.dt
        bridge.step(now)
    switch = observe(stopper, bridge)
    assert switch is not None and not switch.activate
    assert switch.controllers == DEFAULT_STOPPED_CONTROLLERS
    assert "drives stopped" in switch.reason and "feed drive fault" in switch.reason
    assert observe(stopper, bridge) is None  # once
    while True:  # an acknowledgement is refused until every drive's stop is complete (braked)
        try:
            bridge.acknowledge_stop("test")
            break
        except BridgeError:
            assert now < 2.0, "the drives' stops never completed"
            now += bridge.dt
            bridge.step(now)
    assert observe(stopper, bridge) is None  # acknowledged but not enabled: still stopped
    bridge.enable(now)
    switch = observe(stopper, bridge)
    assert switch is not None and switch.activate and switch.reason == "drives enabled"
    assert observe(stopper, bridge) is None


def test_disable_deactivates_and_a_refused_switch_is_asked_again(bridge):
    stopper = ControllerStopper()
    bridge.enable(0.0)
    assert observe(stopper, bridge) is None
    bridge.disable()
    switch = observe(stopper, bridge, ok=False)  # the controller manager refused (not up yet)
    assert switch is not None and not switch.activate and switch.reason == "drives disabled"
    again = observe(stopper, bridge)
    assert again == switch
    assert observe(stopper, bridge) is None


def test_no_new_switch_while_one_is_pending():
    stopper = ControllerStopper()
    first = stopper.update(enabled=False, stop_reason="e-stop")
    assert first is not None and "e-stop" in first.reason
    assert stopper.update(enabled=True, stop_reason=None) is None  # waits for the answer
    stopper.done(first, ok=True)
    assert stopper.update(enabled=True, stop_reason=None).activate


def test_a_controller_holding_a_stale_pose_is_restarted_until_it_holds_the_measured_one():
    """A trajectory controller activated before the drives' states reached the controller manager
    holds the description's initial pose, far from the robot: the bridge ignores it, and the
    stopper restarts the controllers (deactivate, then activate) so they take the pose their
    interfaces hold then over; again every restart_interval while the hold stays stale (the
    states may still be on their way), at most max_restarts times per enabling."""
    params = load_parameters()
    control = control_configuration(params)
    with simulated_bridge(params, control, robot_description("drill", "real"), now=0.0) as bridge:
        stopper = ControllerStopper()

        def observe_at(now: float):
            status = bridge.status()
            switch = stopper.update(status.enabled, status.stop_reason, status.stale_controller, now)
            if switch is not None:
                stopper.done(switch, ok=True)
            return switch

        assert observe_at(0.0) is None  # no controller yet: nothing to restart
        measured = [bridge.hardware.state(name, "position") for name in bridge.names]
        stale = [0.0] * len(bridge.names)  # the description's initial values, not the robot's pose
        bridge.command(bridge.names, stale, [0.0] * len(stale), now=0.001)
        bridge.step(0.001)
        first = observe_at(1.0)
        assert first is not None and not first.activate and first.reason == RESTART
        assert first.controllers == DEFAULT_STOPPED_CONTROLLERS
        second = observe_at(1.0)
        assert second is not None and second.activate and second.reason == RESTART
        # The restarted controller still holds a stale pose (its states had not arrived yet): not
        # restarted again before restart_interval, then again.
        assert observe_at(1.0 + 0.5 * stopper.restart_interval) is None
        assert observe_at(1.0 + stopper.restart_interval).reason == RESTART
        assert observe_at(1.0 + stopper.restart_interval).activate
        bridge.command(bridge.names, measured, [0.0] * len(measured), now=0.002)  # the restarted hold
        bridge.step(0.002)
        assert bridge.started and not bridge.status().stale_controller
        assert observe_at(10.0) is None
    # At most max_restarts per enabling; a stop and an enabling allow them again; a refused
    # activation is asked again as the restart's second half.
    stopper = ControllerStopper(max_restarts=2)
    for k in range(2):
        stopper.done(stopper.update(True, None, True, 10.0 * k), ok=True)
        stopper.done(stopper.update(True, None, True, 10.0 * k), ok=True)
    assert stopper.update(True, None, True, 100.0) is None  # the start-up watchdog decides now
    stopper.done(stopper.update(False, "e-stop", True, 100.0), ok=True)
    enabled = stopper.update(True, None, True, 100.0)
    assert enabled.activate and enabled.reason == "drives enabled"
    stopper.done(enabled, ok=True)
    down = stopper.update(True, None, True, 100.0)
    assert not down.activate and down.reason == RESTART
    stopper.done(down, ok=True)
    up = stopper.update(True, None, True, 100.0)
    stopper.done(up, ok=False)
    again = stopper.update(True, None, True, 100.0)
    assert again.activate and again.reason == RESTART
