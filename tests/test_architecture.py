"""The package's layering, read from the source (no import needed, so it cannot be fooled by
import order).

* Packages import downward only: a module may import from its own package or from a package of
  strictly lower rank in ``LAYERS``.
* No import cycles between modules.
* No import inside a function, except the optional dependencies listed in ``LAZY_OK`` (each is
  documented at its import).
* No private name (``_x``) imported from another package, and no private module of a
  third-party library (``diffrax._solution``, ``jax._src`` …).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "diffsim"

# rank of each top-level package/module of diffsim; imports go to strictly lower ranks
LAYERS = {
    "_util": 0, "compiled": 0, "precision": 0, "spatial": 0, "viz": 0,  # helpers that import nothing from diffsim (viz: matplotlib only)
    "options": 0, "models": 0,  # pure Python: option declarations, packaged model files (no NumPy, no JAX)
    "catalog": 1,  # the scenarios' declarations (options only): read by `diffsim --help` without JAX
    "beams": 1,
    "model": 2,
    "dynamics": 3,
    "actuators": 3.5,  # controls to generalised forces (site transmissions need the kinematics)
    "formulations": 4, "loads": 4, "flexible": 4, "io": 4,
    "contact": 5,
    "complementarity": 6,
    "simulation": 7,
    "_deprecated": 8, "identify": 8, "plan": 8, "montecarlo": 8, "modes": 8,  # the jobs
    "scenarios": 9,
    "commands": 10,  # the command-line jobs (import JAX)
    "cli": 11,  # the parser (JAX-free; imports commands only when one runs)
    "__main__": 12,
    "diffsim": 13,  # the package's __init__: the public API gathers everything
}

# (file relative to diffsim/, imported module): optional dependencies imported where used
LAZY_OK = {
    ("io/mujoco_bridge.py", "mujoco"),  # optional: only from_mjmodel needs MuJoCo
    # the commands import JAX (seconds); `diffsim --help` and `diffsim list` must answer without it
    # (issue 19), so the parser imports them only when a command runs
    ("cli.py", "commands"),
    # for the same reason, and because `diffsim montecarlo` sets JAX's CPU device count before the
    # commands' import starts JAX's backend (`cpu_devices`)
    ("cli.py", "jax"),
}


def _modules():
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


MODULES = _modules()


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> list[str]:
    """Absolute diffsim module names an import-from statement loads."""
    if node.level:
        base = module.split(".") if is_pkg else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith("diffsim"):
        return []
    # `from pkg import sub` loads pkg.sub when that is a module
    subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
    return subs if subs and len(subs) == len(node.names) else [target, *subs]


def _imports(module: str):
    """(statement, diffsim targets, inside-a-function) for every import of ``module``."""
    path, is_pkg = MODULES[module]
    tree = ast.parse(path.read_text())
    in_function = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_function.update(id(n) for n in ast.walk(node) if n is not node)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield node, _resolve(module, is_pkg, node), id(node) in in_function
        elif isinstance(node, ast.Import):
            yield node, [a.name for a in node.names if a.name.startswith("diffsim")], id(node) in in_function


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "diffsim"


def test_every_package_has_a_layer():
    missing = sorted({_top(m) for m in MODULES} - set(LAYERS))
    assert not missing, f"give these packages a rank in LAYERS: {missing}"


def test_imports_go_downward_only():
    bad = []
    for module in MODULES:
        src = _top(module)
        for node, targets, _ in _imports(module):
            for target in targets:
                dst = _top(target)
                if dst != src and LAYERS[dst] >= LAYERS[src]:
                    bad.append(f"{module}:{node.lineno} imports {target} (rank {LAYERS[dst]} >= {LAYERS[src]})")
    assert not bad, "upward or sideways imports:\n" + "\n".join(bad)


def test_no_import_cycles():
    graph = {m: set() for m in MODULES}
    for module in MODULES:
        for _, targets, _ in _imports(module):
            graph[module].update(t for t in targets if t in MODULES and t != module)
    # a package's __init__ re-exports its submodules; an edge from a submodule back to its own
    # package __init__ would be a cycle and is reported like any other
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def strongconnect(v):  # Tarjan
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strongconnect(v)
    assert not cycles, f"import cycles: {cycles}"


def test_no_imports_inside_functions():
    bad = []
    for module, (path, _) in MODULES.items():
        rel = path.relative_to(ROOT).as_posix()
        for node, _, inside in _imports(module):
            if not inside:
                continue
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if not all((rel, n.split(".")[0]) in LAZY_OK for n in names):
                bad.append(f"{rel}:{node.lineno} imports {names} inside a function")
    assert not bad, "\n".join(bad)


def test_no_private_names_across_packages_and_no_private_third_party_modules():
    bad = []
    for module in MODULES:
        for node, targets, _ in _imports(module):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and not node.module.startswith("diffsim"):
                if node.module != "__future__" and any(p.startswith("_") for p in node.module.split(".")):
                    bad.append(f"{module}:{node.lineno} uses private module {node.module}")
            if isinstance(node, ast.Import):
                for a in node.names:
                    if any(part.startswith("_") for part in a.name.split(".")) and not a.name.startswith("diffsim"):
                        bad.append(f"{module}:{node.lineno} uses private module {a.name}")
            if isinstance(node, ast.ImportFrom) and targets:
                source = targets[0]
                if _top(source) != _top(module) and not _top(source).startswith("_"):
                    priv = [a.name for a in node.names if a.name.startswith("_") and a.name != "__version__"]
                    if priv:
                        bad.append(f"{module}:{node.lineno} imports private {priv} from {source}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", ["diffsim", "diffsim.dynamics", "diffsim.contact", "diffsim.simulation"])
def test_public_namespaces_declare_all(module):
    import importlib

    mod = importlib.import_module(module)
    assert hasattr(mod, "__all__"), f"{module} has no __all__"
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{module}.__all__ lists names it does not have: {missing}"
