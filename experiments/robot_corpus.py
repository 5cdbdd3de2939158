"""Real robot files as they ship (issue 18), the whole corpus: every URDF of example-robot-data
compared with Pinocchio and every MJCF of dm_control's suite with MuJoCo, at random states, by
the comparisons of ``tests/io/test_robot_corpus.py`` (its docstring gives the method and the
1e-12 tolerance). The suite's slow test compares every third URDF; this compares all of them.

Run: ``PYTHONPATH=$PWD python experiments/robot_corpus.py`` (needs the test extra: pinocchio,
mujoco, example-robot-data, dm_control); writes ``results/robot-corpus/summary.json`` and
``errors.png`` (worst relative difference per file, log scale, with the tolerance).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

from diffsim.io.results import provenance, write_json  # noqa: E402
from diffsim.viz import new_figure, save_figure  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "io"))
import test_robot_corpus as corpus  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "robot-corpus"


def main(out: Path = OUT) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    urdf, loaded = corpus.urdf_corpus(every=1)
    t_urdf = time.perf_counter() - t0
    suite = {}
    for name, path in corpus.SUITE.items():
        if name not in corpus.SUITE_REFUSED:
            suite[name] = corpus.mjcf_vs_mujoco(path)
            corpus.release_compiled_programs()
    bad_urdf = sorted(k for k, e in urdf.items() if not corpus.urdf_within_tolerance(e))
    bad_suite = sorted(k for k, e in suite.items() if not e <= corpus.RTOL)
    summary = {
        "urdf": {"files": len(corpus.URDFS), "loaded": loaded, "refused": sorted(corpus.URDF_REFUSED),
                 "compared": len(urdf), "outside_tolerance": bad_urdf,
                 "worst_rel_diff": {k: e[0] for k, e in urdf.items()},
                 "pinocchio_aba_vs_crba": {k: e[1] for k, e in urdf.items()}},
        "mjcf": {"files": len(corpus.SUITE), "loaded": len(suite), "refused": sorted(corpus.SUITE_REFUSED),
                 "outside_tolerance": bad_suite, "worst_rel_diff": suite},
        "tolerance": corpus.RTOL,
        "wall_s": {"urdf": t_urdf, "total": time.perf_counter() - t0},
        "provenance": provenance(),
    }  # fmt: skip
    write_json(out / "summary.json", summary)
    fig, ax = new_figure(figsize=(11, 4.5))
    names = sorted(urdf) + sorted(suite)
    vals = [max(urdf[n][0], 1e-17) for n in sorted(urdf)] + [max(suite[n], 1e-17) for n in sorted(suite)]
    colors = ["tab:blue"] * len(urdf) + ["tab:orange"] * len(suite)
    ax.bar(range(len(names)), vals, color=colors)
    ax.axhline(corpus.RTOL, color="k", ls="--", lw=1, label="tolerance 1e-12")
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), [n.split("/")[-1] for n in names], rotation=90, fontsize=6)
    ax.set_ylabel("worst |Δa|∞ / max(1, |a|∞) [1]")
    ax.set_title(f"Forward dynamics vs peers: {len(urdf)} URDFs vs Pinocchio (blue), "
                 f"{len(suite)} MJCFs vs MuJoCo (orange)")  # fmt: skip
    ax.legend()
    save_figure(fig, out / "errors.png")
    print(f"URDF: {loaded}/{len(corpus.URDFS)} load, {len(urdf)} compared, outside tolerance: {bad_urdf}")
    print(f"MJCF: {len(suite)}/{len(corpus.SUITE)} load, outside tolerance: {bad_suite}")
    print(f"worst: URDF {max(e[0] for e in urdf.values()):.2g}, MJCF {max(suite.values()):.2g}; "
          f"{summary['wall_s']['total']:.0f} s; written to {out}")  # fmt: skip
    return summary


if __name__ == "__main__":
    main()
