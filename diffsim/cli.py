"""``diffsim`` command line (the parser; JAX-free):

* ``diffsim run <scenario> [--set k=v ...] [--out DIR] [--progress] [--float32]``
* ``diffsim fit <scenario> --data FILE [--data FILE ...] --params NAME[,NAME...] [--set k=v ...]
  [--holdout FILE] [--sigma CH=S ...] --out DIR``
* ``diffsim montecarlo <scenario> --samples N --vary NAME~normal(MU,SIGMA) [--vary ...]
  [--set k=v ...] [--chunk N] [--resume] --out DIR``
* ``diffsim plan <scenario> [--set k=v ...] [--out DIR]``
* ``diffsim list [--verbose]``; ``diffsim <command> <scenario> --help`` lists the scenario's options.

Every user error (a bad option value, an unknown name, an unwritable ``--out``, a missing data
file) is one line on stderr and exit code 2, nothing written; ``--debug`` shows the traceback.

The parser and the help texts come from declarations (:mod:`diffsim.options`,
:mod:`diffsim.catalog`) that import neither NumPy nor JAX, so ``diffsim --help`` and
``diffsim list`` answer at once; the commands themselves (:mod:`diffsim.commands`) are imported
only when one runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from .catalog import CATALOG, parse_sets
from .options import Option, add_flag, format_table

# Set before JAX initialises its CPU backend (first computation, not import). Measured: XLA CPU
# compiles ~2x faster without its fusion emitters, and runs no slower; without handing each small
# dot to Eigen's thread pool every S0 row ran faster on the 2 quiet cores (README, "Core speed").
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=false --xla_cpu_multi_thread_eigen=false")

#: the subcommands that take a scenario, and the job a scenario must declare for each
SCENARIO_COMMANDS = {"run": "run", "fit": "fit", "montecarlo": "montecarlo", "plan": "plan"}

#: the flags of ``fit`` and ``montecarlo`` that take a value, declared once (parsed and checked)
FIT_FLAGS = {
    "--starts": Option(1, "multi-start count", ge=1),
    "--max-steps": Option(100, "Levenberg–Marquardt iteration limit", ge=1),
}
MONTECARLO_FLAGS = {
    "--samples": Option(1, "number of samples", ge=1),
    "--chunk": Option(None, "samples per compiled call (default: sized from memory)", type=int, ge=1, nullable=True),
    "--seed": Option(0, "random seed (sample i uses fold_in(PRNGKey(seed), i))", ge=0),
    "--num-processes": Option(None, "multi-host: number of processes", type=int, ge=1, nullable=True),
    "--process-id": Option(None, "multi-host: this process's index", type=int, ge=0, nullable=True),
    "--cpu-devices": Option(None, "CPU devices to shard the samples over, one XLA thread each (default: the core "
                            "count; 1 in a multi-host run; no effect on GPUs)", type=int, ge=1, nullable=True),
}


class UserError(Exception):
    """A mistake in the command line or its inputs: reported in one line, exit code 2."""


def scenario_list(job: str | None = None, verbose: bool = False) -> str:
    """One line per scenario (those serving ``job``); ``verbose`` adds each one's options."""
    items = [(n, s) for n, s in CATALOG.items() if job is None or job in s.jobs]
    width = max(len(n) for n, _ in items)
    lines = []
    for n, s in items:
        lines.append(f"  {n:<{width}}  {s.description}")
        if verbose:
            lines.append(format_table(s.options, indent="      "))
            if s.aliases:
                lines.append("      parameter shorthands: " + ", ".join(f"{k} = {v}" for k, v in s.aliases.items()))
            if s.observables:
                lines.append("      observables: " + "; ".join(f"{k}: {v}" for k, v in s.observables.items()))
    return "\n".join(lines)


