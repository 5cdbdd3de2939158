"""The commands behind ``diffsim run | fit | montecarlo | plan`` (they import JAX; the parser,
:mod:`diffsim.cli`, does not). Each takes the parsed arguments and the scenario's catalog entry
and returns the exit code; errors propagate to :func:`diffsim.cli.main`, which reports them in
one line."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

import jax

from .catalog import ScenarioInfo
from .identify import fit, load
from .identify.fit import zero_start
from .io.results import jsonable
from .montecarlo import MonteCarloWarning, parse
from .montecarlo import run as run_montecarlo
from .options import parse_assignment
from .scenarios import SCENARIOS, check_output_dir, parse_overrides, run_scenario
from .simulation.system import set_params


def _precision(args):
    jax.config.update("jax_enable_x64", not getattr(args, "float32", False))


def _tolerances(args, info: ScenarioInfo, sets: list[str]) -> list[str]:
    """``--set`` items with float32's tolerances first (``--float32``: the float64 defaults, down
    to 1e-13, are below float32 round-off, and every step would fail); the user's own still win."""
    return [f"{k}=1e-6" for k in ("rtol", "atol") if k in info.options] + list(sets) if args.float32 else list(sets)


def run(args, info: ScenarioInfo) -> int:
    """``diffsim run``: options checked, ``--out`` checked, the scenario run, its summary printed."""
    _precision(args)
    scenario = SCENARIOS[info.name]
    sets = _tolerances(args, info, list(args.sets) + (["progress=true"] if args.progress else []))
    out = args.out or f"out/{info.name}"
    summary = run_scenario(scenario, out, sets)
    keys = [k for k in summary if k not in ("options", "body_names", "figures")]
    print(json.dumps(jsonable({k: summary[k] for k in keys}), indent=2, default=str))
    figures = summary.get("figures") or []
    written = ["trajectory.npz", "summary.json"] + ([f"figures: {', '.join(figures)}"] if figures else [])
    print(f"results written to {out}/ ({', '.join(written)})")
    return 0 if summary.get("status", "success") == "success" else 1


def _system(info: ScenarioInfo, sets: list[str]):
    """The scenario's System with ``--set`` applied (options; parameters by System name or shorthand)."""
    scenario = SCENARIOS[info.name]
    aliases = info.aliases
    options, params = parse_overrides(scenario, sets)
    system = set_params(scenario.system(options), {aliases.get(k, k): v for k, v in params.items()})
    return scenario, options, system


def montecarlo(args, info: ScenarioInfo) -> int:
    """``diffsim montecarlo``: samples.npz, summary.json and figures in ``--out`` (resumable)."""
    _precision(args)
    if args.coordinator:
        # CPU processes need gloo collectives for the end-of-study barrier (ignored by GPUs)
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=args.coordinator, num_processes=args.num_processes,
                                   process_id=args.process_id)
    # options that only shape `diffsim run`'s written data (its noise and seed) would be silently ignored
    given = [parse_assignment(item)[0] for item in args.sets]
    inert = [k for k in given if k in info.run_only]
    if inert:
        raise ValueError(f"--set {', '.join(inert)}: {'these options do' if len(inert) > 1 else 'this option does'} "
                         f"not apply to montecarlo (only 'diffsim run {info.name}' uses "
                         f"{'them' if len(inert) > 1 else 'it'}, for the data it writes)")
    sets = _tolerances(args, info, args.sets)
    scenario, options, system = _system(info, sets)
    dists, spelled = {}, {}
    for item in args.vary:
        name, sep, spec = item.partition("~")
        if not sep:
            raise ValueError(f"--vary expects NAME~DIST, e.g. 'K~lognormal(13.8,0.1)', got {item!r}")
        full = info.aliases.get(name.strip(), name.strip())
        if full in dists:
            raise ValueError(f"--vary {spelled[full]} and --vary {name.strip()} both name the parameter {full!r}: "
                             "give one distribution per parameter")
        dists[full], spelled[full] = parse(spec), name.strip()
    manifest = os.path.join(args.out, "manifest.json")
    if os.path.exists(manifest) and not args.resume:
        raise ValueError(f"{args.out} already holds a study: pass --resume to continue it, or choose another --out")
    check_output_dir(args.out)
    # the study's identity names the scenario and its options (figures and progress do not change it)
    _, params = parse_overrides(scenario, sets)
    context = {"scenario": info.name, "options": {k: v for k, v in options.items() if k not in ("plots", "progress")},
               "parameters": {k: v.tolist() for k, v in params.items()}}
    progress = not args.no_progress and (options.get("progress", True) if "progress" in given else True)
    with warnings.catch_warnings(record=True) as notes:  # resumed across versions, figures skipped: one line each
        warnings.simplefilter("always", MonteCarloWarning)
        res = run_montecarlo(system, dists, args.samples, scenario.statistics, key=jax.random.PRNGKey(args.seed),
                             chunk_size=args.chunk, out=args.out, progress=progress, context=context)
        written = res.save(args.out, plots=bool(options.get("plots", True))) if jax.process_index() == 0 else []
    for note in notes:
        if issubclass(note.category, MonteCarloWarning):
            print(f"diffsim: note: {note.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(note.message, note.category, note.filename, note.lineno)
    print(json.dumps(jsonable({"n_samples": res.n_samples, "status_counts": res.status_counts,
                               "samples_per_s": res.samples_per_s, "wall_time_s": res.wall_time_s,
                               "chunks_run": res.chunks_run, "chunks_resumed": res.chunks_resumed}), indent=2))
    figures = [p.name for p in written if p.suffix == ".png"]
    print(f"results written to {args.out}/ (samples.npz, summary.json"
          f"{', ' + ', '.join(figures) if figures else ''})")
    return 0


def fit_command(args, info: ScenarioInfo) -> int:
    """``diffsim fit``: fit.json and figures in ``--out``; exit code 1 if the fit did not converge."""
    _precision(args)
    aliases = info.aliases
    sigma = {}
    for item in args.sigma:
        ch, sep, val = item.partition("=")
        if not sep:
            raise ValueError(f"--sigma expects CHANNEL=SIGMA, got {item!r}")
        try:
            sigma[ch.strip()] = float(val)
        except ValueError:
            raise ValueError(f"--sigma {ch.strip()} expects a number, got {val!r}") from None
    # starting values given by shorthand (K=5e5) are System parameters, not options
    sets, starts = [], {}
    for item in args.sets:
        key, sep, val = item.partition("=")
        if sep and key.strip() in aliases and key.strip() not in info.options:
            try:
                starts[aliases[key.strip()]] = float(val)
            except ValueError:
                raise ValueError(f"starting value {key.strip()} expects a number, got {val!r}") from None
        else:
            sets.append(item)
    scenario, options, system = _system(info, _tolerances(args, info, sets))
    system = set_params(system, starts)
    given = [n.strip() for n in args.params.split(",") if n.strip()]
    names = [aliases.get(n, n) for n in given]
    for path in [*args.data, *([args.holdout] if args.holdout else [])]:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"data file {path!r} not found")
    exps = [load(path, sigma=sigma or None, name=n) for path, n in zip(args.data, _experiment_names(args.data))]
    holdout = load(args.holdout, sigma=sigma or None, name="holdout") if args.holdout else None
    _check_zero_starts(system, given, names)
    # scenario hooks: observables that depend on the options (sensor positions, motion), checks of
    # the data's channels, and extra entries of fit.json (e.g. flexible-hub's modal report)
    observables = scenario.observables_for(options) if hasattr(scenario, "observables_for") else scenario.observables
    if hasattr(scenario, "check_data"):
        scenario.check_data([*exps, *([holdout] if holdout else [])], options)
    check_output_dir(args.out)
    res = fit(system, names, exps, observables=observables, holdout=holdout, n_starts=args.starts,
              max_steps=args.max_steps)
    out = res.to_json()
    out["params"] = {g: {**out["params"][n], "system_name": n} for g, n in zip(given, names)}
    out["scenario"], out["data"], out["options"] = scenario.name, [str(d) for d in args.data], options
    if hasattr(scenario, "fit_extras"):
        out.update(scenario.fit_extras(set_params(system, res.value), system, args.out))
    res.save(args.out, document=out)
    print(res.summary())
    print(f"results written to {args.out}/ (fit.json and figures)")
    return 0 if res.converged else 1


