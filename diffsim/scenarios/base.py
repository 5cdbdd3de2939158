"""Scenario plumbing shared by every scenario (option parsing, output writing, progress)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

from ..catalog import ScenarioInfo, check_options, parse_sets
from ..io.results import write_json
from ..options import defaults


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A declared scenario (:class:`diffsim.catalog.ScenarioInfo`: name, options, jobs) with its
    implementation. ``run(options, model_overrides, out_dir)`` returns the summary.

    Scenarios that can be fitted to data (``diffsim fit``) also give ``system(options)`` (the
    :class:`~diffsim.System` the options describe) and ``observables`` (channel name → function of
    a trajectory, the columns of their data files; declared by name and unit in the catalog).
    ``statistics`` (a trajectory → dict of arrays, reduced per sample) are what
    ``diffsim montecarlo`` keeps besides the final state."""

    info: ScenarioInfo
    run: Callable[[dict[str, Any], dict[str, Any], Path], dict]
    # ``system(options)``: each implementation reads its options through :func:`scenario_options`
    # (names, types and ranges of the catalog's declarations), so a script's typo or 2.5 samples is
    # refused as on the command line
    system: Callable[[dict[str, Any]], Any] | None = None
    observables: dict[str, Callable] | None = None
    statistics: Callable | None = None

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def description(self) -> str:
        return self.info.description

    @property
    def options(self) -> dict[str, Any]:
        """``{name: default}`` of the declared options."""
        return defaults(self.info.options)

    @property
    def aliases(self) -> dict[str, str]:
        return dict(self.info.aliases)


def scenario_options(scenario: Scenario | ScenarioInfo, options=None, bounds: bool = True) -> dict:
    """Every option of the scenario: ``options`` (Python values, e.g. ``scenario.system({"t1": 0.5})``)
    checked against the catalog's declarations (:func:`diffsim.catalog.check_options`: an unknown
    name is refused with a did-you-mean, a value of the wrong type, length or range with a one-line
    :class:`~diffsim.options.OptionError`), the others at their defaults. The one place where the
    scenarios' Python entry points read their options; ``bounds=False`` checks names and types only
    (for an entry point whose own checks of the ranges say more, e.g. flexible-hub's link data)."""
    info = scenario.info if isinstance(scenario, Scenario) else scenario
    return check_options(info, options, bounds=bounds)


def parse_overrides(scenario: Scenario | ScenarioInfo, items: list[str]) -> tuple[dict, dict]:
    """Split ``k=v`` items into scenario options (parsed and checked against their declarations)
    and model parameters (NumPy arrays), :func:`diffsim.catalog.parse_sets`. A bad value or an
    unknown option name raises :class:`~diffsim.options.OptionError` with a one-line message."""
    info = scenario.info if isinstance(scenario, Scenario) else scenario
    options, params = parse_sets(info, items)
    return options, {k: np.asarray(v, dtype=float) for k, v in params.items()}


def check_output_dir(out_dir) -> Path:
    """Create ``out_dir`` (and parents) and check that a file can be written there; raises
    :class:`OSError` with a one-line message naming the directory otherwise."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".diffsim-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise OSError(f"cannot write to output directory {str(out)!r}: {e.strerror or e}") from None
    return out


def stages(items, progress: bool, desc: str):
    """``items`` as they are, or (``progress``) wrapped in a progress bar on stderr that counts
    the scenario's solves (mode sets, cases) and shows the elapsed time: for the simulators that
    have no per-step progress meter (compliant contact, LCP stepping)."""
    items = list(items)
    return tqdm(items, desc=desc, unit="solve", disable=not progress, leave=True)


def run_scenario(scenario: Scenario, out_dir, overrides: list[str] | None = None) -> dict:
    """Parse ``overrides`` (``k=v``), run the scenario into ``out_dir`` and write its
    ``summary.json``; returns the summary."""
    options, params = parse_overrides(scenario, overrides or [])
    out = check_output_dir(out_dir)
    t = time.perf_counter()
    summary = scenario.run(options, params, out)
    summary.setdefault("wall_time_s", time.perf_counter() - t)
    summary["scenario"] = scenario.name
    summary["options"] = options
    summary["overrides"] = {k: np.asarray(v).tolist() for k, v in params.items()}
    write_json(out / "summary.json", summary)
    return summary

