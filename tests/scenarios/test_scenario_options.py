"""``Scenario.system(options)`` from Python checks its options against the catalog's declarations,
as ``--set`` does on the command line: unknown names are refused with a did-you-mean, values of the
wrong type, length or range are refused (they were merged unchecked: ``n_save=2.5`` ran with 2,
``rtol=2`` and a two-entry ``F1`` were accepted, a typo was ignored)."""

from __future__ import annotations

import pytest

from diffsim.catalog import CATALOG, check_options, parse_sets
from diffsim.options import OptionError
from diffsim.scenarios import SCENARIOS, scenario_options

WITH_SYSTEM = [name for name, s in SCENARIOS.items() if s.system is not None]  # ball-drop, seed000, flexible-hub


@pytest.mark.parametrize("name", WITH_SYSTEM)
def test_unknown_options_are_refused_with_the_closest_names(name):
    sc = SCENARIOS[name]
    typo = "t_1"  # every scenario with a system has t1
    with pytest.raises(OptionError, match=f"unknown option 't_1' for scenario '{name}' .did you mean 't1'"):
        sc.system({typo: 0.1})
    with pytest.raises(OptionError, match=r"unknown option 'contact.K'.*diffsim.set_params"):
        sc.system({"contact.K": 1.0})
    with pytest.raises(OptionError, match="n_save expects an integer, got 2.5"):
        sc.system({"n_save": 2.5})
    with pytest.raises(OptionError, match="rtol must be > 0 and < 1; got 2.0"):
        sc.system({"rtol": 2.0})
    with pytest.raises(ValueError, match=r"t1 must be (> 0 s|positive)"):  # flexible-hub: its own words
        sc.system({"t1": -1.0})


def test_values_are_checked_like_the_command_line():
    bd, s0 = SCENARIOS["ball-drop"], SCENARIOS["seed000-dual-arm"]
    for options, msg in (({"c_r": 1.5}, "c_r must be > 0 and <= 1"), ({"K": 0.0}, "K must be > 0"),
                         ({"law": "bogus"}, "law must be one of"), ({"max_events": 0}, "max_events must be >= 1"),
                         ({"heigth": 1.0}, "did you mean 'height'"), ({"mass": "heavy"}, "mass expects a number")):
        with pytest.raises(OptionError, match=msg):
            bd.system(options)
    with pytest.raises(OptionError, match="F1 expects 3 numbers, got 2"):
        s0.system({"F1": [1.0, 2.0]})
    with pytest.raises(OptionError, match="solver must be one of"):
        s0.system({"solver": "bogus"})
    # what the command line parsed builds the same system through the same checks; NumPy numbers pass
    import numpy as np

    options, _ = parse_sets(CATALOG["ball-drop"], ["t1=0.25", "n_save=6"])
    s = bd.system(options)
    assert float(s.t1) == 0.25 and bd.system({"t1": np.float64(0.25), "n_save": np.int64(6)}).t1 == s.t1
    assert scenario_options(bd, {"n_save": 6.0})["n_save"] == 6  # an integral float is that integer
    assert check_options(CATALOG["ball-drop"], None) == bd.options


def test_flexible_hub_keeps_its_own_messages_for_the_links_data():
    """The link's checks say what the numbers mean; the declarations' ranges are checked after them."""
    from diffsim.scenarios import flexible_hub as fh

    with pytest.raises(ValueError, match="EI must be positive"):
        fh.system({"EI": -35.0})
    with pytest.raises(OptionError, match="unknown option 'EII'.*did you mean 'EI'"):
        fh.system({"EII": 35.0})
    with pytest.raises(OptionError, match="unknown option 'sensor'"):
        fh.observables({"sensor": [0.5]})
    with pytest.raises(OptionError, match="n_save must be >= 2"):
        fh.system({"n_save": 1, "t1": 0.1})
