"""Declared options: a value's type, allowed range or choices, unit and one-line description,
written once and used for parsing, validation and help text.

A scenario (``diffsim run <scenario> --set name=value``) and a command-line flag
(``diffsim montecarlo --samples N``) declare each of their settings as an :class:`Option`::

    OPTIONS = {
        "t1": Option(10.0, "end time of the simulation", unit="s", gt=0),
        "solver": Option("dopri8", "integrator", choices=("tsit5", "dopri5", "dopri8")),
        "F1": Option([1.0, -1.0, 1.0], "follower force at arm 1's tip, link-2 frame", unit="N", length=3),
    }

and get from it: :func:`parse_assignment` / :meth:`Option.parse` (text → typed, checked value,
or an :class:`OptionError` with a one-line message that names the option and what it expects),
:meth:`Option.check` (a Python value, e.g. from a script), :func:`format_table` (the help text)
and :func:`add_flag` (an ``argparse`` flag whose value is parsed and checked the same way).

Pure Python (no NumPy, no JAX): ``diffsim --help`` builds its text from these declarations
without importing the numerical stack.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

#: spellings accepted for booleans on the command line
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class OptionError(ValueError):
    """A value that does not fit its option's declaration (the message is one line)."""


@dataclasses.dataclass(frozen=True)
class Option:
    """One declared setting.

    Attributes:
        default: the value used when the option is not given; its Python type is the option's
            type unless ``type`` says otherwise (``float``, ``int``, ``bool``, ``str``, or a list
            of floats, given on the command line as ``1,2,3`` or ``[1,2,3]``).
        help: one line saying what the option is.
        unit: the SI unit of a physical quantity (``"s"``, ``"m"``, ``"N m"``, ``"rad/s"``), ``"1"``
            for a dimensionless number, ``""`` for a count, a flag or a name.
        type: ``float``, ``int``, ``bool``, ``str`` or ``list`` (of floats); default: from ``default``.
        choices: the allowed values (names), if the option is one of a set.
        gt, ge, lt, le: bounds (strictly greater, greater or equal, ...) of a number, or of every
            entry of a list.
        length: the number of entries of a list option (``None``: any).
        nullable: ``none`` is a value (meaning "not set": e.g. "the default of the solver").
    """

    default: Any
    help: str
    unit: str = ""
    type: type | None = None
    choices: tuple | None = None
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    length: int | None = None
    nullable: bool = False
    allow_inf: bool = False  # +inf is a meaningful value (a clamped spring: infinitely stiff)

    def __post_init__(self):
        if self.type is None:
            d = self.default
            kind = (bool if isinstance(d, bool) else int if isinstance(d, int) else float if isinstance(d, float)
                    else str if isinstance(d, str) else list if isinstance(d, (list, tuple)) else None)
            if kind is None:
                raise TypeError(f"cannot tell the type of option default {d!r}: pass type=")
            object.__setattr__(self, "type", kind)
        if self.type not in (float, int, bool, str, list):
            raise TypeError(f"option type must be float, int, bool, str or list, got {self.type!r}")
        if self.choices is not None:
            object.__setattr__(self, "choices", tuple(self.choices))
        if not self.help or "\n" in self.help:
            raise ValueError("an option needs a one-line help text")
        if self.default is not None or not self.nullable:
            self.check(self.default, "default")

    # -- values --------------------------------------------------------------------------------
    def parse(self, text: str, name: str = "option"):
        """The value of the command-line text ``text`` (checked); :class:`OptionError` if it does
        not fit."""
        text = str(text).strip()
        if self.nullable and text.lower() in ("none", "null"):
            return None
        if self.type is bool:
            low = text.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise OptionError(f"{name} expects true or false, got {text!r}")
        if self.type is str:
            return self.check(text, name)
        if self.type is list:
            body = text[1:-1] if text.startswith("[") and text.endswith("]") else text
            parts = [p for p in body.replace(" ", ",").split(",") if p]
            return self.check([_number(p, name, float) for p in parts], name)
        return self.check(_number(text, name, self.type), name)

    def check(self, value, name: str = "option", bounds: bool = True):
        """``value`` converted to the option's type and checked against its declaration (with
        ``bounds=False``, its type and choices only); :class:`OptionError` (one line) if it does
        not fit."""
        if value is None:
            if self.nullable:
                return None
            raise OptionError(f"{name} must be set ({self.describe_type()})")
        if self.type is bool:
            if not isinstance(value, bool):
                raise OptionError(f"{name} expects true or false, got {value!r}")
            return value
        if self.type is str:
            if not isinstance(value, str):
                raise OptionError(f"{name} expects a name, got {value!r}")
            if self.choices is not None and value not in self.choices:
                raise OptionError(f"{name} must be one of {', '.join(map(str, self.choices))}; got {value!r}")
            return value
        if self.type is list:
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
                raise OptionError(f"{name} expects a list of numbers, got {value!r}")
            out = [_real(v, name, float) for v in list(value)]
            out = [self._bounded(v, name) for v in out] if bounds else out
            if self.length is not None and len(out) != self.length:
                raise OptionError(f"{name} expects {self.length} numbers, got {len(out)}")
            return out
        v = _real(value, name, self.type, self.allow_inf)
        v = self._bounded(v, name) if bounds else v
        if self.choices is not None and v not in self.choices:
            raise OptionError(f"{name} must be one of {', '.join(map(str, self.choices))}; got {v!r}")
        return v

    def _bounded(self, v, name):
        for bound, ok, _ in ((self.gt, lambda a, b: a > b, ">"), (self.ge, lambda a, b: a >= b, ">="),
                                (self.lt, lambda a, b: a < b, "<"), (self.le, lambda a, b: a <= b, "<=")):
            if bound is not None and not ok(v, bound):
                raise OptionError(f"{name} must be {self.describe_range()}{_unit(self.unit)}; got {v!r}")
        return v

    # -- text ----------------------------------------------------------------------------------
    def describe_type(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        kind = {float: "number", int: "integer", bool: "true/false", str: "name",
                list: f"{self.length or 'list of'} numbers"}[self.type]
        rng = self.describe_range()
        return f"{kind}{', ' + rng if rng else ''}{', or none' if self.nullable else ''}"

    def describe_range(self) -> str:
        parts = [f"{w} {_fmt(b)}" for b, w in ((self.gt, "> "), (self.ge, ">="), (self.lt, "< "), (self.le, "<="))
                 if b is not None]
        return " and ".join(p.replace("  ", " ") for p in parts)


def _unit(unit: str) -> str:
    return f" {unit}" if unit and unit != "1" else ""


def _fmt(x) -> str:
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, list):
        return ",".join(_fmt(v) for v in x)
    return str(x)


