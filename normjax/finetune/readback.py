"""Newcomer states read back from an `llm-eval` run: the model's own interaction episodes.

    source = read_run(run_dir, norm_ids)   # .episodes: [text.Episode], .manifest()

For every finished, complete interaction transcript of the run
(``OUT/transcripts/<norm>/interaction.jsonl``, `normjax.runtime.transcripts`)
whose norm is among `norm_ids`, the episode is stepped again, not taken from
the file: the protocol's episode (key ``PRNGKey(seed)`` of the header, the
run's interaction length and capacity, the same key schedule as the
runner's `normjax.runtime.batch`) with slot 0 taking the action the model chose
at each step (WAIT where it was not asked: off the grid or in service), in
the harvest program (`harvest(..., "replay")`), which labels every step as
for scripted newcomers (the norm-aware oracle's tie set and the reasons).
The replay must reproduce what the run recorded: every agent's activity,
position, effective action, next cell and sanction on every step line, and
the newcomer's executed action; any difference raises `ValueError` naming
the file, the step and the slot (a transcript from other settings or
another version of the world is not relabelled silently).

The records' prompts then carry the runner's memory of the episode (the
model's chosen actions, blocked moves noted, its reasoning or its error)
and the belief it held before the step.  Excluded, as for harvested states:
automatic WAITs (service) and steps after a push or collision
(`records.newcomer_candidates`); steps the model was not asked are never
candidates.  Runs with distractors are refused (their habits are not
replayed here).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from normjax import constants as C
from normjax.finetune.harvest import harvest
from normjax.finetune.text import Episode
from normjax.norms import NORMS
from normjax.protocol.seeds import base_seed
from normjax.runtime.transcripts import TRANSCRIPT_FORMAT, TranscriptStore


class RunStates:
    """The replayed interaction episodes of one run (those of the requested norms)."""

    def __init__(self, run_dir: Path, settings: dict, names: list[str], episodes: list[Episode]):
        self.run_dir, self.settings, self.names, self.episodes = run_dir, settings, names, episodes

    def manifest(self) -> dict:
        return dict(
            run=str(self.run_dir),
            model=self.settings.get("model"),
            episodes=self.names,
            seeds=[ep.seed for ep in self.episodes],
            steps=self.settings["interaction_steps"],
        )


def _settings(run: Path) -> dict:
    p = run / "run.json"
    if not p.is_file():
        raise ValueError(f"{run} is not an llm-eval run directory (no run.json)")
    s = json.loads(p.read_text())
    if s.get("distractor"):
        raise ValueError(
            f"{run} was run with distractor {s['distractor']!r}; states are read back only from "
            "runs without distractors"
        )
    if not s.get("interaction_steps"):
        raise ValueError(f"{run} has no interaction phase (interaction_steps={s.get('interaction_steps')!r})")
    return s


def _transcripts(run: Path, norm_ids: list[int]) -> list[tuple[str, list[dict]]]:
    store = TranscriptStore(run)
    found = [n for n in store.episodes() if n.endswith("/interaction") and store.load(n) is not None]
    wanted = {NORMS[m].name for m in norm_ids}
    keep = [n for n in found if n.split("/")[0] in wanted]
    if not keep:
        raise ValueError(
            f"{run} has no complete interaction transcript of these norms; it has "
            f"{sorted(n.split('/')[0] for n in found) or 'none'}, wanted one of {sorted(wanted)}"
        )
    return [(n, store.read(n)) for n in keep]


def _actions(name: str, lines: list[dict], steps: int) -> np.ndarray:
    if len(lines) != steps:
        raise ValueError(f"{name}: {len(lines)} step lines, the run's interaction phase has {steps}")
    out = np.full(steps, C.WAIT, np.int32)
    for j, line in enumerate(lines):
        if line.get("t") != j:
            raise ValueError(f"{name}: step line {j} has t={line.get('t')!r}")
        if line.get("llm") is not None:
            out[j] = int(line["llm"]["action"])
    return out


def check_replay(name: str, lines: list[dict], ep: Episode) -> None:
    """Raise ValueError at the first step where the replay differs from the transcript."""
    d = ep.data
    for j, line in enumerate(lines):
        for a in line["agents"]:
            k = a["slot"]
            got = dict(active=bool(d["active"][j, k]))
            want = dict(active=bool(a["active"]))
            if a["active"]:
                got.update(
                    pos=d["pos"][j, k].tolist(), action=int(d["action"][j, k]), sanctioned=bool(d["sanctioned"][j, k])
                )
                want.update(pos=a["pos"], action=a["action"], sanctioned=a["sanctioned"])
                if a["next"] is not None:
                    got["next"], want["next"] = d["next_pos"][j, k].tolist(), a["next"]
            if got != want:
                raise ValueError(
                    f"{name}: step {j}, slot {k}: the replay gives {got}, the transcript recorded "
                    f"{want}; the run does not replay with this version of normjax"
                )
        llm = line.get("llm")
        if llm is not None and int(llm["executed"]) != int(d["action"][j, 0]):
            raise ValueError(
                f"{name}: step {j}: the newcomer executed {llm['executed']} in the run, "
                f"{int(d['action'][j, 0])} in the replay"
            )


def read_run(run_dir, norm_ids: list[int]) -> RunStates:
    run = Path(run_dir)
    s = _settings(run)
    steps, capacity = int(s["interaction_steps"]), int(s.get("capacity", 10))
    found = _transcripts(run, norm_ids)
    ids, seeds, acts = [], [], []
    for name, recs in found:
        header = recs[0]
        if header.get("transcript") != TRANSCRIPT_FORMAT:
            raise ValueError(f"{name}: not a {TRANSCRIPT_FORMAT} transcript")
        nid = int(header["spec"]["norm_id"])
        if int(header["seed"]) != base_seed(nid, int(s.get("seed", 0))):
            raise ValueError(
                f"{name}: seed {header['seed']} is not the protocol's "
                f"{base_seed(nid, int(s.get('seed', 0)))} for run seed {s.get('seed', 0)}"
            )
        ids.append(nid)
        seeds.append(int(header["seed"]))
        acts.append(_actions(name, recs[1:], steps))
    h = harvest(ids, seeds, "replay", steps=steps, actions=np.stack(acts), capacity=capacity)
    episodes = []
    for e, (name, recs) in enumerate(found):
        decisions = {line["t"]: line["llm"] for line in recs[1:] if line.get("llm") is not None}
        ep = Episode(h, e, decisions)
        check_replay(name, recs[1:], ep)
        episodes.append(ep)
    return RunStates(run, s, [n for n, _ in found], episodes)


__all__ = ["RunStates", "check_replay", "read_run"]
