"""The quickstart notebook runs top to bottom (a few minutes on a CPU).

The notebook is executed in memory with nbclient (the file on disk keeps its
cleared outputs), in a kernel that runs this interpreter (`sys.executable`),
with the repository root as working directory and first on PYTHONPATH.  The
kernel shares the test session's persistent JAX compilation cache
(`NORMJAX_TEST_CACHE`, default `.jax_cache/`), so reruns skip most compilation.
"""

import json
import os
import re
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "quickstart.ipynb"
KERNEL = "normjax-test-python"


def _outputs_text(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            parts.append(out.get("text", ""))
        elif "data" in out:
            parts.append(out["data"].get("text/plain", ""))
    return "".join(parts)


def test_committed_notebook_has_no_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, "clear the notebook's outputs before committing"


@pytest.mark.notebook
def test_quickstart_notebook_runs(tmp_path, monkeypatch):
    # A private kernelspec whose argv is this interpreter: a "python3" spec elsewhere on
    # the Jupyter path (user or system) could point at another Python.
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "normjax test kernel",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv(
        "JUPYTER_PATH", os.pathsep.join(filter(None, [str(tmp_path / "jupyter"), os.environ.get("JUPYTER_PATH")]))
    )
    # Keep the kernel's connection files and IPython profile out of the home directory.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    cache = os.environ.get("NORMJAX_TEST_CACHE", str(ROOT / ".jax_cache"))
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", cache)
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")

    nb = nbformat.read(NOTEBOOK, as_version=4)
    n_cells = len(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell("import sys; print('KERNEL_PYTHON=' + sys.executable)"))
    client = nbclient.NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=600,
        allow_errors=False,
        resources={"metadata": {"path": str(ROOT)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell

    texts = [_outputs_text(c) if c.cell_type == "code" else "" for c in nb.cells]
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors

    assert f"KERNEL_PYTHON={sys.executable}" in texts[-1]

    # The sanction count of both newcomers was printed.
    m = re.search(r"oracle=(\d+) blind=(\d+)", "".join(texts[:n_cells]))
    assert m, "the cell that counts sanctions printed no counts"
    oracle, blind = int(m.group(1)), int(m.group(2))
    assert oracle <= blind, (oracle, blind)

    # Frames and plots were drawn, and the report printed its final-test table.
    images = sum(
        1 for c in nb.cells if c.cell_type == "code" for o in c.outputs if "data" in o and "image/png" in o["data"]
    )
    assert images >= 5, images
    assert any("final tests" in t and "seen" in t for t in texts)
    assert "notebook done in" in texts[n_cells - 1]
