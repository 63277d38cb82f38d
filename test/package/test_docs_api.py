"""docs/api.md: every Python block runs as written, and its options table is the parsers' own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from quirobot_cli.cli import build_parser
from quirobot_cli.cli_reference import BEGIN, END, markdown_table, option_rows, replace_table

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)


def test_the_page_has_the_tour():
    text = DOC.read_text()
    for heading in ("Forward kinematics", "Inverse kinematics", "Jacobian", "Inverse dynamics", "A plan"):
        assert f"### {heading}" in text
    assert "### A simulation" in text and len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_every_python_block_runs(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # a block that writes a file writes it here
    exec(compile(BLOCKS[index], f"{DOC.name} python block {index + 1}", "exec"), {"__name__": "__docs__"})
    assert capsys.readouterr().out, "a block of the tour should show its result"


def test_the_options_table_is_the_parsers():
    text = DOC.read_text()
    documented = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert documented == markdown_table(), (
        "docs/api.md's options table differs from the parsers: run "
        "`python -m quirobot_cli.cli_reference docs/api.md`"
    )


def test_the_table_has_every_option_of_every_verb():
    # Independent of the table's rendering: each verb's option strings and positionals, from argparse.
    rows = {(verb, invocation.split()[0].rstrip(",")) for verb, invocation, _ in option_rows()}
    subparsers = next(a for a in build_parser()._actions if a.dest == "verb")
    assert len(subparsers.choices) == 12
    for verb, parser in subparsers.choices.items():
        for action in parser._actions:
            if action.dest in ("help", "debug"):
                continue
            name = action.option_strings[0] if action.option_strings else (action.metavar or action.dest)
            assert (verb, name) in rows, f"quirobot {verb} {name} is not in the table"


def test_the_generator_rewrites_only_the_table():
    text = "intro\n" + BEGIN + "\nstale\n" + END + "\noutro\n"
    assert replace_table(text) == "intro\n" + markdown_table() + "\noutro\n"
