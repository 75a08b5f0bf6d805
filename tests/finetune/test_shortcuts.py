"""Fine-tuning files that measure norm inference, not shortcuts (issue 52).

One module-scoped build of small held-out files per family (one harvest program, compiled
once: about a minute cold on a 2-core VM, seconds with the tests' compilation cache):

* Norm Selection: the "novel option" rule (the option that is not a training norm) and every
  constant letter score at chance, within a stated binomial bound;
* Norm Judgment: every shortcut and constant scores at most 0.55 balanced accuracy, and every
  norm's records are half violations;
* Compliant Action: no scoring action collides or is pushed when stepped;
* every record's label re-judged from its structured ``state`` alone by the tests'
  independent norm reference (tests/norm_cases.py), 0 disagreements.
"""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax.env import env_step
from normjax.finetune import dataset as D
from normjax.finetune.baselines import baselines, novel_option, table
from normjax.finetune.harvest import verifier_key
from normjax.finetune.records import SELECTION_OPTIONS
from normjax.finetune.text import Episode
from normjax.layouts.tables import world_tables
from normjax.norms import NORMS, norm_id
from tests.support import norm_cases as NC

FAMILIES = ("access", "procedure", "coordination", "allocation")
STEPS = 120  # judgment and selection states start at step 50
N_SELECT = 160
N_JUDGE = 160
N_ACTION = 60
JUDGMENT_LIMIT = 0.55


@pytest.fixture(scope="module")
def files():
    """{(task, family): (records, manifest)}, held-out split, every file from blind-newcomer
    episodes (the judgment policy), so one program serves them all, and the three tasks of a
    family read the same episodes, harvested once (`build(shared=...)`, as `finetune-data` does)."""
    out = {}
    for fam in FAMILIES:
        shared = {}
        for task, n in (("norm_selection", N_SELECT), ("norm_judgment", N_JUDGE), ("compliant_action", N_ACTION)):
            out[task, fam] = D.build(task, fam, "heldout", n, seed=3, policy="blind", steps=STEPS, shared=shared)
    return out


def _binomial_bound(n: int, p: float) -> float:
    """Three standard deviations of a binomial share: a fixed rule at chance stays within it
    with probability > 0.997."""
    return 3 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("family", FAMILIES)
def test_heldout_selection_has_no_novel_answer(files, family):
    records, manifest = files["norm_selection", family]
    assert len(records) == N_SELECT and manifest["selection_options"] == SELECTION_OPTIONS
    chance = 1 / SELECTION_OPTIONS
    bound = _binomial_bound(len(records), chance)
    scores = baselines(records)["norm_selection"]
    for name in [f"constant {a}" for a in "ABCD"] + ["novel option", "majority letter"]:
        assert abs(scores[name] - chance) <= bound, (family, name, scores[name])
        assert scores[name] <= chance + 0.05, (family, name, scores[name])
    train = {n.description for n in NORMS if n.family == family and not n.held_out}
    heldout = {n.description for n in NORMS if n.family == family and n.held_out}
    for r in records:
        assert len(r["choices"]) == SELECTION_OPTIONS and set(r["choices"]) <= heldout
        assert not set(r["choices"]) & train  # every option held out: novelty tells nothing
        assert r["choices"]["ABCD".index(r["answer"])] == NORMS[r["norm_id"]].description


def test_the_old_scheme_leaked(files):
    """Control: on choices listing the training norms plus the true one, the rule finds it."""
    records, _ = files["norm_selection", "access"]
    train = [n.description for n in NORMS if n.family == "access" and not n.held_out]
    leaky = [dict(r, choices=train + [NORMS[r["norm_id"]].description], answer="I") for r in records]
    assert all(novel_option(r) == r["answer"] for r in leaky)


@pytest.mark.parametrize("family", FAMILIES)
def test_judgment_shortcuts_score_at_most_055(files, family):
    records, manifest = files["norm_judgment", family]
    assert len(records) == N_JUDGE
    scores = baselines(records)["norm_judgment"]
    rules = {"any earlier red cross", "last move crossed", "newcomer violates", "entering a door violates"}
    assert rules | {"entering a chair violates", "entering a zone r violates"} <= set(scores)
    for name, value in scores.items():
        assert value <= JUDGMENT_LIMIT, (family, name, value, table({family: {"norm_judgment": scores}}))
    per_norm = manifest["judgment_per_norm"]
    for name, stats in per_norm.items():
        if stats["records"]:
            assert stats["violation_share"] == 0.5 and stats["cues_violations"] == stats["cues_compliant"], name
    counts = [s["records"] for s in per_norm.values()]
    assert min(counts) > 0 and max(counts) - min(counts) <= 2, counts  # stratified evenly over the norms


def test_crossed_agents_are_in_both_classes(files):
    """The balance is not bought by dropping every crossed agent: crossed violators and crossed
    compliant movers both appear, in equal numbers."""
    crossed = {True: 0, False: 0}
    for fam in FAMILIES:
        for r in files["norm_judgment", fam][0]:
            if r["state"]["subject"]["cross"] != "none":
                crossed[r["violates"]] += 1
    assert crossed[True] == crossed[False] > 0


