"""Entry point of the ``diffsim`` console command (``[project.scripts]`` in pyproject.toml).

``diffsim --help`` and ``diffsim list`` must answer at once, but importing any module of the
``diffsim`` package first runs the package's ``__init__``, which gathers the public API and so
imports JAX (seconds). This module lives outside the package: it creates the ``diffsim`` package
module without running its ``__init__`` (``importlib.util.module_from_spec``, the first half of
an ordinary import), imports the JAX-free parser ``diffsim.cli`` into it, and runs the
``__init__`` on that same module object (the second half, ``exec_module``) only when a command
is about to compute. ``python -m diffsim`` imports the package the ordinary way.
"""

from __future__ import annotations

import importlib.util
import sys


def main() -> int:
    finish = None
    if "diffsim" not in sys.modules:
        spec = importlib.util.find_spec("diffsim")
        package = importlib.util.module_from_spec(spec)
        sys.modules["diffsim"] = package
        done = []

        def finish():
            if not done:
                done.append(True)
                spec.loader.exec_module(package)

    from diffsim.cli import main as cli_main

    return cli_main(before_compute=finish)