def _experiment_names(paths) -> list[str]:
    """The experiments' names: each file's stem (``data``), or where stems collide as many of the
    trailing path parts as tell the files apart (``runs/a/data.csv``, ``runs/b/data.csv`` →
    ``a/data``, ``b/data``; with the suffix where only that differs, ``data.csv``, ``data.npz``).
    The same file twice keeps one name: :func:`diffsim.identify.fit` numbers the repeats (``#2``)."""
    full = [Path(os.path.abspath(p)) for p in paths]
    parts = [f.with_suffix("").relative_to(f.anchor).parts for f in full]
    names = []
    for i, pi in enumerate(parts):
        others = [pj for pj in parts if pj != pi]
        k = 1
        while k < len(pi) and any(pj[-k:] == pi[-k:] for pj in others):
            k += 1
        name = "/".join(pi[-k:])
        if any(pj == pi and full[j] != full[i] for j, pj in enumerate(parts)):
            name += full[i].suffix
        names.append(name)
    return names


def _check_zero_starts(system, given, names):
    """A positive quantity fitted from 0 (a scenario's default, e.g. flexible-hub's air damping) has
    no log-space start (:func:`diffsim.identify.fit` refuses it): said with the flag that fixes it."""
    for g, n in zip(given, names):
        if zero_start(system, n):
            raise ValueError(f"--params {g}: its start is 0 (the scenario's value), the edge of a quantity that cannot "
                             f"be negative: give a positive start, e.g. --set {g}=<value>")


#: subcommand → handler
def plan(args, info: ScenarioInfo) -> int:
    """``diffsim plan``: the scenario's planning task solved (:func:`diffsim.plan.solve`), ``plan.npz``
    (``t``, ``tau``, ``q``, ``v``), ``summary.json`` (``cost``, ``iterations``, ``status``, timings, the
    task's figures of merit) and figures in ``--out``; exit code 0 when the planner converged."""
    _precision(args)
    out = args.out or f"out/{info.name}"
    summary = run_scenario(SCENARIOS[info.name], out, list(args.sets))
    keys = [k for k in summary if k not in ("options", "figures")]
    print(json.dumps(jsonable({k: summary[k] for k in keys}), indent=2, default=str))
    figures = summary.get("figures") or []
    written = ["plan.npz", "summary.json"] + ([f"figures: {', '.join(figures)}"] if figures else [])
    print(f"results written to {out}/ ({', '.join(written)})")
    return 0 if summary.get("status") == "converged" else 1


COMMANDS = {"run": run, "fit": fit_command, "montecarlo": montecarlo, "plan": plan}

__all__ = ["COMMANDS", "fit_command", "montecarlo", "plan", "run"]
