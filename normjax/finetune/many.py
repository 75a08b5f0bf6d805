"""Several `finetune-data` files in one call: any subset of task x family x split.

    expand(names, allowed, what) -> the names, "all" standing for every allowed one
    build_many(tasks, families, splits, n, out, **build_kwargs) -> [(jsonl, manifest, records)]

Each file is exactly the file that `normjax finetune-data` writes for that one
task, family and split with the same options (`dataset.build` then
`dataset.write`, same names, same place, its own manifest): the builds run
one after another in this process, so the compiled programs (one harvest
program per policy and episode length, the frame renderer) are traced and
compiled once for all files, and the episodes of one family and split are
harvested once for the tasks that read them (`build(shared=...)`: Compliant
Action and Norm Selection read the newcomer policy's episodes, Norm Judgment
the norm-blind ones, Action + Judgment both).  Files go family by family,
split by split; a family and split's episodes are dropped once its files are
written.
"""

from __future__ import annotations

from pathlib import Path

from normjax.finetune.dataset import DEFAULT_POLICY, SPLITS, build, check_args, write
from normjax.finetune.rewards import TASKS
from normjax.norms import FAMILIES

ALL = "all"


def expand(names, allowed, what: str) -> list[str]:
    """`names` in the order given without repeats, "all" replaced by every allowed name."""
    out: list[str] = []
    for name in [names] if isinstance(names, str) else list(names):
        if name == ALL:
            out += [a for a in allowed if a not in out]
        elif name not in allowed:
            raise ValueError(f"unknown {what} {name!r}; valid: {', '.join(allowed)}, {ALL}")
        elif name not in out:
            out.append(name)
    if not out:
        raise ValueError(f"no {what} given; valid: {', '.join(allowed)}, {ALL}")
    return out


def plan(tasks, families, splits) -> list[tuple[str, str, str]]:
    """(task, family, split) of every file, family by family, split by split, tasks in order."""
    ts, fs, ss = expand(tasks, TASKS, "task"), expand(families, FAMILIES, "family"), expand(splits, SPLITS, "split")
    return [(t, f, s) for f in fs for s in ss for t in ts]


def build_many(tasks, families, splits, n: int, out, policy: str = DEFAULT_POLICY, on_file=None, **kwargs) -> list:
    """Build and write every (task, family, split) file of `plan`; returns [(jsonl path, manifest
    path, manifest)].  `kwargs` go to `dataset.build` (seed, batch, steps, frames, ...);
    `on_file(jsonl, manifest_path, manifest)` is called as each file is written."""
    files = plan(tasks, families, splits)
    for task, family, split in files:  # every refusal before anything is traced
        check_args(task, family, split, n, policy)
    if kwargs.get("states_from") is not None:
        bad = sorted({t for t, _, _ in files} - {"compliant_action", "norm_selection"})
        if bad:
            raise ValueError(
                f"states read back from llm-eval transcripts serve compliant_action and norm_selection, not {bad}"
            )
    written = []
    shared: dict = {}
    group = None
    for task, family, split in files:
        if (family, split) != group:  # the previous family and split's episodes are no longer needed
            shared, group = {}, (family, split)
        records, manifest = build(task, family, split, n, policy=policy, shared=shared, **kwargs)
        data, meta = write(Path(out), records, manifest)
        written.append((data, meta, manifest))
        if on_file is not None:
            on_file(data, meta, manifest)
    return written


__all__ = ["ALL", "build_many", "expand", "plan"]
