"""The documentation builds with warnings as errors (``mkdocs build --strict``, issue 19), and
its API reference has an entry for every public name of ``diffsim`` (``__all__``)."""

from __future__ import annotations

import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import diffsim

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[test]' installs it")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings is not installed: pip install -e '.[test]'")
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return out


@pytest.mark.slow
def test_docs_build_strict(site):
    for page in ("guide/simulate", "guide/identify", "guide/montecarlo", "guide/cli", "api/diffsim"):
        assert (site / page / "index.html").is_file(), page
    # the guide pages are the README's sections, included at build time
    simulate = (site / "guide" / "simulate" / "index.html").read_text()
    assert "models.path" in simulate and "jax_enable_x64" in simulate


@pytest.mark.slow
def test_every_public_name_is_in_the_api_reference(site):
    html = "".join(p.read_text() for p in (site / "api").glob("*/index.html"))
    names = [n for n in diffsim.__all__ if not isinstance(getattr(diffsim, n), types.ModuleType)]
    missing = [n for n in names if not re.search(rf'id="diffsim(\.\w+)*\.{n}"', html)]
    assert not missing, f"not in the API reference: {missing}"