@jax.jit
def _stepped(state, params, joint, action):
    """Slot 0 takes `action`, the others their recorded effective actions, from `state`."""
    k_plan, k_comm, k_world = jax.random.split(verifier_key(state), 3)
    everyone = jnp.ones(joint.shape, bool)
    _, _, info = env_step(k_comm, k_world, state, joint.at[0].set(action), params, controlled=everyone)
    return info.collided[0] | info.displaced[0], info.sanctioned[0]


def test_no_scoring_action_collides(files):
    """Every scoring action, stepped again from the record's state with the others doing what
    the prompt shows, neither collides, nor is pushed, nor is sanctioned."""
    from normjax.observer.interaction import interaction_params

    checked = colliding_ties = 0
    for fam in FAMILIES:
        records, manifest = files["compliant_action", fam]
        assert "no_scoring_action" in manifest["dropped"]
        # the file's first batch of episodes, harvested again (the same program shape)
        seeds = manifest["episodes"]["blind"]["seeds"][:16]
        norms = [norm_id(m) for m in manifest["norms"]]
        h = D.harvest([norms[j % len(norms)] for j in range(len(seeds))], seeds, "blind", STEPS)
        episodes = {int(s): Episode(h, e) for e, s in enumerate(seeds)}
        for ep in episodes.values():  # the pattern: equally fast compliant actions that collide
            tie_hits = ep.data["tie"] & (ep.data["reason"] == 2)
            colliding_ties += int(tie_hits.sum())
            assert not ((ep.data["reason"] == 0) & ~ep.data["tie"]).any()  # scoring implies the tie set
        for r in [r for r in records if r["episode_seed"] in episodes][:15]:
            assert r["allowed_actions"], r["t"]
            assert set(r["allowed_actions"]) == {a for a, why in enumerate(r["action_reasons"]) if why == "compliant"}
            ep = episodes[r["episode_seed"]]
            i = int(np.flatnonzero(ep.data["t"] == r["t"])[0])
            joint = jnp.asarray(ep.data["action"][i])
            for a in r["allowed_actions"]:
                hit, sanc = _stepped(ep.state(i), interaction_params(r["norm_id"]), joint, a)
                assert not bool(hit) and not bool(sanc), (fam, r["t"], a)
                checked += 1
    assert checked > 40 and colliding_ties > 0  # the rule had cases to act on


def _reference_verdict(state: dict, norm: int, slot: int, action: int) -> bool:
    """True if the independent reference (tests/norm_cases.py) permits `action` of the agent in
    `slot`, read from a record's structured state alone."""
    lay = _cafe()
    agents = state["agents"]
    pos = np.asarray([a["pos"] for a in agents], np.int32)
    j = next(n for n, a in enumerate(agents) if a["slot"] == slot)
    acts = [a["action"] for a in agents]
    acts[j] = NC.effective_action_np(lay, pos[j], action)
    mask = NC.reference_mask(
        lay,
        state["t"],
        pos,
        np.ones(len(agents), bool),
        np.asarray(acts, np.int32),
        np.asarray([a["group"] for a in agents], np.int32),
        np.asarray([a["moves"] for a in agents], bool),
        np.asarray([a["visited_q"] for a in agents], bool),
    )
    return bool(mask[norm, j])


_CAFE = []


def _cafe():
    if not _CAFE:
        from normjax.layouts import LAYOUTS

        _CAFE.append(NC.numpy_view(world_tables().at(LAYOUTS.index("cafe"))))
    return _CAFE[0]


def test_labels_rejudged_from_the_structured_state(files):
    """Judgment labels and every scoring action, re-judged by the reference from ``state``:
    0 disagreements (no prompt text read)."""
    judged = actions = 0
    for fam in FAMILIES:
        for r in files["norm_judgment", fam][0]:
            st = r["state"]
            subject = st["subject"]
            assert subject["uid"] == r["agent_uid"]
            assert _reference_verdict(st, r["norm_id"], subject["slot"], subject["action"]) == (not r["violates"])
            judged += 1
        for r in files["compliant_action", fam][0]:
            for a in r["allowed_actions"]:
                assert _reference_verdict(r["state"], r["norm_id"], 0, a), (r["norm"], r["t"], a)
                actions += 1
    assert judged == len(FAMILIES) * N_JUDGE and actions > len(FAMILIES) * N_ACTION


def test_records_carry_their_state(files):
    rec = files["norm_judgment", "access"][0][0]
    st = rec["state"]
    assert st["t"] == rec["t"] and st["layout"] == "cafe"
    assert {"slot", "uid", "pos", "group", "newcomer", "red_cross", "goal_kind", "moves", "visited_q"} <= set(
        st["agents"][0]
    )
    assert [h["t"] for h in st["history"]][-10:] == list(range(rec["t"] - 10, rec["t"]))
    assert json.loads(json.dumps(rec)) == rec  # plain JSON


