"""The drives' compiled kernels for a test (drive_simulators.current_loop, drive_array: the C
extension _drive_kernel), or a skip only where they could not have been built: no C compiler or
no Python headers on this machine."""

from __future__ import annotations

import os
import shutil
import sysconfig

import pytest

from quirobot_control.drive_simulators import current_loop, drive_array


def can_build_extensions() -> bool:
    """Whether this machine has the C compiler Python was built with and Python's headers."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(compiler) is not None and os.path.exists(headers)


def require_compiled_kernels() -> None:
    """Fails if the drives' C extension could have been built here and was not; skips where not."""
    if not (current_loop.COMPILED and drive_array.COMPILED):
        if can_build_extensions():
            pytest.fail(
                "the drives' C extension (_drive_kernel) is not built, though this machine has a C "
                "compiler and Python's headers: reinstall (pip install -e .)"
            )
        pytest.skip("no C compiler or Python headers here: the drives' kernels run in Python")


def compiled_kernel():
    """The compiled current_loop_samples (require_compiled_kernels first)."""
    require_compiled_kernels()
    return current_loop.current_loop_samples
