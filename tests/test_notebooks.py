"""Every notebook in notebooks/ runs end to end, as a user would run it top to bottom.

The code cells run in order in one fresh Python process (the repository root as working
directory, the non-interactive matplotlib backend), so nothing from the test session leaks in;
a failing cell fails the test with the cell's number and traceback."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))

RUNNER = """
import json, sys, traceback
cells = json.load(open(sys.argv[1]))
ns = {"__name__": "__main__"}
for k, src in enumerate(cells):
    try:
        exec(compile(src, f"<cell {k}>", "exec"), ns)
    except Exception:
        traceback.print_exc()
        print(f"notebook cell {k} failed:\\n{src}", file=sys.stderr)
        sys.exit(1)
"""


def code_cells(path: pathlib.Path) -> list[str]:
    nb = json.loads(path.read_text())
    # IPython magics/shell lines (%, !) are not Python: a notebook meant for this test has none
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_end_to_end(path, tmp_path):
    cells_file = tmp_path / "cells.json"
    cells_file.write_text(json.dumps(code_cells(path)))
    env = dict(os.environ, MPLBACKEND="Agg", DIFFSIM_NOTEBOOK_TEST="1")
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(cells_file)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"{path.name} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
