"""The compiled kernels for a test (the C extensions of install_manifest.json: the drives'
_drive_kernel for drive_simulators.current_loop and drive_array, the wrist gearbox's
_gearbox_kernel, the no-go zone check's _fixture_kernel, the command limiter's _limiter_kernel,
the realistic plant's period's _physics_kernel, the thrust feed-forward's _feedforward_kernel),
or a skip only where they could not have been built: no C compiler or no Python headers on this
machine."""

from __future__ import annotations

import os
import shutil
import struct
import sysconfig

import pytest

from quirobot_control.drive_simulators import current_loop, drive_array


def can_build_extensions() -> bool:
    """Whether this machine has the C compiler Python was built with and Python's headers."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = os.path.join(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(compiler) is not None and os.path.exists(headers)


def require_compiled(compiled: bool, extension: str) -> None:
    """Fails if `extension` (its name, e.g. "_drive_kernel") could have been built here and was not
    (`compiled` False: its Python twin runs); skips where it could not have been."""
    if not compiled:
        if can_build_extensions():
            pytest.fail(
                f"the C extension {extension} is not built, though this machine has a C compiler and "
                "Python's headers: reinstall (pip install -e .)"
            )
        pytest.skip(f"no C compiler or Python headers here: {extension}'s Python twin runs")


def require_compiled_kernels() -> None:
    """The drives' C extension (require_compiled)."""
    require_compiled(current_loop.COMPILED and drive_array.COMPILED, "_drive_kernel")


def compiled_kernel():
    """The compiled current_loop_samples (require_compiled_kernels first)."""
    require_compiled_kernels()
    return current_loop.current_loop_samples


def bits(values) -> tuple[bytes, ...]:
    """Each float's IEEE 754 bytes: compiled and Python results compared to the last bit (a NaN
    equal to itself, -0.0 apart from 0.0)."""
    return tuple(struct.pack("<d", value) for value in values)
