"""The safety layer's command limiter (safety.command_limiter): the compiled twin against the
Python law, bit for bit, over the cycles a joint goes through (inside its soft range and beyond
either soft limit, creeping and at full speed, requests that jump, reverse and pass unclipped),
on the drill's shipped limits; the requests that pass unclipped come back as the same objects;
what the compiled leaves to the Python (anything but floats in lists or tuples, a square root
math.sqrt refuses) it leaves untouched. And within_limits, the compiled comparisons of
SafetyMonitor.check: True exactly where the check's own loop passes.

That the law is the safety layer's: test_hardware_hardening, test_hardware_stops and the
simulate outputs (test_simulate_json_unchanged) run SafetyMonitor.filter through it.
"""

from __future__ import annotations

import numpy as np
import pytest
from compiled_kernel import bits, require_compiled

from quirobot_control.axes.limits import JointLimits
from quirobot_control.hardware.control_config import control_configuration
from quirobot_control.safety import command_limiter, motion_monitor
from quirobot_control.safety.command_limiter import limit_commands_in_python
from quirobot_control.safety.motion_monitor import SafetyMonitor, SafetyStopError

DT = 0.001  # s: the control period


def _compiled():
    require_compiled(command_limiter.COMPILED, "_limiter_kernel")
    return command_limiter.limit_commands


@pytest.fixture(scope="module")
def scalars(parameters) -> list[tuple[float, ...]]:
    """SafetyMonitor's per-joint constants for the drill's axes (a_cmd above a_brake on two)."""
    limits = JointLimits.from_parameters(parameters)
    columns = (limits.soft_lower, limits.soft_upper, limits.velocity, limits.k_position, limits.acceleration)
    rows = zip(*columns, strict=True)
    return [
        (float(a), float(b), float(c), float(d), float(e), float(e) * (1.0 + 0.5 * (j % 3 == 0)))
        for j, (a, b, c, d, e) in enumerate(rows)
    ]


def test_the_compiled_limiter_is_the_python_law_bit_for_bit(scalars):
    kernel = _compiled()
    rng = np.random.default_rng(36)
    lower = np.array([s[0] for s in scalars])
    upper = np.array([s[1] for s in scalars])
    v_max = np.array([s[2] for s in scalars])
    span = upper - lower
    seen = {"unclipped": 0, "clipped": 0, "beyond": 0, "velocity clipped": 0}
    for _ in range(20000):
        kind = rng.integers(4)
        if kind == 0:  # anywhere in the soft range
            previous = lower + rng.random(6) * span
        elif kind == 1:  # near a soft limit
            previous = np.where(rng.random(6) < 0.5, lower, upper) + rng.normal(scale=1e-3, size=6) * span
        elif kind == 2:  # beyond one (the soft-stop band)
            previous = np.where(rng.random(6) < 0.5, lower - 0.01 * span, upper + 0.01 * span) * (
                1.0 + rng.random(6) * 1e-3
            )
        else:  # exactly on one
            previous = np.where(rng.random(6) < 0.5, lower, upper)
        step_velocity = rng.normal(scale=rng.choice([1e-6, 0.1, 1.0]), size=6) * v_max
        step_velocity[rng.random(6) < 0.2] = 0.0
        velocity = step_velocity + rng.normal(scale=rng.choice([0.0, 1e-3, 0.5]), size=6) * v_max
        position = previous + velocity * DT + rng.normal(scale=rng.choice([0.0, 1e-9, 1e-5, 1e-2]), size=6)
        if rng.random() < 0.2:
            position = previous + step_velocity * DT  # exactly on the step: passes unclipped
        args = [previous.tolist(), None, position.tolist(), velocity.tolist(), DT]
        python_steps, compiled_steps = step_velocity.tolist(), step_velocity.tolist()
        python = limit_commands_in_python(scalars, args[0], python_steps, *args[2:])
        compiled = kernel(scalars, args[0], compiled_steps, *args[2:])
        assert compiled is not None
        for got, want in zip(compiled, python, strict=True):
            assert bits(got) == bits(want)
        assert bits(compiled_steps) == bits(python_steps)
        for j in range(6):
            if python[0][j] is args[2][j]:
                seen["unclipped"] += 1
                assert compiled[0][j] is args[2][j]  # the request's own object, as the Python's
                if python[1][j] is args[3][j]:
                    assert compiled[1][j] is args[3][j]
                else:
                    seen["velocity clipped"] += 1
            else:
                seen["clipped"] += 1
            if not lower[j] <= previous[j] <= upper[j]:
                seen["beyond"] += 1
    assert min(seen.values()) >= 1000, seen


