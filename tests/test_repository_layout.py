"""The repository's layout rules, read from the files (`ast` and text; nothing is imported).

tests/ mirrors the package and never imports benchmarks/; benchmarks/ (its scripts and their
own tests in benchmarks/tests/) never imports tests/, and edits no `sys.path`; normjax imports
neither. The test doubles both sides share live in `normjax.testing`. Every maintained benchmark
script is listed in benchmarks/README.md; pyproject.toml lists every package; every `noqa`
gives its reason.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module a file imports (top level and inside functions), with its line."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, node.lineno))
    return out


def _offenders(folder: Path, forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{p}:{line} imports {name}"
        for p in sorted(folder.rglob("*.py"))
        for name, line in _imports(p)
        if name.split(".")[0] in forbidden
    ]


@pytest.mark.parametrize(
    "folder, forbidden",
    [("tests", ("benchmarks",)), ("benchmarks", ("tests",)), ("normjax", ("tests", "benchmarks"))],
)
def test_no_import_crosses_between_tests_and_benchmarks(folder, forbidden):
    assert not _offenders(ROOT / folder, forbidden)


def test_the_scan_sees_imports(tmp_path):
    # Deliberately offending imports, found the same way: the check above can fail.
    (tmp_path / "a.py").write_text("from benchmarks.common import save\n")
    (tmp_path / "b.py").write_text("def f():\n    import tests.support.helpers\n")
    assert _imports(tmp_path / "a.py") == [("benchmarks.common", 1)]
    assert _imports(tmp_path / "b.py") == [("tests.support.helpers", 2)]


def test_benchmarks_edit_no_sys_path():
    assert not [str(p.relative_to(ROOT)) for p in (ROOT / "benchmarks").rglob("*.py") if "sys.path" in p.read_text()]


def test_tests_mirror_the_package():
    subpackages = {p.parent.name for p in (ROOT / "normjax").glob("*/__init__.py")}
    folders = {p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    # train/ and agents/ install as normjax.train and normjax.agents; support/ holds test helpers;
    # examples/ tests the repository's examples/ folder (not installed).
    assert folders - subpackages - {"train", "support", "examples"} == set()
    assert not [p.name for p in (ROOT / "tests").glob("*.py") if p.name.startswith(("test_llm_", "test_finetune_"))]


def test_benchmarks_readme_lists_every_maintained_script_and_experiment():
    readme = (ROOT / "benchmarks" / "README.md").read_text()
    scripts = [p for p in (ROOT / "benchmarks").glob("*.py") if p.stem not in ("__init__", "common")]
    scripts += [p for p in (ROOT / "benchmarks" / "experiments").glob("*.py") if p.stem != "__init__"]
    assert scripts
    assert not [str(p.relative_to(ROOT)) for p in scripts if p.name not in readme]


def test_pyproject_lists_every_package():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "normjax").rglob("__init__.py")}
    on_disk |= {"normjax.train", "normjax.agents"}
    assert set(config["packages"]) == on_disk
    assert config["package-dir"]["normjax.train"] == "train" and config["package-dir"]["normjax.agents"] == "agents"


NOQA = re.compile(r"#\s*noqa\b(?P<rest>.*)")
REASONED = re.compile(r":\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*\s+\S")


def test_every_noqa_gives_its_reason():
    files = [p for d in ("normjax", "train", "agents", "tests", "benchmarks", "docs") for p in (ROOT / d).rglob("*.py")]
    bare = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if (m := NOQA.search(line)) and not REASONED.match(m.group("rest"))
    ]
    assert not bare, "noqa without a reason (write the reason after the codes):\n" + "\n".join(bare)
    assert REASONED.match(": E402 (after the check)") and not REASONED.match(": E402")
