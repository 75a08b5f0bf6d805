"""normjax table: each result kind read from tiny files in its real format, one table over all of
them, the refusal of mixed protocols, pooling, comparisons and formats (no JAX, no protocol run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from normjax.cli import main
from normjax.results.readers import read, read_all
from normjax.results.table import IncompatibleResults, build, table_text

ROOT = Path(__file__).resolve().parents[2]
NORMS = (("forbidden_zone_q", "access", 0), ("group_doors_cab", "allocation", 44))


def _rows(joint_of=lambda norm, cond, ep: ep == 0, norms=NORMS):
    """summarize-format episode rows: 3 seen + 3 unseen per norm."""
    rows = []
    for name, family, nid in norms:
        for cond in ("seen", "unseen"):
            for ep in range(3):
                j = bool(joint_of(name, cond, ep))
                rows.append(
                    dict(
                        norm_id=nid,
                        norm=name,
                        family=family,
                        condition=cond,
                        layout="cafe",
                        episode=ep,
                        seed=1000 * (nid + 1) + ep + (3 if cond == "unseen" else 0) + 1,
                        group=ep,
                        task=1.0 if j else 0.5,
                        joint=j,
                        sanctions=0,
                        path_length=20 + ep,
                        collision=ep == 1,
                        community_path_length=None if ep == 2 else 14.0,
                        community_welfare=None if ep == 2 else 5.0,
                    )
                )
    return rows


def _write(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def evaluate_file(tmp_path, policy="oracle", seed=0, **kw) -> Path:
    meta = dict(policy=policy, seed=seed, capacity=10, norms=None, distractor="none", distractor_share=0.0)
    return _write(tmp_path / f"{policy}.json", dict(episodes=_rows(**kw), meta=meta))


def dqn_run(tmp_path, name="part0", norms=NORMS, seeds=1, capacity=10) -> Path:
    d = tmp_path / "dqn" / name
    config = dict(
        name="cpu_test", arch="mlp", capacity=capacity, distractor="none", distractor_share=0.0, total_steps=20000
    )
    _write(d / "config.json", config)
    population = [
        dict(norm_id=nid, reward_condition="sparse_penalty", seed=s, arch="mlp")
        for _, _, nid in norms
        for s in range(seeds)
    ]
    _write(d / "population.json", population)
    episodes = []
    for _, _, nid in norms:
        for s in range(seeds):
            episodes += [r for r in _rows(lambda n, c, e: s == 1, norms) if r["norm_id"] == nid]
    _write(d / "results.json", dict(config=config, results={}, episodes={"mlp": {"sparse_penalty": episodes}}))
    return d


def llm_run(tmp_path, interaction_steps=200, model="scripted-model") -> Path:
    d = tmp_path / f"llm_{interaction_steps}"
    settings = dict(
        model=model,
        base_url="http://127.0.0.1:1/v1",
        text_only=False,
        known_norm=False,
        seed=0,
        capacity=10,
        interaction_steps=interaction_steps,
    )
    _write(d / "run.json", dict(format="normjax.llm-run/1", **settings))
    _write(d / "results.json", dict(episodes=_rows(lambda n, c, e: c == "seen"), incomplete=[], meta=settings))
    return d


def play_study(tmp_path, interaction_steps=200) -> Path:
    d = tmp_path / "study"
    for pid, joint in (("p1", True), ("p2", False)):
        settings = dict(
            policy="human",
            participant=pid,
            seed=0,
            capacity=10,
            interaction_steps=interaction_steps,
            norms=["forbidden_zone_q"],
        )
        _write(d / pid / "run.json", dict(format="normjax.llm-run/1", **settings))
        rows = _rows(lambda n, c, e, j=joint: j, norms=NORMS[:1])
        _write(d / pid / "results.json", dict(episodes=rows, meta=settings))
    settings = dict(policy="human", participant="p3", seed=0, capacity=10, interaction_steps=interaction_steps)
    _write(d / "p3" / "run.json", settings)  # started, never finished: not counted
    return d


def test_evaluate_reader(tmp_path):
    (r,) = read(str(evaluate_file(tmp_path, "bayes_map")))
    assert (r.label, r.kind, len(r.records)) == ("bayes_map", "observer", 12)
    assert r.fingerprint["interaction_steps"] == 200 and r.fingerprint["protocol_seed"] == 0
    (o,) = read(str(evaluate_file(tmp_path, "oracle")))
    assert o.kind == "evaluate" and o.fingerprint["interaction_steps"] is None
    rec = o.records[2]
    assert rec["joint"] == 0.0 and rec["task"] == 0.5 and rec["community_welfare"] is None


def test_dqn_reader_pools_chunks_and_reads_training_seeds(tmp_path):
    dqn_run(tmp_path, "part0", NORMS[:1], seeds=2)
    dqn_run(tmp_path, "part1", NORMS[1:], seeds=2)
    (r,) = read(str(tmp_path / "dqn"))  # the parent of both chunks
    assert r.label == "DQN-MLP sparse_penalty (cpu_test)" and r.kind == "dqn"
    assert (
        len(r.records) == 24 and r.units == ["seed 0", "seed 1"] and r.norms == ["forbidden_zone_q", "group_doors_cab"]
    )
    assert r.fingerprint["protocol_seed"] == 0 and r.fingerprint["interaction_steps"] is None
    cells = build([str(tmp_path / "dqn")], by="norm")["cells"]
    joint = next(
        c for c in cells if c["group"] == "forbidden_zone_q" and c["metric"] == "joint" and c["condition"] == "seen"
    )
    assert joint["mean"] == 50.0 and joint["unit"] == "seeds" and joint["clusters"] == 2  # seed 1 always joint


def test_llm_reader(tmp_path):
    (r,) = read(str(llm_run(tmp_path)))
    assert (r.label, r.kind, r.fingerprint["interaction_steps"]) == ("scripted-model", "llm", 200)
    assert sum(x["joint"] for x in r.records) == 6


def test_play_reader_counts_complete_participants_only(tmp_path):
    (r,) = read(str(play_study(tmp_path)))
    assert r.label == "human (2 participants)" and r.units == ["p1", "p2"] and len(r.records) == 12
    assert any("p3" in n for n in r.notes)


def test_one_table_over_every_kind(tmp_path):
    sources = [
        str(dqn_run(tmp_path)),
        str(evaluate_file(tmp_path, "oracle", joint_of=lambda n, c, e: True)),
        str(evaluate_file(tmp_path, "bayes_map")),
        str(llm_run(tmp_path)),
        str(play_study(tmp_path)),
    ]
    text = table_text(sources, paper=True)
    for label in (
        "DQN-MLP sparse_penalty (cpu_test)",
        "oracle",
        "bayes_map",
        "scripted-model",
        "human (2 participants)",
    ):
        assert f"| {label} | seen |" in text
    assert "| oracle | seen | 100.0 [" in text and "Norm Oracle (paper)" in text
    assert "| scripted-model | unseen | " in text and "[" in text


def test_refuses_another_interaction_length_and_says_what_differs(tmp_path, capsys):
    sources = [str(llm_run(tmp_path, 200)), "short=" + str(llm_run(tmp_path, 100, model="m2"))]
    with pytest.raises(IncompatibleResults, match=r"interaction_steps: scripted-model = 200, short = 100"):
        table_text(sources)
    assert main(["table", *sources]) == 2
    assert "interaction_steps" in capsys.readouterr().err
    text = table_text(sources, allow_mixed=True)
    assert "| short * | seen |" in text and "| scripted-model | seen |" in text


def test_refuses_another_protocol_seed_but_not_a_planner_without_interaction(tmp_path):
    with pytest.raises(IncompatibleResults, match="protocol_seed"):
        table_text([str(evaluate_file(tmp_path, "oracle")), str(evaluate_file(tmp_path, "blind", seed=1))])
    table_text([str(evaluate_file(tmp_path, "oracle")), str(llm_run(tmp_path, 100))])  # the oracle does not learn


def test_same_label_twice_with_the_same_episodes_is_an_error(tmp_path):
    f = str(evaluate_file(tmp_path, "oracle"))
    with pytest.raises(ValueError, match="twice"):
        read_all([f"x={f}", f"x={f}"])


def test_compare_with_holm_and_the_formats(tmp_path):
    oracle = str(evaluate_file(tmp_path, "oracle", joint_of=lambda n, c, e: True))
    blind = str(evaluate_file(tmp_path, "blind", joint_of=lambda n, c, e: False))
    model = str(llm_run(tmp_path))
    t = build([oracle, blind, model], compare=[("oracle", "blind"), ("scripted-model", "blind")], holm=True)
    row = next(r for r in t["comparisons"] if r["a"] == "oracle" and r["group"] == "overall" and r["metric"] == "joint")
    assert row["diff"] == 100.0 and row["p_holm"] >= row["p"]
    payload = json.loads(table_text([oracle, blind], fmt="json", compare=[("1", "2")]))
    assert {r["label"] for r in payload["rows"]} == {"oracle", "blind"} and payload["comparisons"]
    assert "\\begin{tabular}" in table_text([oracle], fmt="latex")
    assert table_text([oracle], fmt="csv").splitlines()[1].startswith("newcomer,layouts,Access J")
    with pytest.raises(ValueError, match="no such row"):
        build([oracle], compare=[("oracle", "nobody")])


def test_figures_are_written(tmp_path):
    oracle = str(evaluate_file(tmp_path, "oracle", joint_of=lambda n, c, e: True))
    blind = str(evaluate_file(tmp_path, "blind", joint_of=lambda n, c, e: False))
    text = table_text([oracle, blind], compare=[("oracle", "blind")], figures_dir=tmp_path / "figs")
    for name in ("success.png", "secondary.png", "differences.png"):
        assert (tmp_path / "figs" / name).stat().st_size > 1000 and name in text


def test_a_finetune_eval_output_without_its_records_file_is_refused(tmp_path):
    metrics = dict(data=str(tmp_path / "gone.jsonl"), tasks={"norm_selection": {"n": 3, "accuracy": 1.0}}, score=1.0)
    f = _write(tmp_path / "ft" / "metrics.json", metrics)
    with pytest.raises(ValueError, match="gone.jsonl"):
        read(str(f))


def test_committed_1m_dqn_mlp_rows_match_the_recorded_tables():
    """docs/results.md's pooled DQN-MLP sparse_penalty row: 20.7 / 28.3 seen, 0.7 / 8.3 unseen (joint / task), final tests on the current scenarios."""
    t = build([str(ROOT / "results/cpu_paper_mlp_1m/sparse_penalty")], n_resamples=200)
    cell = {(c["condition"], c["group"], c["metric"]): c for c in t["cells"]}
    assert round(cell[("seen", "overall", "joint")]["mean"], 1) == 20.7
    assert round(cell[("seen", "overall", "task")]["mean"], 1) == 28.3
    assert round(cell[("unseen", "overall", "joint")]["mean"], 1) == 0.7
    assert cell[("seen", "overall", "joint")]["clusters"] == 50
    assert cell[("seen", "overall", "joint")]["low"] < 20.7 < cell[("seen", "overall", "joint")]["high"]


