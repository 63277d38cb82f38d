"""Shared fixtures: the parameter file and exported URDFs (one export per tool per session)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from quirobot_description.export import export_urdf
from quirobot_description.parameters import RobotParameters, load_parameters
from quirobot_kinematics import KinematicModel, forward_kinematics

# No test asserts wall-clock speed (these machines are loaded and noisy): hypothesis' per-example
# deadline and its too-slow health check are wall-clock checks, so they are off for every property
# test (a loaded run failed test_sphere_matches_pinocchio on the deadline alone).
settings.register_profile("quirobot", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("quirobot")


@pytest.fixture(scope="session")
def parameters() -> RobotParameters:
    """The shipped parameter file, loaded and validated."""
    return load_parameters()


@pytest.fixture(scope="session")
def reference_fk(parameters: RobotParameters) -> Callable[[np.ndarray], np.ndarray]:
    """The report's closed-form T of the shipped parameters, q (5,) -> (4, 4): what `quirobot
    check` gives the description's kinematics stage."""
    return functools.partial(forward_kinematics, model=KinematicModel.from_parameters(parameters))


@pytest.fixture(scope="session")
def exported_urdf_factory(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """`factory(tool)` -> Path of a self-contained robot.urdf (hardware mock), cached per tool."""
    cache: dict[str, Path] = {}

    def factory(tool: str = "drill") -> Path:
        if tool not in cache:
            cache[tool] = export_urdf(tmp_path_factory.mktemp(f"urdf_{tool}"), tool=tool)
        return cache[tool]

    return factory


@pytest.fixture(scope="session")
def exported_urdf(exported_urdf_factory: Callable[[str], Path]) -> Path:
    """Path of the exported robot.urdf with the drill (the default tool)."""
    return exported_urdf_factory("drill")


@pytest.fixture(scope="module")
def host_stalls():
    """The host's stalls longer than 5 ms, measured by a probe process per CPU (host_stalls.py),
    for one test module: the probes (real-time, waking every 1 ms on each core) end with it, so
    that they do not run beside the benchmark that comes later (test_bench_drive_loop's cycle CPU
    ratio failed once, 8.36 against its 8.0, in a CI run with them still running beside it)."""
    from host_stalls import HostStalls

    stalls = HostStalls(threshold=5e-3)
    yield stalls
    stalls.close()


@pytest.fixture
def stall_window(host_stalls, parameters: RobotParameters):
    """This test's window on the host's stalls; `assert_master_kept(drives)` asserts that no
    simulated drive stopped for a lost master, unless the host stalled longer than the drives'
    watchdog (the shorter of the master time-out and the SYNC-loss periods) meanwhile."""
    from host_stalls import StallWindow

    bus = parameters.canopen
    watchdog = min(parameters.drive.master_timeout, bus.sync_loss_periods * bus.sync_period)
    return StallWindow(host_stalls, watchdog)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A CAN bus test that fails before its own `assert_master_kept` (an enable refused because a
    drive stopped itself) skips, naming the stall, on the same evidence: a drive stopped for a lost
    master and the host stalled longer than the drives' watchdog during the test."""
    try:
        return (yield)
    except (Exception, pytest.fail.Exception) as error:
        window, drives = item.funcargs.get("stall_window"), item.funcargs.get("drives")
        excuse = None if window is None or drives is None else window.stall_excusing(drives.master_lost())
        if excuse is not None:
            pytest.skip(f"{excuse}; the test's failure: {type(error).__name__}: {error}")
        raise
