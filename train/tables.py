"""One markdown table per (architecture, reward condition) pooled over several run directories.

A population that does not fit memory at once is trained in chunks of norms
(docs/training.md, "The 1M reproduction on a CPU"); each chunk writes its own
`results.json`.  `pooled_tables` reads the final-test episodes of all chunks and
gives joint and task success (%) per family, seen and unseen, beside the
paper's Tables A6-A9 where the paper reports that cell, plus the share of
newcomer steps spent waiting (pooled over the chunks' episodes).  Reward
conditions and architectures are never pooled together.

    normjax report results/cpu_paper_mlp_1m/no_penalty/part* --markdown
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from normjax.train.report import FAMILIES, PAPER


def _episodes(run_dirs) -> dict:
    """{(arch, condition): [episode dicts]} over every run directory's results.json."""
    out = defaultdict(list)
    for d in run_dirs:
        res = json.loads((Path(d) / "results.json").read_text())
        episodes = res.get("episodes", {})
        for arch, by_cond in episodes.items():
            for cond, eps in by_cond.items():
                out[(arch, cond)] += eps
    return out


def _wait_share(run_dirs, arch, cond, split) -> float | None:
    """Newcomer WAIT share (%), the mean over chunks weighted by their episodes."""
    num = den = 0.0
    for d in run_dirs:
        table = json.loads((Path(d) / "results.json").read_text())["results"]
        row = table.get(arch, table).get(cond, {}).get(split, {}).get("overall", {})
        if "wait_share" in row:
            num += row["wait_share"] * row["episodes"]
            den += row["episodes"]
    return num / den if den else None


def pooled_tables(run_dirs) -> str:
    """Markdown tables (one per architecture and reward condition) of the final tests."""
    run_dirs = [Path(d) for d in run_dirs if (Path(d) / "results.json").exists()]
    blocks = []
    for (arch, cond), eps in sorted(_episodes(run_dirs).items()):
        groups = defaultdict(list)
        for e in eps:
            groups[(e["condition"], e["family"])].append(e)
            groups[(e["condition"], "overall")].append(e)
        paper = PAPER.get((arch, cond), {})
        lines = [
            f"| DQN-{arch.upper()}, {cond} | seen J | seen T | unseen J | unseen T | "
            "paper seen J / T | paper unseen J / T |",
            "|---|---|---|---|---|---|---|",
        ]
        for fam in FAMILIES + ("overall",):
            if ("seen", fam) not in groups:
                continue
            cells = []
            for split in ("seen", "unseen"):
                v = groups.get((split, fam), [])
                cells += (
                    [
                        f"{100 * sum(bool(x['joint']) for x in v) / len(v):.1f}",
                        f"{100 * sum(x['task'] for x in v) / len(v):.1f}",
                    ]
                    if v
                    else ["-", "-"]
                )
            ref = [paper.get(s, {}).get(fam) for s in ("seen", "unseen")]
            ref = [f"{r[0]:.1f} / {r[1]:.1f}" if r else "-" for r in ref]
            n = len({e["norm"] for e in groups[("seen", fam)]})
            lines.append(f"| {fam} ({n} norms) | " + " | ".join(cells + ref) + " |")
        waits = [_wait_share(run_dirs, arch, cond, s) for s in ("seen", "unseen")]
        if all(w is not None for w in waits):
            lines.append("")
            lines.append(f"Newcomer steps spent waiting: {waits[0]:.1f}% seen, {waits[1]:.1f}% unseen.")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


__all__ = ["pooled_tables"]