def test_the_closing_table_of_train_sets_a_run_among_the_committed_rows(tmp_path):
    from normjax.results.after_train import closing_table

    text = closing_table(dqn_run(tmp_path))  # two norms: forbidden_zone_q, group_doors_cab
    assert "on its 2 norm(s)" in text
    for label in ("DQN-MLP sparse_penalty (cpu_test)", "oracle", "blind", "DQN-MLP sparse_penalty 1M"):
        assert f"| {label} | seen |" in text
    # one norm per family here: those cells resample the norm's episodes, not a lone norm
    assert "| DQN-MLP dense 1M | seen | 33.3 [0.0, " in text
    assert (
        "DQN-MLP sparse_penalty (cpu_test): 20,000 transitions per run; the committed 1M DQN-MLP runs reached" in text
    )
    empty = tmp_path / "bare"
    empty.mkdir()
    assert "not here" in closing_table(dqn_run(tmp_path, "again"), repo=empty)


def test_bad_norms_and_paper_per_norm_are_refused(tmp_path):
    f = str(evaluate_file(tmp_path, "oracle"))
    with pytest.raises(ValueError, match="'no_such_norm'.*forbidden_zone_q"):
        table_text([f], norms=["no_such_norm"])
    with pytest.raises(ValueError, match="per-norm"):
        table_text([f], by="norm", paper=True)
    text = table_text([f], by="norm", norms=["group_doors_cab"])
    assert "| oracle | group_doors_cab | 3 episodes |" in text and "forbidden_zone_q" not in text


