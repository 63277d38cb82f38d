"""Bench scripts print their results and write them only with --save (bench/bench_results.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPTS = sorted(path for path in BENCH.glob("*.py") if path.name != "bench_results.py")


def _bench(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


def _results_state() -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in (BENCH / "results").iterdir()}


@pytest.mark.parametrize("script", SCRIPTS, ids=[path.stem for path in SCRIPTS])
def test_every_bench_script_offers_save_and_says_it_writes_nothing_without_it(script, tmp_path):
    result = _bench(str(script), "--help", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    help_text = " ".join(result.stdout.split())
    assert "--save [FILE]" in help_text and "without it nothing is written" in help_text


def test_a_run_writes_nothing_without_save_and_its_printout_with_it(tmp_path):
    before = _results_state()
    plain = _bench(str(BENCH / "dynamics.py"), "--states", "10", cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "ours/pinocchio" in plain.stdout
    assert _results_state() == before and list(tmp_path.iterdir()) == []
    target = tmp_path / "dynamics.txt"
    saved = _bench(str(BENCH / "dynamics.py"), "--states", "10", "--save", str(target), cwd=tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout == target.read_text() + f"written {target}\n"
    assert _results_state() == before


def test_save_into_a_missing_folder_fails_before_the_run(tmp_path):
    result = _bench(str(BENCH / "dynamics.py"), "--save", str(tmp_path / "missing" / "x.txt"), cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == f"--save: the folder {tmp_path / 'missing'} does not exist"
