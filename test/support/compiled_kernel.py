"""The drives' compiled current loop for a test (drive_simulators.current_loop), or a skip only
where it could not have been built: no C compiler or no Python headers on this machine."""

from __future__ import annotations

import os
import shutil
import sysconfig

import pytest

from quirobot_control.drive_simulators import current_loop


def can_build_extensions() -> bool:
    """Whether this machine has the C compiler Python was built with and Python's headers."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(compiler) is not None and os.path.exists(headers)


def compiled_kernel():
    """The compiled current_loop_samples; fails if it could have been built and was not."""
    if not current_loop.COMPILED:
        if can_build_extensions():
            pytest.fail(
                "the current loop's C extension (_current_loop_kernel) is not built, though this "
                "machine has a C compiler and Python's headers: reinstall (pip install -e .)"
            )
        pytest.skip("no C compiler or Python headers here: the current loop runs in Python")
    return current_loop.current_loop_samples
