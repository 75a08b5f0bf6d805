"""Readers: every result kind normjax writes, as `normjax.results.records.Result`s.

`read(source)` takes ``[LABEL=]PATH`` and recognises:

* an ``evaluate`` JSON file (``normjax evaluate --out``: ``episodes`` and
  ``meta.policy``): reference policies and the Bayesian observers;
* a DQN run directory (``config.json`` + ``results.json``, `train.run`), or a
  folder holding such runs at any depth (chunks of norms, conditions, K):
  one result per architecture, reward condition and K; the training seeds of
  ``population.json`` are the level below the norm;
* an ``llm-eval`` run directory (``run.json`` + ``results.json`` with
  ``meta.model``); a run with a normative module (``meta.newcomer``) is
  labelled ``model (kind)``, one without (the memory newcomer) ``model``;
* a ``finetune-eval`` output (``metrics.json`` + ``replies.jsonl``): a Table A5
  row (`normjax.results.table_a5`), not a Table 1 one;
* a ``play`` study directory (participant folders ``<id>/run.json`` with
  ``policy: "human"``): every complete participant (a ``results.json`` with
  six test episodes per norm), participants as the level below the norm;
  incomplete ones are named in the result's notes and not counted.

Nothing here imports JAX: reading a hundred results takes well under a second.
"""

from __future__ import annotations

import json
from pathlib import Path

from normjax.cli_names import OBSERVER_NAMES
from normjax.constants import INTERACTION_STEPS, TEST_STEPS
from normjax.results.records import Result, merge, record
from normjax.results.table_a5 import is_finetune_output, read_finetune

DQN_TEST_SEED = 0  # train.run.write_final_tests: the canonical protocol, seed 0
TESTS_PER_NORM = 6  # 3 seen + 3 unseen


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable JSON file ({type(e).__name__}: {e})") from None


def _fingerprint(meta: dict, *, interaction) -> dict:
    return dict(
        protocol_seed=meta.get("seed"),
        capacity=meta.get("capacity"),
        test_steps=meta.get("test_steps", TEST_STEPS),  # no command changes it: the constant
        interaction_steps=interaction,
        distractor=meta.get("distractor") or "none",
        distractor_share=float(meta.get("distractor_share") or 0.0),
        scenario_hash=meta.get("scenario_hash"),
        code_version=meta.get("code_version"),
    )


def read_evaluate(path: Path, data: dict) -> Result:
    meta = data.get("meta") or {}
    policy = meta.get("policy", path.stem)
    observer = policy in OBSERVER_NAMES
    label = policy if meta.get("seed", 0) == 0 else f"{policy} (protocol seed {meta['seed']})"
    # The observers learn in the protocol's interaction phase (its length is fixed in `evaluate`);
    # the reference planners do not learn, so its length does not apply to them.
    fp = _fingerprint(meta, interaction=INTERACTION_STEPS if observer else None)
    records = [record(r) for r in data["episodes"]]
    return Result(label, "observer" if observer else "evaluate", [str(path)], fp, records)


def _dqn_runs(path: Path) -> list[Path]:
    if (path / "config.json").is_file() and (path / "results.json").is_file():
        return [path]
    runs = sorted(p.parent for p in path.rglob("results.json") if (p.parent / "config.json").is_file())
    if not runs:
        raise ValueError(f"{path}: no DQN run in it (a folder with config.json and results.json)")
    return runs


def _by_arch(episodes: dict, arch: str) -> dict:
    """{arch: {condition: rows}}; runs from before mixed populations keyed by condition only."""
    return episodes if set(episodes) <= {"mlp", "cnn"} else {arch: episodes}


def read_dqn_run(run: Path) -> list[Result]:
    """One result per (architecture, reward condition) of one run directory."""
    config = _load(run / "config.json")
    data = _load(run / "results.json")
    pop_path = run / "population.json"
    population = _load(pop_path) if pop_path.is_file() else []
    out = []
    for arch, by_cond in _by_arch(data.get("episodes") or {}, config.get("arch", "mlp")).items():
        for cond, rows in by_cond.items():
            runs = [
                p for p in population if p.get("reward_condition") == cond and p.get("arch", config.get("arch")) == arch
            ]
            records = []
            for i, row in enumerate(rows):
                # write_final_tests concatenates each run's six episodes in population order
                k = i // TESTS_PER_NORM
                unit = f"seed {runs[k]['seed']}" if k < len(runs) else ""
                if k < len(runs) and runs[k]["norm_id"] != row["norm_id"]:
                    raise ValueError(f"{run}: results.json and population.json disagree on run {k}'s norm")
                records.append(record(row, unit))
            meta = dict(
                seed=DQN_TEST_SEED,
                **{k: config.get(k) for k in ("capacity", "distractor", "distractor_share")},
                **(data.get("protocol") or {}),  # scenario hash and code version, where recorded
            )
            fp = _fingerprint(meta, interaction=None)  # a DQN trains instead of interacting
            k = config.get("capacity", 10)  # runs of several K (out/K6, K8, K10) are rows of their own
            label = f"DQN-{arch.upper()} {cond} ({config.get('name', run.name)}{'' if k == 10 else f', K={k}'})"
            notes = [f"{label}: {config.get('total_steps', 0):,} transitions per run"]
            out.append(Result(label, "dqn", [str(run)], fp, records, notes))
    return out


