"""Where a verb writes, checked before the work: a 30 s simulation must not end in "cannot write".

Both checks refuse, naming the path: a parent folder that is missing (it is not created: a typo
must not make folders at the filesystem root) or is not a folder, a folder that cannot be written
(permissions or a read-only filesystem, as access(2) reports them), and an output file whose
place a folder takes.

Files a node loads (a calibration, a registration) are written by `new_output_file` and
`write_output_text`: an existing file is kept unless the verb's --force is given, and a symbolic
link is never written through (before, `quirobot register --output` overwrote whatever a link
pointed at). The file is created exclusively (one made after the check is refused too); a forced
replacement is written beside it and renamed over it, so a reader never sees half a file.
"""

from __future__ import annotations

import os
import secrets
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


def new_output_file(path: str | Path, suffix: str | None = None, *, force: bool = False) -> Path:
    """`path` as output_file, refusing (OutputPathError) a symbolic link there, whatever `force`,
    and an existing file unless `force` (the verb's --force: replace it)."""
    path = Path(path)
    if path.is_symlink():
        raise OutputPathError(
            f"cannot write {path}: it is a symbolic link (never written through: remove it or give "
            "another path)"
        )
    path = output_file(path, suffix)
    if path.exists() and not force:
        raise OutputPathError(f"cannot write {path}: the file exists (--force replaces it)")
    return path


def write_output_text(path: Path, text: str, *, force: bool = False) -> None:
    """Write `text` (UTF-8) to `path` (checked by new_output_file) without following a symbolic
    link: created exclusively (O_EXCL, O_NOFOLLOW), or with `force` written to a file beside it and
    renamed over it (os.replace replaces a link itself, never its target)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    target = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp") if force else path
    try:
        descriptor = os.open(target, flags, 0o666)
    except FileExistsError as error:
        raise OutputPathError(f"cannot write {path}: the file exists (--force replaces it)") from error
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        if force:
            os.replace(target, path)
    except BaseException:
        if force:
            target.unlink(missing_ok=True)
        raise