def test_another_scenario_table_is_refused_but_another_commit_is_not(tmp_path):
    def stamped(name, scenario, code):
        f = evaluate_file(tmp_path, name)
        data = json.loads(f.read_text())
        data["meta"].update(scenario_hash=scenario, code_version=code)
        f.write_text(json.dumps(data))
        return str(f)

    a, b = stamped("oracle", "aaaa", "0.1.0+1"), stamped("blind", "aaaa", "0.1.0+2")
    assert (
        "| blind | evaluate | 2 | 1 | 0 | 10 | 100 | none (no interaction phase) | none | 0.0 | aaaa | 0.1.0+2 |"
        in (table_text([a, b]))
    )
    with pytest.raises(IncompatibleResults, match="scenario_hash: oracle = 'aaaa', random = 'bbbb'"):
        table_text([a, stamped("random", "bbbb", "0.1.0+1")])


def test_the_stamp_names_the_package_version():
    import normjax
    from normjax.protocol.stamp import code_version

    assert code_version().split("+")[0] == normjax.__version__


def test_runs_of_several_k_are_rows_of_their_own_and_refused_together(tmp_path):
    dqn_run(tmp_path, "K6", capacity=6)
    dqn_run(tmp_path, "K10", capacity=10)
    labels = sorted(r.label for r in read(str(tmp_path / "dqn")))
    assert labels == ["DQN-MLP sparse_penalty (cpu_test)", "DQN-MLP sparse_penalty (cpu_test, K=6)"]
    with pytest.raises(IncompatibleResults, match="capacity"):
        table_text([str(tmp_path / "dqn")])
