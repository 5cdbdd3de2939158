"""The tree meets the lint rules chosen in pyproject.toml ([tool.ruff]: pyflakes, pycodestyle's
errors, bugbear): unused imports and variables, undefined names, loop variables shadowed or
unused, mutable defaults. One run of ruff over the repository (~1 s)."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean():
    r = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", str(ROOT)],
                       capture_output=True, text=True, cwd=ROOT, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
