"""Every notebook in notebooks/ is a valid nbformat 4.5 notebook with cell ids, and runs end to
end in a fresh Jupyter kernel (nbclient), as a user would run it top to bottom.

The kernel starts with the repository root as working directory and the non-interactive
matplotlib backend; a failing cell fails the test with nbclient's report of the cell and its
traceback."""

from __future__ import annotations

import json
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

REPO = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_valid_and_every_cell_has_an_id(path):
    """Issue 19, finding 11: the cells had no ids (required since nbformat 4.5)."""
    raw = json.loads(path.read_text())  # as stored: nbformat.read would fill missing ids in silently
    assert (raw["nbformat"], raw["nbformat_minor"]) >= (4, 5), path.name
    ids = [c.get("id") for c in raw["cells"]]
    assert all(ids), f"{path.name}: cells without id: {[k for k, i in enumerate(ids) if not i]}"
    assert len(set(ids)) == len(ids)
    nbformat.validate(nbformat.from_dict(raw))


@pytest.mark.slow
@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_end_to_end(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("DIFFSIM_NOTEBOOK_TEST", "1")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=1200, kernel_name="python3", resources={"metadata": {"path": str(REPO)}})
    client.execute()  # raises CellExecutionError naming the cell, with its traceback
