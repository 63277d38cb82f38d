"""`--save` for the bench scripts: they print their results, and write them only when asked.

    python bench/control.py --save                 # also writes bench/results/control.txt
    python bench/control.py --save /tmp/run.txt    # or there

Without `--save` a run leaves the working tree as it was (results measured on a loaded laptop
must not overwrite the recorded ones by accident).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Iterator
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def add_save_option(parser: argparse.ArgumentParser, name: str, what: str = "the printed results") -> None:
    """--save [FILE]: write `what` to FILE (default bench/results/NAME); without it, nothing."""
    parser.add_argument(
        "--save",
        nargs="?",
        const=RESULTS / name,
        type=Path,
        metavar="FILE",
        help=f"also write {what} to FILE (default bench/results/{name}); without it nothing is written",
    )


class _Tee(io.TextIOBase):
    def __init__(self, *streams: io.TextIOBase) -> None:
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


@contextlib.contextmanager
def saved_output(path: Path | None) -> Iterator[None]:
    """Print as usual; with a path, write everything printed to it at the end (not on an error)."""
    if path is None:
        yield
        return
    if not path.parent.is_dir():
        raise SystemExit(f"--save: the folder {path.parent} does not exist")
    record = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, record)):
        yield
    path.write_text(record.getvalue())
    print(f"written {path}")
