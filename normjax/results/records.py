"""The common form of a Table 1 result: per-episode records and the protocol they ran.

Every result kind normjax writes (`normjax.results.readers`) becomes a `Result`:
a label, the kind, the files it came from, a protocol `fingerprint` and one
record per test episode with the fields of `FIELDS`.  `unit` is the level
below the norm where a result has several (a DQN run's training seed, a play
study's participant); it is "" otherwise.  Metrics a result did not record
(or that are undefined in an episode, e.g. community path length with no
community agent) are NaN.

Two results belong in one table only if their protocols agree
(`incompatibilities`): the protocol seed (which fixes the test episodes),
the capacity K, the test-episode length, the distractor settings, the
interaction-phase length of results that learn from one, and the scenario
tables' hash (`normjax.protocol.stamp`); a field a result did not record
(None) is not compared.  The code version is shown, not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from normjax.cli_names import FAMILIES

CONDITIONS = ("seen", "unseen")
SUCCESS = ("joint", "task")  # Table 1's metrics, in percent
SECONDARY = ("path_length", "collision", "community_path_length", "community_welfare")  # the paper's Figure 4a
FIELDS = ("norm", "family", "condition", "episode", "seed", "unit") + SUCCESS + SECONDARY
PERCENT = {"joint", "task", "collision"}  # shown x 100

# A result's protocol: what must agree for two results to share a table (module doc), and the
# code version, shown but not compared (results of two commits with the same scenarios compare).
FINGERPRINT = (
    "protocol_seed",
    "capacity",
    "test_steps",
    "interaction_steps",
    "distractor",
    "distractor_share",
    "scenario_hash",
    "code_version",
)


@dataclass
class Result:
    label: str
    kind: str  # evaluate, observer, dqn, llm, play
    sources: list[str]
    fingerprint: dict
    records: list[dict]
    notes: list[str] = field(default_factory=list)
    # llm-eval rows: the newcomer kind (`normjax.llm.modules.NEWCOMERS`) and the label without it,
    # which names the same model's runs of every kind (`normjax.results.newcomers` pairs them)
    newcomer: str = ""
    model: str = ""

    def column(self, name: str) -> np.ndarray:
        if name in ("norm", "family", "condition", "unit"):
            return np.asarray([str(r[name]) for r in self.records])
        return np.asarray([np.nan if r.get(name) is None else float(r[name]) for r in self.records])

    @property
    def norms(self) -> list[str]:
        return sorted({r["norm"] for r in self.records})

    @property
    def units(self) -> list[str]:
        return sorted({r["unit"] for r in self.records})


def record(row: dict, unit: str = "") -> dict:
    """The common record of one episode row in `normjax.protocol.summarize`'s format."""
    if row.get("condition") not in CONDITIONS or row.get("family") not in FAMILIES:
        raise ValueError(
            f"episode row {row.get('norm')!r}: condition {row.get('condition')!r} / family {row.get('family')!r} "
            f"not one of {CONDITIONS} / {FAMILIES}"
        )
    out = dict(
        norm=str(row["norm"]),
        family=row["family"],
        condition=row["condition"],
        episode=int(row["episode"]),
        seed=int(row["seed"]),
        unit=str(unit),
        joint=float(bool(row["joint"])),
        task=float(row["task"]),
    )
    for name in SECONDARY + ("over_imitation",):  # over_imitation: runs with distractors only
        v = row.get(name)
        out[name] = None if v is None else float(v)
    return out


def merge(results: list[Result]) -> list[Result]:
    """Results with the same label pooled into one (e.g. a population trained in chunks of norms).

    Pooled results must share the kind and the fingerprint and must not hold
    the same episode (norm, condition, episode, unit) twice.
    """
    by_label: dict[str, list[Result]] = {}
    for r in results:
        by_label.setdefault(r.label, []).append(r)
    out = []
    for label, group in by_label.items():
        first = group[0]
        if len(group) == 1:
            out.append(first)
            continue
        for other in group[1:]:
            diff = [k for k in COMPARED if first.fingerprint.get(k) != other.fingerprint.get(k)]
            if other.kind != first.kind or other.newcomer != first.newcomer or diff:
                raise ValueError(
                    f"results labelled {label!r} cannot be pooled: {first.sources[0]} and {other.sources[0]} "
                    f"differ in {', '.join(diff) or 'kind or newcomer'}; give them their own labels (LABEL=PATH)"
                )
        records, seen = [], set()
        for r in group:
            for rec in r.records:
                key = (rec["norm"], rec["condition"], rec["episode"], rec["unit"])
                if key in seen:
                    raise ValueError(
                        f"results labelled {label!r} hold episode {key} twice ({', '.join(r.sources)}); "
                        "give them their own labels (LABEL=PATH)"
                    )
                seen.add(key)
                records.append(rec)
        sources = [s for r in group for s in r.sources]
        notes = list(dict.fromkeys(n for r in group for n in r.notes))
        out.append(
            Result(label, first.kind, sources, dict(first.fingerprint), records, notes, first.newcomer, first.model)
        )
    return out


COMPARED = tuple(k for k in FINGERPRINT if k != "code_version")


def incompatibilities(results: list[Result]) -> list[str]:
    """One line per compared fingerprint field on which the results disagree (empty: one table is fine)."""
    lines = []
    for key in COMPARED:
        values = {r.label: r.fingerprint.get(key) for r in results}
        recorded = {v for v in values.values() if v is not None}
        if len(recorded) > 1:
            lines.append(f"{key}: " + ", ".join(f"{label} = {v!r}" for label, v in values.items() if v is not None))
    return lines


def odd_ones(results: list[Result]) -> set[str]:
    """Labels (`--allow-mixed` marks them) whose recorded value of some fingerprint field differs
    from the most common recorded value of that field (on a tie, the first row's)."""
    out = set()
    for key in COMPARED:
        recorded = [(r.label, r.fingerprint.get(key)) for r in results if r.fingerprint.get(key) is not None]
        values = [v for _, v in recorded]
        if len(set(map(repr, values))) < 2:
            continue
        common = max(values, key=lambda v: (values.count(v), -values.index(v)))
        out |= {label for label, v in recorded if v != common}
    return out


__all__ = [
    "CONDITIONS",
    "FIELDS",
    "FINGERPRINT",
    "PERCENT",
    "SECONDARY",
    "SUCCESS",
    "Result",
    "incompatibilities",
    "merge",
    "odd_ones",
    "record",
]
