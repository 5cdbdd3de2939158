"""The README's snippets run as written (issue 19, finding 10: "Using it" opened a model file
relative to the working directory, so it failed outside the repository, and never showed the
Monte Carlo result it computed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def section(title: str) -> str:
    """The text of the README's ``## title`` section."""
    text = (REPO / "README.md").read_text()
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, f"README has no section {title!r}"
    return m.group(1)


def code_blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.S | re.M)


def test_using_it_names_packaged_files_and_shows_its_results():
    (code,) = code_blocks(section("Using it"), "python")
    assert "diffsim/scenarios/data" not in code and "models.path(" in code
    assigned = set(re.findall(r"^(\w+) = ", code, re.M))
    shown = set(re.findall(r"print\((\w+)", code))
    assert "finals" in assigned and "finals" in shown


def test_quick_start_commands_exist():
    (code,) = code_blocks(section("Quick start"), "bash")
    assert "python3 -m pytest -q" in code and (REPO / ".ci" / "run").read_text().strip().endswith(
        "python3 -m pip install -e '.[test]' && python3 -m pytest -q")
    from diffsim.cli import main

    for m in re.finditer(r"python3 -m diffsim (run \S+)", code):
        with pytest.raises(SystemExit) as e:  # the scenario exists and its options are listed
            main([*m.group(1).split(), "--help"])
        assert e.value.code == 0


@pytest.mark.slow
def test_using_it_runs_outside_the_repository(tmp_path):
    (code,) = code_blocks(section("Using it"), "python")
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("success") and len(lines) >= 3, proc.stdout