def scenario_help(name: str) -> str:
    """The options of scenario ``name`` (for ``diffsim run <name> --help``)."""
    s = CATALOG[name]
    text = f"\nscenario {name}: {s.description}\n\noptions (--set name=value; default [unit]):\n"
    text += format_table(s.options)
    text += ("\n\nany named model parameter is also accepted: --set body.<body>.mass=500 "
             "(the names: diffsim.param_names)")
    if s.aliases:
        text += "\nparameter shorthands: " + ", ".join(f"{k} = {v}" for k, v in s.aliases.items())
    if s.observables:
        text += "\nobservables (data columns): " + "; ".join(f"{k}: {v}" for k, v in s.observables.items())
    return text + "\n"


def _common(p: argparse.ArgumentParser, sets_help: str, float32: bool = True):
    p.add_argument("--set", dest="sets", action="extend", nargs="+", default=[], metavar="NAME=VALUE", help=sets_help)
    if float32:  # not for plan: its scenario computes its target and initial guess in float64
        p.add_argument("--float32", action="store_true", help="run in float32 (default float64)")
    p.add_argument("--debug", action="store_true", help="show the full traceback of an error")


def build_parser() -> argparse.ArgumentParser:
    """The ``diffsim`` argument parser (no JAX)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="diffsim", description="Differentiable multibody simulation.",
                                epilog="scenarios:\n" + scenario_list() + "\n\n'diffsim run <scenario> --help' lists "
                                "a scenario's options.", formatter_class=fmt)
    sub = p.add_subparsers(dest="command", required=True, metavar="{run,fit,montecarlo,plan,list}")
    run = sub.add_parser(
        "run", help="run a scenario and write trajectory.npz, summary.json and figures", formatter_class=fmt,
        epilog="scenarios:\n" + scenario_list("run") + "\n\n'diffsim run <scenario> --help' lists its options."
        "\n\nexample:\n  diffsim run seed000-dual-arm --set t1=5 --set body.base.mass=500 --out out/s0",
    )
    run.add_argument("scenario", help="scenario name (listed below)")
    _common(run, "scenario options or named model parameters: --set a=1 b=2 or --set a=1 --set b=2")
    run.add_argument("--out", default=None, help="output directory (default: out/<scenario>)")
    run.add_argument("--progress", action="store_true", help="show progress while simulating (every scenario)")

    f = sub.add_parser(
        "fit", help="fit named parameters of a scenario's system to measured data; writes fit.json and figures",
        formatter_class=fmt,
        epilog="fittable scenarios:\n" + scenario_list("fit", verbose=False)
        + "\n\n'diffsim fit <scenario> --help' lists its options, shorthands and observables."
        "\n\nexample:\n  diffsim run ball-drop --set noise=2e-5 --out out/drop\n"
        "  diffsim fit ball-drop --data out/drop/data.csv --params K,c_r --set K=5e5 c_r=0.7 --sigma z=2e-5 "
        "--out out/fit",
    )
    f.add_argument("scenario", help="a scenario with a system (listed below)")
    f.add_argument("--data", action="append", required=True, metavar="FILE",
                   help="measured data: CSV with a header row (t and one column per observable) or .npz; repeat for "
                        "several experiments fitted jointly")
    f.add_argument("--params", required=True, metavar="NAME[,NAME...]",
                   help="parameters to fit: System names (contact.K) or the scenario's shorthands (K)")
    _common(f, "scenario options and starting values (K=5e5 or contact.K=5e5)")
    f.add_argument("--holdout", default=None, metavar="FILE", help="validation data: reported as holdout_rms")
    f.add_argument("--sigma", action="extend", nargs="+", default=[], metavar="CHANNEL=SIGMA",
                   help="noise standard deviation per channel (default: estimated from the residuals)")
    for flag, opt in FIT_FLAGS.items():
        add_flag(f, flag, opt)
    f.add_argument("--out", required=True, help="output directory")

    mc = sub.add_parser(
        "montecarlo", help="run a Monte Carlo study of a scenario's system; writes samples.npz, summary.json and "
        "figures", formatter_class=fmt,
        epilog="scenarios with a system:\n" + scenario_list("montecarlo")
        + "\n\n'diffsim montecarlo <scenario> --help' lists its options and shorthands."
        "\n\ndistributions: normal(MU,SIGMA), lognormal(MU,SIGMA) (of log x), uniform(LO,HI), "
        "truncnormal(MU,SIGMA,LO,HI)\n\nexample:\n  diffsim montecarlo ball-drop --samples 1000 "
        "--vary 'c_r~uniform(0.6,0.9)' --vary 'K~lognormal(13.8,0.2)' --out out/mc",
    )
    mc.add_argument("scenario", help="a scenario with a system (listed below)")
    add_flag(mc, "--samples", MONTECARLO_FLAGS["--samples"], required=True)
    mc.add_argument("--vary", action="append", required=True, metavar="NAME~DIST",
                    help="an uncertain System parameter (or the scenario's shorthand) and its distribution")
    _common(mc, "scenario options and nominal parameter values")
    add_flag(mc, "--chunk", MONTECARLO_FLAGS["--chunk"])
    add_flag(mc, "--seed", MONTECARLO_FLAGS["--seed"])
    mc.add_argument("--resume", action="store_true", help="continue the study already in --out")
    mc.add_argument("--no-progress", action="store_true", help="no progress bar")
    mc.add_argument("--out", required=True, help="output directory (shared by all processes of a multi-host run)")
    mc.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                    help="multi-host: jax.distributed coordinator (process 0's address); run the same command on "
                         "every host with its --process-id")
    add_flag(mc, "--num-processes", MONTECARLO_FLAGS["--num-processes"])
    add_flag(mc, "--process-id", MONTECARLO_FLAGS["--process-id"])
    add_flag(mc, "--cpu-devices", MONTECARLO_FLAGS["--cpu-devices"])

    pl = sub.add_parser(
        "plan", help="plan torques for a scenario's task (diffsim.plan); writes plan.npz, summary.json and figures",
        formatter_class=fmt,
        epilog="planning scenarios:\n" + scenario_list("plan")
        + "\n\n'diffsim plan <scenario> --help' lists its options.\n\nexample:\n  diffsim plan ur5-reach "
        "--set method=ddp limits=true --out out/ur5",
    )
    pl.add_argument("scenario", help="a planning scenario (listed below)")
    _common(pl, "scenario options or named model parameters: --set a=1 b=2 or --set a=1 --set b=2", float32=False)
    pl.add_argument("--out", default=None, help="output directory (default: out/<scenario>)")

    ls = sub.add_parser("list", help="list the scenarios (--verbose: with their options)")
    ls.add_argument("--verbose", "-v", action="store_true", help="list each scenario's options with defaults and units")
    return p


def _scenario_help_request(argv: list[str]) -> str | None:
    """``diffsim <command> <scenario> ... --help``: the scenario named (a name of the catalog, else
    the first argument when it is no flag: an unknown name), None for the command's own help."""
    if len(argv) < 2 or argv[0] not in SCENARIO_COMMANDS or not {"-h", "--help"} & set(argv):
        return None
    names = [a for a in argv[1:] if a in CATALOG]
    return names[0] if names else None if argv[1].startswith("-") else argv[1]


