"""Where a verb writes, checked before the work: a 30 s simulation must not end in "cannot write".

Both checks refuse, naming the path: a parent folder that is missing (it is not created: a typo
must not make folders at the filesystem root) or is not a folder, a folder that cannot be written
(permissions or a read-only filesystem, as access(2) reports them), and an output file whose
place a folder takes.
"""

from __future__ import annotations

import os
from pathlib import Path


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names it and why."""


def _writable_folder(folder: Path, what: str) -> None:
    if not folder.exists():
        raise OutputPathError(f"{what}: the folder {folder} does not exist (create it first)")
    if not folder.is_dir():
        raise OutputPathError(f"{what}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{what}: the folder {folder} is not writable")


def output_file(path: str | Path, suffix: str | None = None) -> Path:
    """`path` as a file this process can write (its folder must exist), else OutputPathError.

    suffix: the extension the file must have (".png"), checked case-insensitively.
    """
    path = Path(path)
    if suffix is not None and path.suffix.lower() != suffix:
        raise OutputPathError(f"output must be a {suffix} file, got {path}")
    _writable_folder(path.parent, f"cannot write {path}")
    if path.is_dir():
        raise OutputPathError(f"cannot write {path}: a folder of that name is in the way")
    if path.exists() and not os.access(path, os.W_OK):
        raise OutputPathError(f"cannot write {path}: the file is not writable")
    return path


def output_folder(path: str | Path) -> Path:
    """`path` as a writable folder, created if missing (its parent must exist), else OutputPathError."""
    path = Path(path)
    if path.exists():
        _writable_folder(path, f"cannot write into {path}")
        return path
    _writable_folder(path.parent, f"cannot create {path}")
    path.mkdir()
    return path
