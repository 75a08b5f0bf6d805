"""Every ```python block of README.md and docs/ runs as written, each in a fresh interpreter
(slow tier).  Blocks that run the whole test protocol are `full_protocol`.  A block with an
`if __name__ == "__main__":` guard is a script (docs/wrappers.md's async vector env recipe,
whose forkserver workers import the main module): it is written to a file and run as one,
so the guard is tested where it matters.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Blocks that run the whole test protocol go with the protocol's own tier.
HEAVY_DOCS = {"observer.md": pytest.mark.full_protocol}


def is_script(code: str) -> bool:
    return 'if __name__ == "__main__":' in code


def python_blocks(paths):
    """(file name, block number, code) of every ```python block in `paths`."""
    out = []
    for path in paths:
        blocks = re.findall(r"^```python\n(.*?)^```", Path(path).read_text(), flags=re.S | re.M)
        out += [(Path(path).name, i, code) for i, code in enumerate(blocks)]
    return out


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, index, code",
    [pytest.param(*b, id=f"{b[0]}-{b[1]}", marks=HEAVY_DOCS.get(b[0], ())) for b in python_blocks(DOC_FILES)],
)
def test_docs_code_block_runs_on_its_own(name, index, code, tmp_path, pytestconfig):
    # Each block in a fresh interpreter; the blocks share one persistent compilation cache of
    # their own (one worker runs this file, so one writer at a time), and the flags of the
    # session (XLA_FLAGS' compile level) come with the environment.
    cache = Path(os.environ.get("NORMJAX_TEST_CACHE", pytestconfig.rootpath / ".jax_cache")) / "docs_blocks"
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5"}
    if is_script(code):
        (tmp_path / "block.py").write_text(code)
        command = [sys.executable, "block.py"]
    else:
        command = [sys.executable, "-c", code]
    out = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, f"{name} block {index} failed:\n{code}\n{out.stderr[-3000:]}"


def test_the_block_extractor_finds_every_block(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("text\n```python\nx = 1\n```\n```bash\nls\n```\n```python\ny = 2\nprint(y)\n```\n")
    assert python_blocks([doc]) == [("a.md", 0, "x = 1\n"), ("a.md", 1, "y = 2\nprint(y)\n")]
    wrappers = python_blocks([REPO / "docs" / "wrappers.md"])
    assert len(wrappers) == 8
    async_recipes = [code for _, _, code in wrappers if 'vectorization_mode="async"' in code]
    assert len(async_recipes) == 1 and is_script(async_recipes[0]) and '"forkserver"' in async_recipes[0]