def read_llm(path: Path, data: dict) -> Result:
    meta = data.get("meta") or {}
    if data.get("incomplete"):
        raise ValueError(f"{path}: the llm-eval run is incomplete ({len(data['incomplete'])} episodes)")
    model = str(meta.get("model", path.name))
    model += " (known norm)" if meta.get("known_norm") else ""
    model += " (text only)" if meta.get("text_only") else ""
    # runs from before normative modules have no meta.newcomer: the memory newcomer, labelled as before
    newcomer = str(meta.get("newcomer") or "memory")
    label = model if newcomer == "memory" else f"{model} ({newcomer})"
    fp = _fingerprint(meta, interaction=meta.get("interaction_steps"))
    return Result(label, "llm", [str(path)], fp, [record(r) for r in data["episodes"]], newcomer=newcomer, model=model)


def _participants(path: Path) -> list[Path]:
    out = []
    for d in sorted(p for p in path.iterdir() if p.is_dir()):
        run = d / "run.json"
        if run.is_file() and _load(run).get("policy") == "human":
            out.append(d)
    return out


def read_play(path: Path) -> Result:
    complete, incomplete, records, fps = [], [], [], {}
    for d in _participants(path):
        res = d / "results.json"
        if not res.is_file():
            incomplete.append(d.name)
            continue
        data = _load(res)
        counts: dict = {}
        for r in data["episodes"]:
            counts[r["norm"]] = counts.get(r["norm"], 0) + 1
        if set(counts.values()) != {TESTS_PER_NORM}:
            raise ValueError(f"{res}: not {TESTS_PER_NORM} test episodes per norm ({counts})")
        meta = dict(_load(d / "run.json"), **(data.get("meta") or {}))
        fps[d.name] = _fingerprint(meta, interaction=meta.get("interaction_steps"))
        records += [record(r, d.name) for r in data["episodes"]]
        complete.append(d.name)
    if not complete:
        raise ValueError(f"{path}: no complete participant (incomplete: {', '.join(incomplete) or 'none'})")
    distinct = {json.dumps(f, sort_keys=True) for f in fps.values()}
    if len(distinct) > 1:
        raise ValueError(f"{path}: participants ran different protocols: {fps}")
    notes = [f"{len(incomplete)} incomplete participant(s) not counted: {', '.join(incomplete)}"] if incomplete else []
    label = f"human ({len(complete)} participant{'s' * (len(complete) != 1)})"
    return Result(label, "play", [str(path)], next(iter(fps.values())), records, notes)


def _read_path(path: Path) -> list:
    if not path.exists():
        raise ValueError(f"{path}: no such file or directory")
    if is_finetune_output(path):
        return [read_finetune(path)]
    if path.is_file():
        data = _load(path)
        if isinstance(data, dict) and "episodes" in data and "policy" in (data.get("meta") or {}):
            return [read_evaluate(path, data)]
        raise ValueError(f"{path}: not a normjax evaluate JSON file (episodes and meta.policy)")
    run_json = path / "run.json"
    if run_json.is_file():
        if _load(run_json).get("policy") == "human":
            raise ValueError(f"{path}: one play participant; give the study directory ({path.parent})")
        if (path / "results.json").is_file():
            return [read_llm(path, _load(path / "results.json"))]
        raise ValueError(f"{path}: an llm-eval run without results.json (unfinished or failed)")
    if _participants(path):
        return [read_play(path)]
    return [r for run in _dqn_runs(path) for r in read_dqn_run(run)]


def read(source: str) -> list[Result]:
    """The results of one ``[LABEL=]PATH`` argument (module doc); LABEL names them all."""
    label, path = None, source
    if "=" in source and not Path(source).exists():
        label, path = source.split("=", 1)
    found = _read_path(Path(path))
    results = merge([r for r in found if isinstance(r, Result)]) + [r for r in found if not isinstance(r, Result)]
    if label is not None:
        if len(results) > 1:
            raise ValueError(f"{source}: LABEL= names one result, but {path} holds {len(results)}")
        old, results[0].label = results[0].label, label
        if isinstance(results[0], Result):
            results[0].notes = [n.replace(old, label) for n in results[0].notes]
    return results


def read_all(sources) -> list:
    """Every source's results; Table 1 results with the same label pooled (`records.merge`),
    then the finetune-eval results (`normjax.results.table_a5`), whose labels must differ."""
    found = [r for s in sources for r in read(s)]
    a5 = [r for r in found if not isinstance(r, Result)]
    labels = [r.label for r in a5]
    if len(set(labels)) < len(labels):
        raise ValueError(f"finetune-eval results with the same label: {labels}; give them their own (LABEL=PATH)")
    return merge([r for r in found if isinstance(r, Result)]) + a5


__all__ = ["read", "read_all", "read_dqn_run", "read_evaluate", "read_llm", "read_play"]
