"""XML reading shared by the MJCF and URDF loaders: every element keeps its source line, so
errors name it (``<joint name='j1'> (line 12)``), and attribute parsing with clear errors."""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from xml.parsers import expat

import numpy as np

from ..model.builder import ModelError


class XmlDoc:
    """A parsed XML document: the root element and the source line of every element."""

    def __init__(self, source, what: str):
        text, self.filename = read_source(source, what)
        tb = ET.TreeBuilder()
        parser = expat.ParserCreate()
        self._lines: dict[int, int] = {}
        self._keep: list = []  # keeps elements alive so that id() stays unique

        def start(tag, attrs):
            el = tb.start(tag, attrs)
            self._lines[id(el)] = parser.CurrentLineNumber
            self._keep.append(el)

        parser.StartElementHandler = start
        parser.EndElementHandler = tb.end
        parser.CharacterDataHandler = tb.data
        try:
            parser.Parse(text, True)
        except expat.ExpatError as e:
            raise ModelError(f"{what}: malformed XML in {self.filename}: {e}") from None
        self.root = tb.close()

    def where(self, el) -> str:
        """``<tag name='...'> (line N)``: how error messages name an element."""
        name = el.get("name")
        label = f"<{el.tag} name={name!r}>" if name else f"<{el.tag}>"
        line = self._lines.get(id(el))
        return f"{label} (line {line})" if line else label


def read_source(source, what: str):
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return source, "<string>"
    path = os.fspath(source)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except OSError as e:
        raise ModelError(f"{what}: cannot read {path!r}: {e.strerror}") from None


def floats(value, n, where, attr, *, allow_fewer=False):
    try:
        vals = [float(x) for x in str(value).split()]
    except ValueError:
        raise ModelError(f"{where}: attribute {attr}={value!r} is not a list of numbers") from None
    if len(vals) != n and not (allow_fewer and 0 < len(vals) <= n):
        raise ModelError(f"{where}: attribute {attr} needs {n} numbers, got {value!r}")
    if not all(math.isfinite(x) for x in vals):
        raise ModelError(f"{where}: attribute {attr}={value!r} has non-finite values")
    return np.array(vals)


def boolean(value, where, attr):
    v = str(value).strip().lower()
    if v in ("true", "1"):
        return True
    if v in ("false", "0"):
        return False
    raise ModelError(f"{where}: attribute {attr}={value!r} must be 'true' or 'false'")
