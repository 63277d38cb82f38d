"""The `quirobot` contract every verb keeps: --version, --debug anywhere, one-line argparse errors.

Every refusal is one line on stderr and exit 2, whichever verb refuses and whether argparse or the
handler does; `--debug` (before or after the verb) shows the traceback instead.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from quirobot_cli.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def _verbs() -> list[str]:
    subparsers = next(a for a in build_parser()._actions if a.dest == "verb")
    return sorted(subparsers.choices)


VERBS = _verbs()


def _setup_py_keyword(name: str) -> str:
    return re.search(rf'{name}="([^"]+)"', (ROOT / "setup.py").read_text()).group(1)


def test_every_verb_is_registered():
    assert (
        sorted(
            ["urdf", "export", "check", "render", "fk", "ik", "workspace", "size", "simulate", "accuracy"]
            + ["calibrate", "register"]
        )
        == VERBS
    )


def test_version_is_the_installed_distributions_from_setup_py():
    executable = shutil.which("quirobot")
    assert executable, "the quirobot console script is not installed (pip install -e .)"
    result = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"quirobot {_setup_py_keyword('version')}\n"
    assert importlib.metadata.version("quirobot") == _setup_py_keyword("version")


def test_python_floor_is_the_one_ruff_checks_the_code_against():
    floor = _setup_py_keyword("python_requires")
    assert floor.startswith(">=")
    major, minor = floor[2:].split(".")
    target = re.search(r'target-version = "py(\d)(\d+)"', (ROOT / "ruff.toml").read_text())
    assert (major, minor) == target.groups()


@pytest.mark.parametrize("before", [True, False], ids=["before-the-verb", "after-the-verb"])
def test_debug_shows_the_traceback_before_or_after_the_verb(before, capsys):
    argv = ["fk", "1", "2"]
    argv = ["--debug", *argv] if before else [*argv, "--debug"]
    with pytest.raises(ValueError, match="fk takes 5 joint values"):
        main(argv)


def test_without_debug_the_same_error_is_one_line(capsys):
    assert main(["fk", "1", "2"]) == 2
    assert capsys.readouterr().err == (
        "quirobot fk: error: fk takes 5 joint values (d1 d2 d3 theta4 theta5), got 2\n"
    )


def _argparse_refusal(capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "usage:" not in captured.err, captured.err
    return captured.err


@pytest.mark.parametrize("verb", VERBS)
def test_an_unknown_option_is_one_line_exit_2_for_every_verb(verb, capsys, tmp_path):
    positional = [str(tmp_path / "out.png")] if verb in ("export", "render") else []
    err = _argparse_refusal(capsys, [verb, *positional, "--no-such-option"])
    assert err.startswith(f"quirobot {verb}: error: unrecognized arguments: --no-such-option"), err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([], "required: VERB"),
        (["drill"], "invalid choice: 'drill'"),
        (["--no-such-option", "urdf"], "unrecognized arguments: --no-such-option"),
        (["simulate", "--depth", "deep"], "--depth: invalid float value: 'deep'"),
        (["simulate", "--task"], "--task: expected one argument"),
        (["size", "--model", "exact"], "--model: invalid choice: 'exact'"),
        (["size", "--poses", "many"], "--poses: invalid int value: 'many'"),
    ],
    ids=[
        "no-verb",
        "unknown-verb",
        "unknown-option",
        "simulate-type",
        "simulate-value",
        "size-choice",
        "size-type",
    ],
)
def test_argparse_refusals_are_one_line_exit_2(argv, words, capsys):
    assert words in _argparse_refusal(capsys, argv)