def check_scenario(name: str, command: str):
    """The catalog entry of ``name``, if it serves ``command``; :class:`UserError` otherwise."""
    if name not in CATALOG:
        raise UserError(f"unknown scenario {name!r}; available: {', '.join(CATALOG)}")
    info = CATALOG[name]
    job = SCENARIO_COMMANDS[command]
    if job not in info.jobs:
        able = [n for n, s in CATALOG.items() if job in s.jobs]
        raise UserError(f"scenario {name!r} does not support '{command}' (it supports: {', '.join(info.jobs)}); "
                        f"these do: {', '.join(able)}")
    return info


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def _raised_here(e: BaseException) -> bool:
    """Whether diffsim's own code raised ``e`` (its checks of the input: OptionError, ParamError,
    FitError, ... — user errors) rather than NumPy or JAX inside it (a bug: the one-line report
    then says so and asks for ``--debug``)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_PACKAGE + os.sep)


def _remove_if_empty(out, fresh: bool):
    """A failed command leaves no empty output directory behind (one it created; a user error such
    as an unknown parameter name is found after the directory was checked for writing)."""
    if fresh and os.path.isdir(out) and not os.listdir(out):
        os.rmdir(out)


def error_message(e: BaseException) -> str:
    """One line for the user: the exception's own text (a ``KeyError``'s message without the
    quotes of its repr)."""
    if isinstance(e, KeyError) and len(e.args) == 1 and isinstance(e.args[0], str):
        text = e.args[0]
    else:
        text = str(e) or type(e).__name__
    return " ".join(text.split())


def cpu_devices(n: int | None, multi_host: bool = False) -> None:
    """Give this process ``n`` CPU devices (default: one per core; one in a multi-host run) before
    JAX starts its backend, so that a Monte Carlo study shards over every core as MuJoCo's rollout
    spreads over its thread pool (``benchmarks/bench_montecarlo.py``). A device count already set
    in ``XLA_FLAGS`` (``--xla_force_host_platform_device_count``) wins."""
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return
    explicit = n is not None
    n = (1 if multi_host else os.cpu_count() or 1) if n is None else n
    import jax  # here, not at the top: --help and list answer without JAX (tests/test_architecture.py)

    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:  # JAX already computes in this process (``main`` called from Python)
        if explicit and n != len(jax.devices("cpu")):
            raise UserError(f"--cpu-devices {n}: this process's JAX has already started with "
                            f"{len(jax.devices('cpu'))} CPU devices (set it before the first computation)") from None


def main(argv=None, before_compute=None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code (0 success,
    1 the computation finished without success, 2 a user error).

    ``before_compute``: called once before a command imports the numerical stack (the console
    entry point uses it to finish importing the ``diffsim`` package, see ``diffsim_launcher``)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    name = _scenario_help_request(argv)
    if name is not None:
        try:  # the help of a scenario the command cannot run would list options it cannot use
            check_scenario(name, argv[0])
        except UserError as e:
            print(f"diffsim: {e}", file=sys.stderr)
            return 2
        sub = parser._subparsers._group_actions[0].choices[argv[0]]  # noqa: SLF001 (argparse has no getter)
        print(sub.format_help() + scenario_help(name))
        raise SystemExit(0)
    args = parser.parse_args(argv)
    if args.command == "list":
        print(scenario_list(verbose=args.verbose))
        return 0
    debug = args.debug
    out = getattr(args, "out", None)
    if out is None and args.command in ("run", "plan"):
        out = args.out = f"out/{args.scenario}"  # the default of both
    fresh = out is not None and not os.path.exists(out)  # removed again if an error leaves it empty
    try:
        info = check_scenario(args.scenario, args.command)
        if args.command in ("run", "plan"):
            if getattr(args, "progress", False) and "progress" not in info.options:
                raise UserError(f"scenario {info.name!r} has no progress display")
            parse_sets(info, args.sets)  # every value checked before anything is imported or written
        if before_compute is not None:
            before_compute()
        if args.command == "montecarlo":
            cpu_devices(args.cpu_devices, multi_host=args.coordinator is not None)
        # the commands import JAX: only now, so that --help and list stay instant
        from .commands import COMMANDS

        return COMMANDS[args.command](args, info)
    except KeyboardInterrupt:
        _remove_if_empty(out, fresh)
        print("diffsim: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 (the one place that turns errors into exit codes)
        _remove_if_empty(out, fresh)
        user = isinstance(e, (UserError, OSError)) or (isinstance(e, (ValueError, KeyError)) and _raised_here(e))
        if debug:
            traceback.print_exc()
        kind = "" if user else "internal error: "
        hint = "" if debug or user else " (rerun with --debug for the traceback, and please report it)"
        print(f"diffsim: {kind}{error_message(e)}{hint}", file=sys.stderr)
        return 2 if user else 1


if __name__ == "__main__":
    sys.exit(main())
