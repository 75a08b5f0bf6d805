"""Shortcut baselines, the judgment pairing and the selection scheme on hand-built records
(no JAX program: seconds)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from normjax.cli import main
from normjax.finetune import balance as B
from normjax.finetune import records as R
from normjax.finetune.baselines import baselines, novel_option, table
from normjax.norms import NORMS


def _state(slot: int, uid: int, last: bool, earlier: bool) -> dict:
    """A judgment record's state: the judged agent `uid` in `slot`, crossed in the last step
    and / or in an earlier listed step (another agent 99 is always crossed)."""
    return dict(
        t=60,
        agents=[dict(slot=slot, uid=uid, red_cross=last), dict(slot=5, uid=99, red_cross=True)],
        history=[
            dict(t=40, uid=[uid, 99], sanctioned=[earlier, True]),
            dict(t=59, uid=[uid, 99], sanctioned=[last, True]),
        ],
        subject=dict(slot=slot, uid=uid),
    )


def _judged(violates: bool, slot=3, last=False, earlier=False) -> dict:
    return dict(task="norm_judgment", violates=violates, state=_state(slot, 7, last, earlier))


def test_judgment_rules_read_the_judged_agent_only():
    # the cross-counter's world: violators crossed, compliant movers not
    recs = [_judged(True, earlier=True)] * 3 + [_judged(True, last=True)] + [_judged(False)] * 4
    s = baselines(recs)["norm_judgment"]
    assert s["any earlier red cross"] == 1.0  # another agent's crosses are not the judged agent's
    assert s["last move crossed"] == pytest.approx(0.625)  # TPR 1/4, TNR 1
    assert s["always violates"] == s["never violates"] == s["majority class"] == 0.5
    assert s["newcomer violates"] == 0.5  # nobody is the newcomer: always "no"
    recs = [_judged(True, slot=0), _judged(False, slot=3)]
    assert baselines(recs)["norm_judgment"]["newcomer violates"] == 1.0


def test_entering_rules_read_the_target_cell():
    from normjax.finetune.state import _cafe_cells

    doors, chair, _ = _cafe_cells()
    door, seat = sorted(doors)[0], [int(v) for v in np.argwhere(chair)[0]]
    recs = [_judged(True), _judged(True), _judged(False), _judged(False)]
    for r, target in zip(recs, [door, seat, [5, 5], door]):
        r["state"] = dict(r["state"], subject=dict(r["state"]["subject"], target=list(target)))
    s = baselines(recs)["norm_judgment"]
    assert s["entering a door violates"] == 0.5  # one violation, one compliant move at a door
    assert s["entering a chair violates"] == 0.75  # TPR 1/2, TNR 1
    assert s["entering a zone r violates"] == 0.5


def test_judgment_without_state_has_constants_only():
    s = baselines([dict(task="norm_judgment", violates=v) for v in (True, False, False)])["norm_judgment"]
    assert s["always violates"] == 0.5 and "any earlier red cross" not in s


def _selection(choices, answer, family="access") -> dict:
    return dict(task="norm_selection", family=family, choices=choices, answer=answer)


def test_selection_rules():
    train = [n.description for n in NORMS if n.family == "access" and not n.held_out]
    held = [n.description for n in NORMS if n.family == "access" and n.held_out]
    leaky = [_selection(train[:3] + [held[0]], "D"), _selection([held[1]] + train[:3], "A")]
    assert novel_option(leaky[0]) == "D"
    s = baselines(leaky)["norm_selection"]
    assert s["novel option"] == 1.0 and s["constant A"] == s["constant D"] == 0.5 and s["random"] == 0.25
    fair = [_selection(held, a) for a in "ABCD"]
    s = baselines(fair)["norm_selection"]
    assert s["novel option"] == 0.25 and all(s[f"constant {a}"] == 0.25 for a in "ABCD")


def test_action_rules():
    recs = [
        dict(task="compliant_action", allowed_actions=[3], oracle_action=3),
        dict(task="compliant_action", allowed_actions=[0, 3], oracle_action=0),
        dict(task="compliant_action", allowed_actions=[4], oracle_action=4),
    ]
    s = baselines(recs)["compliant_action"]
    assert s["constant move right"] == pytest.approx(2 / 3) == s["best constant"]
    assert s["random"] == pytest.approx((1 + 2 + 1) / 15)
    assert s["majority class"] == pytest.approx(2 / 3)  # a three-way tie: the first seen (3) is taken
    assert "compliant_action (accuracy)" in table({"f": baselines(recs)})


def test_cli_prints_the_table(tmp_path, capsys):
    held = [n.description for n in NORMS if n.family == "access" and n.held_out]
    recs = [dict(_selection(held, a), prompt=[]) for a in "ABCD"]
    recs += [dict(_judged(v, earlier=v), prompt=[]) for v in (True, False)]
    path = tmp_path / "mixed_access_heldout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    out = tmp_path / "b.json"
    assert main(["finetune-baselines", str(path), "--json", str(out), "--no-cache"]) == 0
    text = capsys.readouterr().out
    assert "norm_selection (accuracy)" in text and "mixed_access_heldout" in text
    row = next(line for line in text.splitlines() if line.startswith("any earlier red cross"))
    assert row.split("|")[1].strip() == "100.0"
    assert json.loads(out.read_text())["mixed_access_heldout"]["norm_selection"]["novel option"] == 0.25


def test_even_fill():
    assert B.even_fill(10, [100, 100]) == [5, 5]
    assert B.even_fill(10, [2, 100, 100]) == [2, 4, 4]
    assert B.even_fill(10, [1, 1]) == [1, 1]  # short: what the capacities allow
    assert B.even_fill(0, [3]) == [0]


class _Ep:
    def __init__(self, norm_id, seed):
        self.norm_id, self.seed = norm_id, seed


def test_pairs_share_norm_and_cue():
    """Violations crossed, compliant moves mostly not: pairs leave the cue uninformative."""
    rng = np.random.default_rng(0)
    a, b = _Ep(0, 1), _Ep(1, 2)
    crossed, plain = B.CUES.index((1, False, 3)), B.CUES.index((0, False, 3))  # an earlier cross / none
    pool = [(a, 60 + j, 1, True, crossed) for j in range(10)]  # norm 0: crossed violators
    pool += [(a, 80 + j, 2, False, crossed) for j in range(3)]  # ... 3 crossed compliant movers
    pool += [(a, 90 + j, 3, True, plain) for j in range(5)] + [(a, 100 + j, 4, False, plain) for j in range(20)]
    pool += [(b, 60 + j, 1, v, plain) for j in range(10) for v in (True, False)]  # norm 1: uncrossed only
    picked, rep = B.balanced_by_norm(pool, 16, [0, 1], rng)
    assert len(picked) == 16
    for m in (0, 1):
        mine = [p for p in picked if p[0].norm_id == m]
        assert len(mine) == 8 and sum(p[3] for p in mine) == 4
        for cue in range(len(B.CUES)):
            assert sum(p[4] == cue and p[3] for p in mine) == sum(p[4] == cue and not p[3] for p in mine)
    assert rep[NORMS[0].name]["violation_share"] == 0.5
    assert rep[NORMS[0].name]["cues_violations"] == rep[NORMS[0].name]["cues_compliant"]
    assert rep[NORMS[0].name]["cues_violations"]["earlier_other"] == 0.5  # crossed agents kept, in both classes


def test_selection_choices_scheme():
    rng = np.random.default_rng(1)
    fam = {"train": [0, 1, 2, 3, 4], "heldout": [10, 11, 12, 13]}
    for _ in range(20):
        held = R.selection_choices(11, "heldout", fam, 2, rng)
        assert held[2] == 11 and len(set(held)) == 4 and set(held) <= set(fam["heldout"])
        train = R.selection_choices(1, "train", fam, 0, rng)
        assert train[0] == 1 and len(set(train)) == 4 and set(train) <= set(fam["train"] + fam["heldout"])
    pos = R.answer_positions(10, rng)
    assert sorted(np.bincount(pos, minlength=4).tolist()) == [2, 2, 3, 3]
    with pytest.raises(ValueError, match="distractor"):
        R.selection_choices(10, "heldout", {"train": [], "heldout": [10, 11]}, 0, rng)


def test_finetune_eval_prints_the_baselines_beside_the_model(tmp_path, capsys):
    from normjax.testing.fake_openai import FakeOpenAI, Reply

    recs = [
        dict(task="compliant_action", allowed_actions=[3], oracle_action=3, prompt=[{"role": "user", "content": "a"}]),
        dict(task="compliant_action", allowed_actions=[1], oracle_action=1, prompt=[{"role": "user", "content": "b"}]),
    ]
    path = tmp_path / "compliant_action_access_heldout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    reply = '{"action": "move right", "belief": "b", "confidence": 0.5}'
    with FakeOpenAI(lambda p, a: Reply(reply)) as srv:
        args = ["finetune-eval", "--data", str(path), "--base-url", srv.base_url, "--model", "fake"]
        assert main(args + ["--max-retries", "0", "--no-cache"]) == 0
    text = capsys.readouterr().out
    rows = {line.split("|")[0].strip(): line.split("|")[1].strip() for line in text.splitlines() if "|" in line}
    assert rows["best constant"] == "50.0" and rows["model fake"] == "50.0"


def test_stratified_over_norms_and_classes():
    rng = np.random.default_rng(2)
    pool = {0: [("a", j) for j in range(30)] + [("b", j) for j in range(2)], 1: [("c", j) for j in range(3)]}
    plain = R.stratified(pool, 12, rng)
    assert len(plain) == 12 and sum(1 for it in plain if it in pool[1]) == 3  # norm 1 short: norm 0 takes 9
    picked = R.stratified(pool, 12, rng, within=lambda it: it[0])
    from0 = [it for it in picked if it in pool[0]]
    assert len(picked) == 12 and sum(it[0] == "b" for it in from0) == 2  # class b short: a takes the rest
    picked = R.stratified({0: [("a", j) for j in range(30)] + [("b", j) for j in range(30)]}, 10, rng, lambda it: it[0])
    assert sum(it[0] == "a" for it in picked) == 5


def test_episodes_flag(tmp_path, capsys):
    from normjax.cli import build_parser
    from normjax.finetune.dataset import build

    args = ["finetune-data", "--task", "norm_judgment", "--family", "access", "--split", "train", "--n", "4"]
    a = build_parser().parse_args(args + ["--out", "o", "--episodes", "176", "--balance-actions"])
    assert (a.episodes, a.balance_actions) == (176, True)
    with pytest.raises(ValueError, match="--episodes must be >= 1, got 0"):
        build("norm_judgment", "access", "train", 4, episodes=0)
    assert main(args + ["--out", str(tmp_path), "--episodes", "0", "--no-cache"]) == 2
    assert "--episodes must be >= 1" in capsys.readouterr().err


def test_schema_load_reads_frames_from_any_directory(tmp_path, monkeypatch):
    pytest.importorskip("datasets")
    from PIL import Image

    from normjax.finetune.schema import COLUMNS, load

    data = tmp_path / "data"
    (data / "images").mkdir(parents=True)
    Image.new("RGB", (4, 3), (200, 10, 10)).save(data / "images" / "a.png")
    rec = {k: None for k in COLUMNS}
    rec.update(task="norm_judgment", family="access", split="heldout", norm="n", norm_id=1, episode_seed=0, t=60)
    rec.update(images=["images/a.png"], violates=True, agent_uid=3)
    rec["prompt"] = [{"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "image"}]}]
    (data / "f.jsonl").write_text(json.dumps(rec) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    ds = load([data / "f.jsonl"], frames=True)
    img = ds[0]["images"][0]
    assert img.size == (4, 3) and img.getpixel((0, 0)) == (200, 10, 10)
