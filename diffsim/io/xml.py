"""XML reading shared by the MJCF and URDF loaders: every element keeps its source line, so
errors name it (``<joint name='j1'> (line 12)``), and attribute parsing with clear errors."""

from __future__ import annotations

import math
import os
import warnings
import xml.etree.ElementTree as ET
from xml.parsers import expat

import numpy as np

from ..model.builder import ModelError


class XmlDoc:
    """A parsed XML document: the root element and the source file and line of every element."""

    def __init__(self, source, what: str):
        text, self.filename = read_source(source, what)
        self.what = what
        self._lines: dict[int, int] = {}
        self._files: dict[int, str] = {}
        self._keep: list = []  # keeps elements alive so that id() stays unique
        self.root = self._parse(text, self.filename)

    def _parse(self, text, filename):
        tb = ET.TreeBuilder()
        parser = expat.ParserCreate()

        def start(tag, attrs):
            el = tb.start(tag, attrs)
            self._lines[id(el)] = parser.CurrentLineNumber
            self._files[id(el)] = filename
            self._keep.append(el)

        parser.StartElementHandler = start
        parser.EndElementHandler = tb.end
        parser.CharacterDataHandler = tb.data
        try:
            parser.Parse(text, True)
        except expat.ExpatError as e:
            raise ModelError(f"{self.what}: malformed XML in {filename}: {e}") from None
        return tb.close()

    def expand_includes(self, tag="include"):
        """Replace every ``<include file=...>`` by the children of the included file's root
        (MJCF semantics: whatever the root's tag), recursively. A relative path is looked up as MuJoCo does: first in the
        directory of the main file (the current directory for a document given as a string), then
        in the directory of the file that holds the ``<include>``. A file included twice (a cycle
        included) is refused, as MuJoCo refuses it ("already included"). Elements keep their own file
        and line for error messages."""
        main = os.path.dirname(os.path.abspath(self.filename)) if self.filename != "<string>" else os.getcwd()
        seen = {os.path.abspath(self.filename)} if self.filename != "<string>" else set()
        self._expand(self.root, main, seen, tag)

    def _expand(self, parent, main, seen, tag):
        k = 0
        while k < len(parent):
            el = parent[k]
            if el.tag != tag:
                self._expand(el, main, seen, tag)
                k += 1
                continue
            w = self.where(el)
            if not el.get("file"):
                raise ModelError(f"{self.what} {w}: an <{tag}> needs a file attribute")
            if len(el):
                raise ModelError(f"{self.what} {w}: an <{tag}> cannot have child elements")
            here = self._files.get(id(el), "<string>")
            local = os.path.dirname(os.path.abspath(here)) if here != "<string>" else os.getcwd()
            path = os.path.abspath(os.path.join(main, el.get("file")))
            if not os.path.isfile(path):  # MuJoCo: the main file's directory first, then the including file's
                path = os.path.abspath(os.path.join(local, el.get("file")))
            if path in seen:
                raise ModelError(f"{self.what} {w}: {el.get('file')!r} is already included (each file can be included "
                                 "once; an include cycle includes a file twice)")
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise ModelError(f"{self.what} {w}: cannot read included file {path!r}: {e.strerror}") from None
            seen.add(path)
            sub = self._parse(text, path)
            if len(sub) == 0:  # any root tag is accepted (MuJoCo's; older files use <mujocoinclude>)
                raise ModelError(f"{self.what} {w}: included file {path!r} is empty (no elements inside "
                                 f"<{sub.tag}>; MuJoCo refuses it)")
            self._expand(sub, main, seen, tag)
            parent.remove(el)
            for j, child in enumerate(list(sub)):
                parent.insert(k + j, child)
            k += len(sub)

    def file_of(self, el) -> str:
        """The file an element comes from (``<string>`` for a document given as a string)."""
        return self._files.get(id(el), self.filename)

    def where(self, el) -> str:
        """``<tag name='...'> (line N)``: how error messages name an element (with the file's
        name when the element comes from an included file)."""
        name = el.get("name")
        label = f"<{el.tag} name={name!r}>" if name else f"<{el.tag}>"
        line = self._lines.get(id(el))
        f = self._files.get(id(el))
        if line and f not in (None, self.filename):
            return f"{label} ({os.path.basename(f)} line {line})"
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
    """MJCF's keywords exactly: ``true`` or ``false`` (MuJoCo refuses ``1``, ``True`` …: "invalid keyword")."""
    v = str(value).strip()
    if v == "true":
        return True
    if v == "false":
        return False
    raise ModelError(f"{where}: attribute {attr}={value!r} must be 'true' or 'false' (MuJoCo's keywords, lower case)")


def warn_unsimulated(model, what: str, stacklevel: int = 3):
    """One warning per load naming what a file describes that the model keeps as data only."""
    parts = []
    if model.geoms:
        kinds = sorted({g.type for g in model.geoms})
        parts.append(f"{len(model.geoms)} geoms ({', '.join(kinds)}) in model.geoms: contacts are not made "
                     "from file geometry (add them with diffsim.contact)")
    t = model.topology
    multi = [lim.joint for lim in model.joint_limits if t.nv_joint[t.joint_names.index(lim.joint)] != 1]
    if multi:
        parts.append(f"{len(multi)} ranges of ball joints in model.joint_limits are not enforced (cone limits)")
    if model.tendons:
        parts.append(f"{len(model.tendons)} tendons in model.tendons exert no force (actuator transmissions only)")
    if parts:
        warnings.warn(f"{what}: kept as data, not simulated: " + "; ".join(parts), UnsimulatedWarning, stacklevel=stacklevel)


class UnsimulatedWarning(UserWarning):
    """A file describes something (geoms, limits, tendons) that the loaded model keeps as data only
    (actuators are applied when a simulation is given ``ctrl=``, :func:`diffsim.actuation`)."""
