"""normjax's import graph, read from the source with `ast` (nothing is imported or run).

LAYERS names normjax's units from the bottom up.  A unit is a subpackage (`normjax.norms`),
a top-level module (`normjax.constants`), or a module named in full (the command line's
`normjax.finetune.command` and `normjax.llm.command`, which belong to the CLI layer, not to their packages; the
``llm-eval`` pipeline `normjax.llm.evaluate`, which sits above the analysis it runs); a
module belongs to the longest unit name it starts with.  The order is the import graph's own
(each unit sits one above the highest unit it imports; the base modules, of which
`cache` imports `xla_cpu` and `compile_afresh`, and the command line are one layer each), not a wish: a new import that runs
downward needs no change here, one that runs upward fails.

Checked, for imports at module level and inside functions alike: every module under
normjax/ belongs to a unit; no module imports from a higher layer; no two units import each
other, directly or round a circle; only the CLI layer imports the top-level `train` and
`agents` folders, installed as `normjax.train` and `normjax.agents` (the trainer sits beside the
library, under the command line); no module outside `normjax.runtime` uses a private
(underscore) name of it, whether imported by name or read as a module's attribute: the
runtime's users (llm, play, finetune) go through its public names.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = (
    # base modules: names, constants, salts, the opt-in CPU settings, the compilation cache
    (
        "normjax.constants",
        "normjax.salts",
        "normjax.cli_names",
        "normjax.xla_cpu",
        "normjax.cache",
        "normjax.compile_afresh",
    ),
    ("normjax.layouts",),
    ("normjax.ground",),  # numeric and geometric utilities: moves, run_where, hashed draws, ranking
    ("normjax.norms",),
    ("normjax.world",),
    ("normjax.community",),
    ("normjax.env",),
    ("normjax.protocol", "normjax.registration"),
    ("normjax.interop", "normjax.observer"),
    ("normjax.runtime", "normjax.wrappers"),  # runtime: the host runtime for external agents
    ("normjax.llm",),  # the LLM agent, an external agent of the runtime
    ("normjax.analysis",),  # the analysis after a run: judge, belief analysis
    (
        "normjax",  # the package's own __init__ (make, lazy names): make(return_params=True) is the gymnax face
        "normjax.finetune",
        "normjax.llm.evaluate",  # the llm-eval pipeline: agent, runtime and the judge's export / import
        "normjax.play",
        "normjax.results",
        "normjax.testing",
    ),  # results: normjax table (reads finetune-eval); testing: the tests' shared doubles, imported by no unit
    (
        "normjax.cli",
        "normjax.commands",
        "normjax.finetune.command",
        "normjax.llm.command",
        "normjax.play.command",
        "normjax.results.command",
    ),  # the command line
)
CLI_LAYER = len(LAYERS) - 1
OUTSIDE = (
    "normjax.train",
    "normjax.agents",
)  # the trainer (train/, agents/ in the repository): only the CLI layer imports it
LAYER_OF = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _unit(module: str) -> str | None:
    """The longest unit name `module` is or starts with (None: in no unit); `normjax` is only itself."""
    parts = module.split(".")
    for k in range(len(parts), 1, -1):
        if ".".join(parts[:k]) in LAYER_OF:
            return ".".join(parts[:k])
    return module if module in LAYER_OF else None


@functools.cache
def _graph() -> tuple[dict[str, Path], tuple[tuple[str, str, int], ...]]:
    """(module name -> file, every import edge (importer, imported module or package, line))."""
    files = {_module_name(p): p for p in sorted((ROOT / "normjax").rglob("*.py"))}

    def resolve(name: str) -> str:  # the module a dotted name lies in (`a.b.func` -> `a.b`)
        if name.startswith(tuple(p + "." for p in OUTSIDE) + OUTSIDE):
            return name  # the trainer's folders lie outside normjax/
        parts = name.split(".")
        for k in range(len(parts), 0, -1):
            if ".".join(parts[:k]) in files:
                return ".".join(parts[:k])
        return name

    edges = []
    for module, path in files.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):  # walk: function bodies too
            if isinstance(node, ast.Import):
                targets = [resolve(a.name) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                # `from normjax import constants` imports the module normjax.constants
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else resolve(base) for a in node.names]
            else:
                continue
            edges += [(module, t, node.lineno) for t in targets if t.split(".")[0] in ("normjax",) + OUTSIDE]
    return files, tuple(sorted(set(edges)))


def _unit_edges() -> list[tuple[str, str, str, str, int]]:
    """(importer, its unit, imported, its unit, line) within normjax (modules in no unit: see below)."""
    return [
        (a, _unit(a), b, _unit(b), line)
        for a, b, line in _graph()[1]
        if b.startswith("normjax") and _unit(a) and _unit(b)
    ]


def _where(module: str, line: int) -> str:
    return f"{_graph()[0][module].relative_to(ROOT)}:{line}"


def test_every_module_has_a_layer():
    files, _ = _graph()
    assert not [m for m in files if _unit(m) is None], "modules in no unit of LAYERS: place them"


def test_no_import_runs_upward():
    upward = [
        f"{_where(a, line)} {a} (layer {LAYER_OF[ua]}) imports {b} (layer {LAYER_OF[ub]})"
        for a, ua, b, ub, line in _unit_edges()
        if LAYER_OF[ub] > LAYER_OF[ua]
    ]
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def test_no_circle_between_units():
    arrows: dict[str, set[str]] = {}
    for _a, ua, _b, ub, _line in _unit_edges():
        if ua != ub:
            arrows.setdefault(ua, set()).add(ub)
    circles, state = [], {}  # state: 1 on the current path, 2 done

    def visit(unit, path):
        state[unit] = 1
        for nxt in sorted(arrows.get(unit, ())):
            if state.get(nxt) == 1:
                circles.append(" -> ".join(path[path.index(nxt) :] + [nxt]))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[unit] = 2

    for unit in sorted(arrows):
        if unit not in state:
            visit(unit, [unit])
    assert not circles, "units that import each other:\n" + "\n".join(circles)


def test_only_the_cli_imports_train_and_agents():
    _, edges = _graph()
    library = [
        f"{_where(a, line)} {a} imports {b}"
        for a, b, line in edges
        if b.startswith(tuple(p + "." for p in OUTSIDE) + OUTSIDE) and LAYER_OF.get(_unit(a)) != CLI_LAYER
    ]
    assert not library, "the library imports the trainer (only the CLI layer may):\n" + "\n".join(library)
    # normjax.commands imports train only inside functions: seeing it shows the scan reads function bodies
    assert any(a == "normjax.commands" and b.startswith("normjax.train.") for a, b, _line in edges), "the scan is blind"


PUBLIC_ONLY = "normjax.runtime"  # units whose private names no module outside them may use


def _private_uses(module: str, source: str, files) -> list[tuple[str, int]]:
    """(`unit.module._name`, line) for each private name of PUBLIC_ONLY that `module` uses."""
    package = module.split(".")[:-1] if not module.endswith("__init__") else module.split(".")
    inside = (PUBLIC_ONLY, PUBLIC_ONLY + ".")
    tree = ast.parse(source)
    aliases = {}  # local name -> a runtime module bound to it (`from normjax.runtime import batch`)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            if not base.startswith(inside):
                continue
            for a in node.names:
                if f"{base}.{a.name}" in files:
                    aliases[a.asname or a.name] = f"{base}.{a.name}"
                elif a.name.startswith("_"):
                    out.append((f"{base}.{a.name}", node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith(inside) and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            value = node.value
            dotted = []
            while isinstance(value, ast.Attribute):
                dotted.insert(0, value.attr)
                value = value.value
            if isinstance(value, ast.Name):
                name = ".".join([aliases.get(value.id, value.id)] + dotted)
                if name.startswith(inside) and name in files:
                    out.append((f"{name}.{node.attr}", node.lineno))
    return out


def test_no_private_name_of_the_runtime_is_used_outside_it():
    files, _ = _graph()
    used = [
        f"{_where(m, line)} {m} uses {name}"
        for m, path in files.items()
        if not (m == PUBLIC_ONLY or m.startswith(PUBLIC_ONLY + "."))
        for name, line in _private_uses(m, path.read_text(), files)
    ]
    assert not used, f"private names of {PUBLIC_ONLY} used outside it (make them public):\n" + "\n".join(used)


def test_the_private_name_scan_sees_uses():
    # Deliberate offences, found the same way: the check above can fail.
    files, _ = _graph()
    source = (
        "from normjax.runtime.runner import _stored, assemble\n"
        "from normjax.runtime import batch\n"
        "import normjax.runtime.stage\n"
        "def f():\n"
        "    from ..runtime.lazy import _hidden\n"
        "    return batch._pad_index(3), normjax.runtime.stage._collect, batch.render\n"
    )
    assert sorted(_private_uses("normjax.play.session", source, files)) == [
        ("normjax.runtime.batch._pad_index", 6),
        ("normjax.runtime.lazy._hidden", 5),
        ("normjax.runtime.runner._stored", 1),
        ("normjax.runtime.stage._collect", 6),
    ]