def test_the_compiled_limiter_leaves_other_inputs_to_the_python(scalars):
    kernel = _compiled()
    q = [0.5 * (s[0] + s[1]) for s in scalars]
    zero = [0.0] * 6
    assert kernel(scalars, q, list(zero), q, zero, DT) is not None
    assert kernel(tuple(scalars), tuple(q), list(zero), tuple(q), tuple(zero), DT) is not None
    for bad in (1, np.float64(0.5), None):  # not a float
        for k in range(6):
            odd = list(q)
            odd[k] = bad
            steps = list(zero)
            assert kernel(scalars, odd, steps, q, zero, DT) is None
            assert kernel(scalars, q, steps, odd, zero, DT) is None
            assert kernel(scalars, q, steps, q, odd, DT) is None
            assert steps == zero  # nothing written
    assert kernel(scalars, q, tuple(zero), q, zero, DT) is None  # the steps must be a list to update
    assert kernel(scalars, q[:5], list(zero), q, zero, DT) is None  # too short: the Python's IndexError
    assert kernel(scalars, np.array(q), list(zero), q, zero, DT) is None
    assert kernel(scalars, q, list(zero), q, zero, 1) is None
    # A negative acceleration: math.sqrt refuses the braking distance; so does the compiled.
    negative = [(*s[:4], -1.0, s[5]) for s in scalars]
    steps = list(zero)
    assert kernel(negative, q, steps, q, zero, DT) is None and steps == zero
    with pytest.raises(ValueError, match="math domain error"):
        limit_commands_in_python(negative, q, list(zero), q, zero, DT)


def _monitor(parameters):
    control = control_configuration(parameters)
    names = JointLimits.from_parameters(parameters).names
    return SafetyMonitor(
        JointLimits.from_parameters(parameters),
        following_error=[control.joint(name).following_error for name in names],
        watchdog_timeout=control.watchdog_timeout,
        stop_timeout=control.watchdog_stop_timeout,
        overspeed_ratio=control.overspeed_ratio,
    )


def test_the_compiled_state_check_passes_exactly_where_the_check_passes(parameters):
    """within_limits says True exactly where SafetyMonitor.check's own loop passes, over states on
    either side of each bound to the last bit (a soft limit widened by the following error and
    the start excess, the overspeed, the following error) and with non-finite values."""
    require_compiled(command_limiter.COMPILED, "_limiter_kernel")
    monitor = _monitor(parameters)
    rng = np.random.default_rng(7)
    lower = np.array([s[0] for s in monitor._scalars])
    upper = np.array([s[1] for s in monitor._scalars])
    v_max = np.array([s[2] for s in monitor._scalars])
    following = np.array(monitor._following)
    seen = {"passes": 0, "soft limit": 0, "overspeed": 0, "following error": 0, "non-finite": 0}
    for case in range(6000):
        monitor._start_excess = (rng.random(6) * 1e-3 * (rng.random(6) < 0.3)).tolist()
        measured = lower + rng.random(6) * (upper - lower)
        velocity = rng.uniform(-1.0, 1.0, 6) * v_max
        command = measured + rng.uniform(-0.5, 0.5, 6) * following
        j = int(rng.integers(6))
        step = float(rng.choice([-1.0, 1.0]))
        kind = case % 5
        if kind == 1:  # on a widened soft limit, or one unit in the last place past it
            edge = (lower if step < 0 else upper)[j] + step * (following[j] + monitor._start_excess[j])
            measured[j] = edge if rng.random() < 0.5 else np.nextafter(edge, step * np.inf)
            command[j] = measured[j]
        elif kind == 2:  # at the overspeed bound, or just above it
            edge = monitor.overspeed_ratio * v_max[j]
            velocity[j] = step * (edge if rng.random() < 0.5 else np.nextafter(edge, np.inf))
        elif kind == 3:  # at the following-error limit, or just past it
            command[j] = measured[j] + step * following[j] * (1.0 + float(rng.choice([0.0, 1e-15, -1e-15])))
        elif kind == 4:
            (measured if rng.random() < 0.5 else velocity)[j] = float(rng.choice([np.nan, np.inf]))
        state = (command.tolist(), measured.tolist(), velocity.tolist() if rng.random() < 0.8 else None)
        monitor.stop_reason = None
        try:
            with pytest.MonkeyPatch.context() as patched:
                patched.setattr(motion_monitor, "within_limits", command_limiter.within_limits_unknown)
                monitor.check(*state)
            passes, reason = True, "passes"
        except SafetyStopError as stop:
            passes, reason = False, str(stop)
        compiled = command_limiter.within_limits(
            monitor._scalars, monitor._following, monitor._start_excess, monitor.overspeed_ratio, *state
        )
        assert (compiled is True) == passes, (case, reason)
        key = next((k for k in seen if k in reason), "non-finite" if "non-finite" in reason else reason)
        seen[key] = seen.get(key, 0) + 1
    assert (
        min(seen[k] for k in ("passes", "soft limit", "overspeed", "following error", "non-finite")) >= 100
    ), seen
