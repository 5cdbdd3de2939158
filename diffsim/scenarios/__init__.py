"""Ready-to-run scenarios: the papers' systems as models + loads + a run that writes results.

Each scenario is declared in :mod:`diffsim.catalog` (name, options with types, ranges, units and
descriptions, the jobs it serves) and implemented by a module here, whose :class:`Scenario`
attaches the run (and, for ``fit``/``montecarlo``, the System) to the declaration.
``diffsim run <name> --set k=v`` sets an option or any named model parameter
(``diffsim.param_names``).
"""

from __future__ import annotations

from .ball_drop import BALL_DROP
from .base import Scenario, check_output_dir, parse_overrides, run_scenario, scenario_options, stages
from .flexible_hub import FLEXIBLE_HUB
from .seed000 import SEED000
from .seed001 import SEED001
from .seed002 import SEED002
from .seed003 import SEED003
from .seed004 import SEED004
from .spinup import SPINUP
from .ur5_reach import UR5_REACH

SCENARIOS: dict[str, Scenario] = {s.name: s for s in (SEED000, SEED001, SEED002, SEED003, SEED004, SPINUP, BALL_DROP,
                                                  FLEXIBLE_HUB, UR5_REACH)}

__all__ = ["SCENARIOS", "Scenario", "check_output_dir", "parse_overrides", "run_scenario", "scenario_options",
           "stages"]
