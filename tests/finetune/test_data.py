"""Fine-tuning records against the world: labels replayed, tie sets compliant, files
loadable, splits strict, builds deterministic (slow tier: the harvest program compiles
for about a minute on a 2-core VM)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from normjax import constants as C
from normjax.community.planner import action_costs, plan_actions
from normjax.env import blind_policy, env_step, oracle_policy
from normjax.finetune import dataset as D
from normjax.finetune import records as R
from normjax.finetune.harvest import harvest, verifier_key
from normjax.finetune.rewards import reward
from normjax.finetune.text import Episode
from normjax.interop.export import rollout
from normjax.layouts.tables import world_tables
from normjax.norms import NORMS, norm_id, permissible_per_action

pytestmark = pytest.mark.slow
STEPS = 120
BATCH = 4
NORM_IDS = [norm_id("forbidden_zone_q"), norm_id("bend_right_1")]  # the episodes replayed
SEEDS = [11, 12]


@pytest.fixture(scope="module")
def harvested():
    """BATCH episodes (the builds' program shape, compiled once), the first two replayed."""
    extra = BATCH - len(NORM_IDS)
    return harvest(
        NORM_IDS + [norm_id("edge_queue_left")] * extra, SEEDS + list(range(13, 13 + extra)), "oracle", steps=STEPS
    )


@pytest.fixture(scope="module")
def replayed():
    """The same episodes stepped again by the trajectory exporter (its own program)."""
    return [
        rollout(jax.random.PRNGKey(s), 0, n, "interaction", oracle_policy, steps=STEPS) for n, s in zip(NORM_IDS, SEEDS)
    ]


@jax.jit
def _independent(states, params, actions):
    """Per step: every norm's mask ([50, K, 5], another code path than the world's
    sanctions) read at the episode norm and the given actions [K]."""
    lt = world_tables().at(params.layout)

    def one(s, a):
        ag = s.agents
        m = permissible_per_action(lt, s.t, ag.pos, ag.active, ag.group, ag.moves, ag.visited_q)
        return jnp.take_along_axis(m[params.norm_id], a[:, None], 1)[:, 0]

    return jax.vmap(one)(states, actions)


def test_judgment_labels_equal_the_replayed_world(harvested, replayed):
    checked = positives = 0
    for e, (states, infos, params) in enumerate(replayed):
        ep = Episode(harvested, e)
        np.testing.assert_array_equal(ep.data["pos"], np.asarray(infos.pos))  # the same trajectory
        states_t = jax.tree.map(lambda x: x[:STEPS], states)
        permitted = np.asarray(_independent(states_t, params, infos.action))
        sanctioned = np.asarray(infos.sanctioned)
        for i, k, violates in R.judgment_candidates(ep):
            assert violates == bool(sanctioned[i, k]) == (not permitted[i, k])
            checked += 1
            positives += violates
    assert checked > 100 and positives > 0


def test_judgment_prompt_withholds_the_sanction(harvested):
    ep = Episode(harvested, 0)
    i, k, _ = next(c for c in R.judgment_candidates(ep) if c[2])
    rec = R.norm_judgment_record(ep, i, k, "train")
    user = rec["prompt"][1]["content"]
    step_line = f"- Step {int(ep.data['t'][i])}:"
    assert step_line not in user  # the judged step's outcome is not in the history
    assert "red cross" not in user.split("Proposed transition:")[1]
    assert NORMS[ep.norm_id].name not in json.dumps(rec["prompt"])
    assert NORMS[ep.norm_id].description not in json.dumps(rec["prompt"])


@jax.jit
def _newcomer_mask(states, params):
    """[T, 5]: the episode norm's mask of slot 0's five actions (`permissible_per_action`)."""
    lt = world_tables().at(params.layout)

    def one(s):
        ag = s.agents
        return permissible_per_action(lt, s.t, ag.pos, ag.active, ag.group, ag.moves, ag.visited_q)[params.norm_id, 0]

    return jax.vmap(one)(states)


@jax.jit
def _verdict_replay(state, params):
    key = verifier_key(state)
    k_plan, k_comm, k_world = jax.random.split(key, 3)
    aware = jnp.arange(state.agents.active.shape[0]) == 0
    cost = action_costs(k_plan, state, params, aware)[0][0]
    oracle = plan_actions(k_plan, state, params, aware)[0]

    def step(a):
        return env_step(k_comm, k_world, state, a, params)[2].sanctioned[0]

    return cost, oracle, jax.vmap(step)(jnp.arange(C.N_ACTIONS, dtype=jnp.int32))


def test_compliant_actions_are_compliant_and_as_fast(harvested, replayed):
    n = 0
    for e, (states, _infos, params) in enumerate(replayed):
        ep = Episode(harvested, e)
        states_t = jax.tree.map(lambda x: x[:STEPS], states)
        permitted = np.asarray(_newcomer_mask(states_t, params))  # [T, 5]
        for i in R.newcomer_candidates(ep)[::5]:
            state = jax.tree.map(lambda x: x[i], states)
            cost, oracle, sanctioned = (np.asarray(x) for x in _verdict_replay(state, params))
            tie = ep.data["tie"][i]
            assert tie[int(oracle)] and int(oracle) == int(ep.data["oracle_action"][i])
            assert np.all(cost[tie] == cost.min())  # equally fast: the oracle's minimum cost
            assert not sanctioned[tie].any() and permitted[i][tie].all()  # compliant, replayed and by the mask
            rec = R.compliant_action_record(ep, i, "train")
            for a in range(C.N_ACTIONS):
                why = rec["action_reasons"][a]
                assert (why == "compliant") <= bool(tie[a])  # a tie action that collides scores 0 (issue 52)
                if why == "violating":
                    assert sanctioned[a]
            n += 1
    assert n > 10


def test_excluded_states(harvested):
    ep = Episode(harvested, 1)
    for i in R.newcomer_candidates(ep):
        assert ep.data["active"][i, 0] and not ep.data["forced_wait"][i, 0] and not ep.data["was_pushed"][i, 0]
    assert all(ep.data["t"][i] >= 50 for i in R.newcomer_candidates(ep, 50))


def _oracle_reply(rec) -> str:
    if rec["task"] == "compliant_action":
        from normjax.runtime.turns import PROMPT_ACTIONS

        return json.dumps(
            {"reasoning": "", "action": PROMPT_ACTIONS[rec["allowed_actions"][0]], "belief": "b", "confidence": 0.5}
        )
    if rec["task"] == "norm_judgment":
        return json.dumps({"violates": rec["violates"]})
    return json.dumps({"answer": rec["answer"]})


@pytest.mark.parametrize("family", ["access", "procedure", "coordination", "allocation"])
def test_every_task_family_and_split(family):
    """The four tasks of one split read the same episodes (`build(shared=...)`, as `finetune-data`
    builds them), harvested once; on access, a build that reuses batches equals one that does not."""
    held_out = {n.name for n in NORMS if n.held_out}
    for split in D.SPLITS:
        shared = {}
        for task in ("compliant_action", "norm_selection", "norm_judgment", "action_judgment"):
            kw = dict(seed=3, batch=BATCH, steps=STEPS, max_episodes=16)
            recs, man = D.build(task, family, split, 8, shared=shared, **kw)
            if family == "access" and split == "train" and task == "norm_selection":  # reused compliant_action's
                alone, man_alone = D.build(task, family, split, 8, **kw)
                timing = ("wall_s", "records_per_s")
                assert json.dumps(alone) == json.dumps(recs)
                assert {k: v for k, v in man_alone.items() if k not in timing} == {
                    k: v for k, v in man.items() if k not in timing
                }
            assert len(recs) == 8, man
            assert {r["family"] for r in recs} == {family}
            names = {r["norm"] for r in recs}
            assert (names <= held_out) if split == "heldout" else not (names & held_out)
            for r in recs:
                assert reward(_oracle_reply(r), r) == pytest.approx(1.1)
                if r["task"] == "norm_selection":
                    held = {NORMS[i].description for i in D.split_norms(family, "heldout")}
                    assert split == "train" or set(r["choices"]) <= held  # no novel option (issue 52)
            if task == "action_judgment":
                assert man["counts"] == {"compliant_action": 4, "norm_judgment": 4}


def test_rloo_trains_on_a_mixed_task_file(tmp_path, monkeypatch):
    """TRL's RLOO trainer takes a mixed-task file (Compliant Action and Norm Judgment records,
    text-only, as `finetune-data --task action_judgment` writes it) unchanged: a few updates of
    a tiny random model (tests/support/tiny_lm.py; nothing downloaded) with normjax's
    `reward_funcs` as the reward (docs/finetune.md, "With TRL", call for call).  The records
    are those of `test_every_task_family_and_split[access]` (its compiled harvest)."""
    # skipped inside the test, not at collection: importing trl costs seconds in the default tier too
    pytest.importorskip("datasets", reason="needs the [finetune] extra")
    torch = pytest.importorskip("torch", reason="needs the [finetune-train] extra")
    pytest.importorskip("transformers", reason="needs the [finetune-train] extra")
    pytest.importorskip("trl", reason="needs the [finetune-train] extra")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    from tests.support.tiny_lm import tiny_model, tiny_tokenizer

    tok = tiny_tokenizer()
    model = tiny_model(tok)

    # docs/finetune.md's "With TRL" block, call for call
    from trl import RLOOConfig, RLOOTrainer

    from normjax.finetune.rewards import reward_funcs
    from normjax.finetune.schema import load

    records, manifest = D.build(
        "action_judgment", "access", "train", 8, seed=3, batch=BATCH, steps=STEPS, max_episodes=16
    )
    path, _ = D.write("data", records, manifest)  # what `finetune-data` writes
    train = load([path])  # the file as written, any mix of tasks
    args = RLOOConfig(output_dir="out", num_generations=4, per_device_train_batch_size=8, max_completion_length=2,
                      max_steps=3, learning_rate=0.05, beta=0.0, logging_steps=1, save_strategy="no",
                      report_to="none", use_cpu=True, seed=0, disable_tqdm=True)  # fmt: skip
    trainer = RLOOTrainer(model=model, reward_funcs=reward_funcs, args=args, train_dataset=train, processing_class=tok)

    from normjax.finetune import rewards

    graded = []  # (task, completion text, reward) of every call reward_funcs makes

    def spy(completion, record):
        value = real(completion, record)
        graded.append((record["task"], rewards.completion_text(completion), value))
        return value

    real = rewards.reward
    monkeypatch.setattr(rewards, "reward", spy)  # reward_funcs grades each completion through `reward`
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer.train()

    assert trainer.state.global_step == 3
    assert len(graded) == 3 * 8
    assert {t for t, _, _ in graded} == {"compliant_action", "norm_judgment"}  # both tasks of the file
    assert all(-0.1 <= r <= 1.1 for _, _, r in graded)  # the documented range (docs/finetune.md, Rewards)
    assert len({r for _, _, r in graded}) > 1
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert len(logged) == 3 and all(-0.1 <= h["reward"] <= 1.1 for h in logged)
    assert any(k.startswith("rewards/reward_funcs") for k in logged[0])
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed, "no parameter moved in three updates"


def test_deterministic_and_loadable_by_datasets(tmp_path):
    a, man = D.build("action_judgment", "access", "train", 10, seed=5, batch=BATCH, steps=STEPS, frames=True)
    b, _ = D.build("action_judgment", "access", "train", 10, seed=5, batch=BATCH, steps=STEPS, frames=True)
    assert json.dumps(a) == json.dumps(b) and a.pngs == b.pngs and len(a.pngs) == 10  # same bytes twice
    data, meta = D.write(tmp_path / "a", a, man)
    data_b, _ = D.write(tmp_path / "b", b, man)
    assert data.read_bytes() == data_b.read_bytes()
    assert all((tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes() for rel in a.pngs)
    assert json.loads(meta.read_text())["records"] == 10
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset("json", data_files=str(data), split="train")
    assert len(ds) == 10 and ds[0]["prompt"][0]["role"] == "system"
    assert sorted(set(ds["task"])) == ["compliant_action", "norm_judgment"]
    row = next(r for r in ds if r["task"] == "compliant_action")
    assert row["images"][0].startswith("images/compliant_action/")
    assert row["prompt"][1]["content"][-1]["type"] == "image"
    text, man = D.build("compliant_action", "access", "train", 3, seed=5, batch=BATCH, steps=STEPS)
    assert text.pngs == {} and all(r["images"] == [] and isinstance(r["prompt"][1]["content"], str) for r in text)


@jax.jit
def _render_one(state, params):
    from normjax.interop.render import render_frame

    return render_frame(state, params, 32, show_habits=False)


def test_frames_are_the_recorded_states(tmp_path):
    """Every image exists beside the file, decodes as a PNG of the runner's frame size, and equals the
    frame drawn independently from the state of the same episode stepped again by the exporter."""
    import io

    from PIL import Image

    from normjax.runtime.frames import annotated_png
    from normjax.runtime.turns import Other

    recs, man = D.build(
        "norm_selection", "access", "train", 6, seed=9, policy="oracle", batch=BATCH, steps=STEPS, frames=True
    )
    judged, man_j = D.build("norm_judgment", "access", "train", 6, seed=9, batch=BATCH, steps=STEPS, frames=True)
    data, _ = D.write(tmp_path, recs, man)
    data_j, _ = D.write(tmp_path, judged, man_j)
    lines = [json.loads(x) for x in data.read_text().splitlines() + data_j.read_text().splitlines()]
    assert len(lines) == 12 and len({r["images"][0] for r in lines}) == 12
    episodes = {}
    for r in lines:
        assert "The given image shows the environment" in r["prompt"][1]["content"][0]["text"]
        path = data.parent / r["images"][0]
        img = Image.open(io.BytesIO(path.read_bytes()))
        assert img.format == "PNG" and img.size == (C.W * 32 + 16, C.H * 32 + 16)
        key = r["episode_seed"], r["norm_id"], r["task"]
        if key not in episodes:
            policy = blind_policy if r["task"] == "norm_judgment" else oracle_policy  # D.JUDGMENT_POLICY
            episodes[key] = rollout(
                jax.random.PRNGKey(r["episode_seed"]), 0, r["norm_id"], "interaction", policy, steps=STEPS
            )
        states, infos, params = episodes[key]
        i = r["t"]  # the interaction phase's step index is its row
        state = jax.tree.map(lambda x: x[i], states)
        act, pos = (np.asarray(getattr(infos, f)[i]) for f in ("active", "pos"))
        others = [
            Other(
                tuple(int(v) for v in pos[k]),
                int(np.asarray(state.agents.group)[k]),
                bool(np.asarray(state.agents.sanctioned)[k]),
                int(np.asarray(infos.action)[i, k]),
            )
            for k in range(1, act.shape[0])
            if act[k]
        ]
        if r["task"] == "norm_judgment":  # one arrow: the judged agent's proposed move
            uid = np.asarray(infos.uid)[i]
            others = [
                Other(tuple(int(v) for v in pos[k]), 0, False, int(np.asarray(infos.action)[i, k]))
                for k in range(act.shape[0])
                if act[k] and uid[k] == r["agent_uid"]
            ]
            assert len(others) == 1 and others[0].intent != C.WAIT
        want = annotated_png(np.asarray(_render_one(state, params)), others, 32)
        assert np.array_equal(np.asarray(img), np.asarray(Image.open(io.BytesIO(want))))


def test_cli_writes_files_and_refuses_bad_values(tmp_path, capsys):
    from normjax.cli import main

    assert (
        main(
            [
                "finetune-data",
                "--task",
                "norm_selection",
                "--family",
                "access",
                "--split",
                "heldout",
                "--examples",
                "4",
                "--batch",
                str(BATCH),
                "--steps",
                str(STEPS),
                "--out",
                str(tmp_path),
                "--no-cache",
            ]
        )
        == 0
    )
    lines = (tmp_path / "norm_selection_access_heldout.jsonl").read_text().splitlines()
    assert len(lines) == 4
    assert (
        main(
            [
                "finetune-data",
                "--task",
                "norm_selection",
                "--family",
                "access",
                "--split",
                "heldout",
                "--examples",
                "0",
                "--out",
                str(tmp_path),
                "--no-cache",
            ]
        )
        == 2
    )
    assert "must be >= 1, got 0" in capsys.readouterr().err
