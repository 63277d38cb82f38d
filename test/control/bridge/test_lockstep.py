"""bridge.lockstep: the plant's clock in lock-step with the controller manager.

The clock's samples are checked against ros2_control_node's wake-up rule on use_sim_time (it
sleeps until its cycle's time + one period, 1e9 // update_rate ns): every sample must wake it
exactly once. The guards run on a wall clock the test gives (never the machine's).
"""

from __future__ import annotations

import math

import pytest

from quirobot_control.bridge.lockstep import Lockstep, substeps_per_command
from quirobot_control.hardware.control_config import control_configuration
from quirobot_description.parameters import load_parameters

EPOCH_NS = 1_764_600_000 * 1_000_000_000  # a whole second of 2025, ns


def shipped_lockstep(**guards) -> Lockstep:
    control = control_configuration(load_parameters())
    return Lockstep(period_ns=round(control.dt * 1e9), epoch_ns=EPOCH_NS, **guards)


def test_every_sample_wakes_the_controller_manager_once():
    """Each t_{k+1} reaches the controller manager's `t_k + period` (integer ns) and no sample is
    a period early: one cycle per plant period, 100 000 periods (100 s at 1 kHz)."""
    clock = shipped_lockstep()
    update_rate = round(1e9 / clock.period_ns)  # controllers.yaml's update_rate (1000 Hz)
    cm_period = 1_000_000_000 // update_rate
    cycles = 0
    wake_at = None
    for k in range(100_000):
        if wake_at is None or clock.stamp_ns >= wake_at:
            cycles += 1
            wake_at = clock.stamp_ns + cm_period
        assert clock.on_command(wall=k * 1e-3) == 1
        clock.ran(1)
    assert cycles == 100_000
    assert clock.seconds == pytest.approx(100.0, abs=1e-9)
    # A float clock in s from time.time() (the node's earlier one) gives samples short of a
    # period: the wake-ups it misses are why the clock counts integer ns.
    dt, epoch = clock.period_ns * 1e-9, 1_764_600_000.123456

    def float_stamp_ns(k: int) -> int:
        seconds = epoch + k * dt
        whole = math.floor(seconds)
        return whole * 1_000_000_000 + round((seconds - whole) * 1e9)

    stamps = [float_stamp_ns(k) for k in range(10_000)]
    assert any(b - a < cm_period for a, b in zip(stamps, stamps[1:], strict=False))


@pytest.mark.parametrize("update_rate", [1000, 500, 250, 100])
def test_a_slower_controller_manager_wakes_once_per_command_and_the_plant_runs_its_whole_period(update_rate):
    """A controller manager slower than the 1 kHz plant (sim.launch.py: 100 Hz): each command runs the
    plant 1e9 // update_rate ns (whole plant periods) and the clock then reaches the controller
    manager's `t_k + period` exactly: one wake-up per command, none skipped, 10 s of plant time."""
    control = control_configuration(load_parameters())
    period_ns = round(control.dt * 1e9)
    substeps = substeps_per_command(period_ns, update_rate)
    clock = Lockstep(period_ns=period_ns, epoch_ns=EPOCH_NS, substeps=substeps)
    cm_period = 1_000_000_000 // update_rate
    wake_at, cycles = None, 0
    while clock.seconds < 10.0 - 1e-12:
        assert wake_at is None or clock.stamp_ns == wake_at  # the sample wakes it, not later
        cycles += 1
        wake_at = clock.stamp_ns + cm_period
        clock.ran(clock.on_command(wall=cycles * 1e-3))
    assert cycles == 10 * update_rate
    assert clock.periods == round(10.0 / control.dt)


def test_a_controller_rate_that_does_not_divide_the_plant_rate_is_refused_naming_both():
    period_ns = 1_000_000  # 1 kHz
    assert substeps_per_command(period_ns, 0) == 1  # the plant's own rate
    assert substeps_per_command(period_ns, 250) == 4
    for rate in (300, 2000, -5):
        with pytest.raises(ValueError, match=rf"controller_rate {rate} Hz .*1000 Hz"):
            substeps_per_command(period_ns, rate)
    with pytest.raises(ValueError, match="substeps"):
        Lockstep(period_ns=period_ns, epoch_ns=EPOCH_NS, substeps=0)


def test_start_up_runs_a_period_per_guard_interval_until_the_first_command():
    """ros2_control_node's loop needs the clock to move before it writes anything."""
    clock = shipped_lockstep(republish_after=0.05, dead_after=10.0)
    assert clock.on_guard(0.0).periods == 0  # the first tick starts the count
    ran = 0
    for n in range(1, 101):  # 1 s of wall time, ticks of 10 ms
        action = clock.on_guard(n * 0.01 + 1e-9)
        assert not action.republish and action.stop_reason is None
        clock.ran(action.periods)
        ran += action.periods
    assert 1.0 / 0.06 - 1 <= ran <= 1.0 / 0.05 and clock.periods == ran  # every 0.05 s, or a tick later
    # Its silence is never a dead controller manager: none has commanded yet.
    assert clock.on_guard(100.0).stop_reason is None


def test_guard_republishes_only_on_silence_and_never_runs_the_plant_while_alive():
    clock = shipped_lockstep(republish_after=0.05, dead_after=10.0)
    clock.on_command(0.07)
    clock.ran(1)
    assert clock.on_guard(0.08).republish is False
    action = clock.on_guard(0.13)
    assert action.republish and action.periods == 0 and action.stop_reason is None
    # A slow controller manager (9 s without a command) is waited for, the clock sent again.
    actions = [clock.on_guard(0.13 + 0.01 * n) for n in range(1, 890)]
    assert all(a.periods == 0 and a.stop_reason is None for a in actions)
    # Once per 0.05 s, or a tick (0.01 s) later.
    assert 8.9 / 0.06 - 1 <= sum(a.republish for a in actions) <= 8.9 / 0.05 + 1
    assert clock.periods == 1


def test_a_dead_controller_manager_stops_the_drives_once_then_the_plant_runs_on_the_wall_clock():
    clock = shipped_lockstep(republish_after=0.05, dead_after=10.0)
    clock.on_command(1.0)
    clock.ran(1)
    dead = clock.on_guard(11.0)
    assert dead.stop_reason is not None
    assert "10.0 s" in dead.stop_reason and "controller manager" in dead.stop_reason
    assert clock.dead
    run = clock.on_guard(11.5)
    assert run.stop_reason is None and run.periods == 100  # capped per tick
    clock.ran(run.periods)
    assert clock.on_guard(11.6).periods == 100  # 600 periods due, 100 run: capped again
    # Its command puts the plant back in lock-step.
    assert clock.on_command(12.0) == 1 and not clock.dead
    assert clock.on_guard(12.01).periods == 0


def test_bad_guards_are_refused():
    with pytest.raises(ValueError, match="republish_after"):
        shipped_lockstep(republish_after=5.0, dead_after=1.0)
    with pytest.raises(ValueError, match="period"):
        Lockstep(period_ns=0, epoch_ns=EPOCH_NS)
