"""bridge.controller_stopper: the trajectory controllers stop with the drives, restart on enable.

Driven by the real drive bridge on the simulated drives (its stops, disable and enable), not by
hand-set flags: the states the stopper sees are the hardware's.
"""

from __future__ import annotations

import pytest

from quirobot_control.bridge.controller_stopper import DEFAULT_STOPPED_CONTROLLERS, ControllerStopper
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
    switch = stopper.update(status.enabled, status.stop_reason)
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
