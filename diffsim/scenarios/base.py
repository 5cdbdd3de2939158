"""Scenario plumbing shared by every scenario (option parsing, output writing)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..io.results import write_json


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A named, documented run. ``run(options, model_overrides, out_dir)`` returns the summary.

    Scenarios that can be fitted to data (``diffsim fit``) also give ``system(options)`` (the
    :class:`~diffsim.System` the options describe), ``observables`` (channel name → function of a
    trajectory, the columns of their data files) and ``aliases`` (option name → the System's
    parameter name for the same quantity, e.g. ``K`` → ``contact.K``). ``statistics`` (a trajectory
    → dict of arrays, reduced per sample) are what ``diffsim montecarlo`` keeps besides the final
    state."""

    name: str
    description: str
    options: dict[str, Any]  # defaults; their types decide how --set values are parsed
    run: Callable[[dict[str, Any], dict[str, Any], Path], dict]
    system: Callable[[dict[str, Any]], Any] | None = None
    observables: dict[str, Callable] | None = None
    aliases: dict[str, str] | None = None
    statistics: Callable | None = None


def _parse_value(text: str, default=None):
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = text
    if isinstance(default, bool):
        if isinstance(value, str):
            value = value.lower() in ("1", "true", "yes", "on")
        return bool(value)
    if isinstance(default, float) and isinstance(value, (int, float)):
        return float(value)
    if isinstance(default, int) and isinstance(value, (int, float)) and float(value).is_integer():
        return int(value)
    return value


def parse_overrides(scenario: Scenario, items: list[str]) -> tuple[dict, dict]:
    """Split ``k=v`` items into scenario options and model parameters (names with a dot or
    ``gravity``). Unknown option names are refused with the list of valid ones."""
    options, params = dict(scenario.options), {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set expects name=value, got {item!r}")
        key, text = item.split("=", 1)
        key = key.strip()
        if key in scenario.options:
            options[key] = _parse_value(text, scenario.options[key])
        elif "." in key or key == "gravity":
            params[key] = np.asarray(_parse_value(text), dtype=float)
        else:
            raise ValueError(
                f"unknown option {key!r} for scenario {scenario.name!r}; options: {sorted(scenario.options)}; "
                "model parameters look like body.<name>.mass (see diffsim.param_names)"
            )
    return options, params


def run_scenario(scenario: Scenario, out_dir, overrides: list[str] | None = None) -> dict:
    options, params = parse_overrides(scenario, overrides or [])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    summary = scenario.run(options, params, out)
    summary.setdefault("wall_time_s", time.perf_counter() - t)
    summary["scenario"] = scenario.name
    summary["options"] = options
    summary["overrides"] = {k: np.asarray(v).tolist() for k, v in params.items()}
    write_json(out / "summary.json", summary)
    return summary