def test_any_mix_of_task_files_loads_with_one_schema(files, tmp_path):
    datasets = pytest.importorskip("datasets")
    from normjax.finetune.schema import COLUMNS, features

    paths = []
    for task in ("compliant_action", "norm_judgment", "norm_selection"):
        records, manifest = files[task, "access"]
        assert all(set(r) == set(COLUMNS) | {"prompt"} for r in records)
        paths.append(str(D.write(tmp_path, records, manifest)[0]))
    ds = datasets.load_dataset("json", data_files=paths, features=features(), split="train")
    assert len(ds) == N_ACTION + N_JUDGE + N_SELECT
    assert sorted(set(ds["task"])) == ["compliant_action", "norm_judgment", "norm_selection"]
    row = next(r for r in ds if r["task"] == "norm_judgment")
    assert isinstance(row["violates"], bool) and row["allowed_actions"] is None and row["state"]["subject"]["uid"]


def test_balance_actions_spreads_the_oracle_action(files):
    from collections import Counter

    plain = files["compliant_action", "access"][0]
    spread, manifest = D.build(
        "compliant_action", "access", "heldout", N_ACTION, seed=3, policy="blind", steps=STEPS, balance_actions=True
    )
    assert manifest["balance_actions"] and len(spread) == N_ACTION
    before = Counter(r["oracle_action"] for r in plain)
    after = Counter(r["oracle_action"] for r in spread)
    assert max(after.values()) < max(before.values()) and len(after) >= len(before)
    best = baselines(spread)["compliant_action"]["best constant"]
    assert best <= baselines(plain)["compliant_action"]["best constant"], best


def test_one_call_writes_the_files_of_separate_calls(tmp_path, monkeypatch):
    """`finetune-data --task A B --split all` in one call: each file byte-identical to the file
    built alone with the same arguments, the episodes both tasks read harvested once (here both
    read the norm-blind episodes), and the harvest program traced once for all files."""
    from normjax.cli import main
    from normjax.finetune import harvest as H

    calls = []
    real = D.harvest
    monkeypatch.setattr(D, "harvest", lambda *a, **k: calls.append((*a[0], *a[1], a[2])) or real(*a, **k))
    n, tasks = 16, ("norm_judgment", "norm_selection")
    args = ["--family", "access", "--split", "all", "--examples", str(n), "--steps", str(STEPS), "--seed", "3"]
    args += ["--policy", "blind", "--text-only", "--no-progress", "--out", str(tmp_path / "one")]
    assert main(["finetune-data", "--task", *tasks, *args]) == 0
    together = len(calls)
    written = sorted(p.name for p in (tmp_path / "one").iterdir())
    stems = [f"{t}_access_{s}" for t in tasks for s in ("train", "heldout")]
    assert written == sorted([f"{s}.jsonl" for s in stems] + [f"{s}.manifest.json" for s in stems])
    calls.clear()
    for task in tasks:
        for split in ("train", "heldout"):
            records, manifest = D.build(task, "access", split, n, seed=3, policy="blind", steps=STEPS)
            data, meta = D.write(tmp_path / "alone", records, manifest)
            assert (tmp_path / "one" / data.name).read_bytes() == data.read_bytes(), data.name
            one = json.loads((tmp_path / "one" / meta.name).read_text())
            alone = json.loads(meta.read_text())
            drop = ("wall_s", "records_per_s")
            assert {k: v for k, v in one.items() if k not in drop} == {k: v for k, v in alone.items() if k not in drop}
    # each batch (its seeds) harvested once in the one call: norm_selection took norm_judgment's
    assert together == len(set(calls)) < len(calls)
    assert H._program("blind", STEPS, 10)._cache_size() == 1  # one trace and compile for all files


def test_manifest_counts_the_prompts_that_show_the_newcomers_own_violation(files):
    """`newcomer_own_violation` (from the episode's memory) equals the count of prompts whose memory
    lists a step of the newcomer's own with a violation mark (read from the text here); the norm-blind
    newcomer of these files shows some, judgment files report none."""
    mark = "I had a violation mark this step."
    for fam in FAMILIES:
        for task in ("compliant_action", "norm_selection"):
            records, manifest = files[task, fam]
            shown = sum(mark in r["prompt"][1]["content"] for r in records)
            own = manifest["newcomer_own_violation"]
            assert own == dict(records=len(records), shown=shown, share=round(shown / len(records), 4)), (task, fam)
            assert 0 < shown
        assert files["norm_judgment", fam][1]["newcomer_own_violation"] is None


def test_default_harvest_policy_is_the_epsilon_blind_oracle_everywhere():
    from normjax.cli import build_parser
    from normjax.finetune.harvest import EPSILON_BLIND, HARVEST_POLICIES

    assert D.DEFAULT_POLICY == "epsilon_blind" and D.DEFAULT_POLICY in HARVEST_POLICIES and 0 < EPSILON_BLIND < 0.5
    args = ["finetune-data", "--task", "all", "--family", "all", "--split", "all", "--n", "2", "--out", "o"]
    assert build_parser().parse_args(args).policy == D.DEFAULT_POLICY
