"""The scenario catalog (JAX-free declarations) and the implementations agree, and every
declaration is complete: a one-line description, a unit for every physical quantity, a
default that fits its own range."""

from __future__ import annotations

import pytest

from diffsim.catalog import CATALOG, NORMAL_LAWS, SOLVERS, parse_sets
from diffsim.contact.laws import NORMAL_LAWS as LAWS
from diffsim.options import Option, OptionError
from diffsim.scenarios import SCENARIOS, seed001, seed003
from diffsim.simulation.solvers import SOLVERS as IMPLEMENTED_SOLVERS


def test_catalog_and_implementations_agree():
    assert list(SCENARIOS) == list(CATALOG)
    for name, s in SCENARIOS.items():
        assert s.info is CATALOG[name]
        # the jobs that need a System (fit, montecarlo) are declared exactly where one is given
        assert (s.system is not None) == bool({"fit", "montecarlo"} & set(s.info.jobs)), name
        assert set(s.observables or {}) == set(s.info.observables), name
    assert SOLVERS == IMPLEMENTED_SOLVERS and set(NORMAL_LAWS) == set(LAWS)
    assert CATALOG["seed001-falling-chain"].options["modes"].choices == (*seed001.MODE_SETS, "all")
    assert CATALOG["seed003-two-link"].options["case"].choices == ("both", *seed003.CASES)


@pytest.mark.parametrize("name", list(CATALOG))
def test_every_option_is_declared_with_help_and_unit(name):
    for key, opt in CATALOG[name].options.items():
        assert isinstance(opt, Option) and opt.help and "\n" not in opt.help, (name, key)
        if opt.type in (float, list) and key != "atol":  # atol: one number for mixed units (it says so)
            assert opt.unit, f"{name}: option {key} is a quantity without a unit"
        # the same name is the same thing in every scenario: same type, unit and kind of bound
        first = next(i.options[key] for i in CATALOG.values() if key in i.options)
        assert (opt.type, opt.unit, opt.gt, opt.lt, opt.choices if key == "solver" else None) == (
            first.type, first.unit, first.gt, first.lt, first.choices if key == "solver" else None), (name, key)

def test_option_parsing_and_checks():
    o = Option(1.0, "a length", unit="m", gt=0.0, le=2.0)
    assert o.parse("2") == 2.0 and o.parse(" 1e-3 ") == 1e-3
    for bad, msg in (("0", "must be > 0 and <= 2 m"), ("x", "expects a number"), ("nan", "finite")):
        with pytest.raises(OptionError, match=msg):
            o.parse(bad, "L")
    n = Option(10, "a count", ge=2)
    assert n.parse("2e3") == 2000 and isinstance(n.parse("2e3"), int)
    with pytest.raises(OptionError, match="expects an integer"):
        n.parse("2.5")
    v = Option([1.0, 2.0], "a pair", unit="N", length=2)
    assert v.parse("[3, 4]") == [3.0, 4.0] == v.parse("3,4")
    with pytest.raises(ValueError, match="default"):
        Option(-1.0, "a bad default", unit="m", gt=0.0)
    with pytest.raises(ValueError, match="one-line"):
        Option(1.0, "", unit="m")
    info = CATALOG["ball-drop"]
    options, params = parse_sets(info, ["K=5e5", "body.ball.mass=2", "gravity=0,0,-1"])
    assert options["K"] == 5e5 and params == {"body.ball.mass": 2.0, "gravity": [0.0, 0.0, -1.0]}
    with pytest.raises(OptionError, match="expects a number or numbers"):
        parse_sets(info, ["body.ball.mass=heavy"])