def _number(text: str, name: str, kind):
    try:
        value = float(text) if kind is float else _integer(text)
    except ValueError:
        raise OptionError(f"{name} expects {'a number' if kind is float else 'an integer'}, got {text!r}") from None
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        x = float(text)  # 2e5
        if not x.is_integer():
            raise
        return int(x)


def _real(value, name, kind, allow_inf=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise OptionError(f"{name} expects {'a number' if kind is float else 'an integer'}, got {value!r}")
    x = float(value)
    if not (math.isfinite(x) or (allow_inf and kind is float and x == math.inf)):
        raise OptionError(f"{name} must be a finite number, got {value!r}")
    if kind is int:
        if not x.is_integer():
            raise OptionError(f"{name} expects an integer, got {value!r}")
        return int(x)
    return x


def parse_assignment(item: str) -> tuple[str, str]:
    """``"name=value"`` → ``("name", "value")``; :class:`OptionError` without an ``=``."""
    key, sep, text = str(item).partition("=")
    if not sep or not key.strip():
        raise OptionError(f"--set expects name=value, got {item!r}")
    return key.strip(), text


def defaults(options: dict[str, Option]) -> dict[str, Any]:
    """``{name: default}`` of declared options (lists copied)."""
    return {k: (list(o.default) if isinstance(o.default, list) else o.default) for k, o in options.items()}


def format_table(options: dict[str, Option], indent: str = "  ") -> str:
    """The help text of declared options: one line each, ``name = default [unit]  description
    (allowed values)``."""
    if not options:
        return f"{indent}(no options)"
    rows = []
    for name, o in options.items():
        unit = f" [{o.unit}]" if o.unit else ""
        rows.append((f"{name}={_fmt(o.default) if o.default is not None else 'none'}{unit}",
                     f"{o.help} ({o.describe_type()})"))
    width = min(max(len(a) for a, _ in rows), 34)
    return "\n".join(f"{indent}{a:<{width}}  {b}" for a, b in rows)


def add_flag(parser: argparse.ArgumentParser, flag: str, option: Option, dest: str | None = None, **kwargs):
    """Add ``flag`` to ``parser`` with its value parsed and checked by ``option`` (a bad value is
    argparse's usage error, exit code 2), its help from the declaration."""
    unit = f" [{option.unit}]" if option.unit else ""

    def convert(text):
        try:
            return option.parse(text, flag)
        except OptionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    default = kwargs.pop("default", option.default)
    given = "required" if kwargs.get("required") else f"default {_fmt(default) if default is not None else 'none'}"
    help_ = f"{option.help}{unit} ({option.describe_type()}; {given})"
    if dest is not None:
        kwargs["dest"] = dest
    return parser.add_argument(flag, type=convert, default=default, help=help_, **kwargs)


def to_json(options: dict[str, Option]) -> dict:
    """The declarations as plain data (for documentation)."""
    return {k: {"default": o.default, "unit": o.unit, "help": o.help, "allowed": o.describe_type()}
            for k, o in options.items()}


__all__ = ["Option", "OptionError", "add_flag", "defaults", "format_table", "parse_assignment", "to_json"]
