"""The drive bridge's start-up handshake (bridge.takeover): which message is a controller taking
over, against the span of the positions measured since the handshake began."""

from __future__ import annotations

import math

from quirobot_control.bridge.takeover import Takeover

TOLERANCE = 5e-5  # m: control.yaml's linear takeover_tolerance


def handshake(*measured: float) -> Takeover:
    """gantry_z measured at these positions (m), one per period, since the handshake began."""
    takeover = Takeover({"gantry_z": TOLERANCE}, [])
    for q in measured:
        takeover.observe(["gantry_z"], lambda _name, q=q: q)
    return takeover


def test_a_hold_read_mid_sag_is_taken_once_the_axis_is_back():
    """The axis sagged 89 um while its loop took hold at enable (the simulated CANopen gantry_z),
    then came back: a controller that read its hold mid-sag takes over (compared with the position
    measured now alone, never: the start-up watchdog would stop every drive)."""
    takeover = handshake(1.0, 1.0 - 89e-6, 1.0 - 30e-6, 1.0)
    assert takeover.takes_over(["gantry_z"], [1.0 - 80e-6], [0.0], lambda _: 1.0)
    assert takeover.events == ["start-up: first controller command accepted, command watchdog armed"]


def test_a_stale_command_outside_the_span_is_ignored_and_noted_once():
    """The stopped controller's last command, 0.3 mm above where the stop left the axis: no
    takeover, however often it comes; the tolerance is the edge."""
    takeover = handshake(1.0, 1.0 - 89e-6, 1.0)
    for _ in range(3):
        assert not takeover.takes_over(["gantry_z"], [1.0003], [0.0], lambda _: 1.0)
    assert takeover.events == [
        "start-up: ignored a command of gantry_z at 1.0003, 0.0003 from its measured 0.999911 to 1, "
        "beyond its takeover tolerance 5e-05 (a controller taking over commands the measured position)"
    ]
    assert takeover.takes_over(["gantry_z"], [1.0 + 0.9 * TOLERANCE], [0.0], lambda _: 1.0)


def test_non_finite_commands_are_not_commands_and_a_reset_starts_the_span_again():
    takeover = handshake(1.0, 1.001)
    assert not takeover.takes_over(["gantry_z"], [math.nan], [0.0], lambda _: 1.0)
    assert not takeover.takes_over(["gantry_z"], [1.0], [math.inf], lambda _: 1.0)
    assert takeover.events == []
    takeover.reset()  # an enable: 1.001 was measured before it
    assert not takeover.takes_over(["gantry_z"], [1.001], [0.0], lambda _: 1.0)
