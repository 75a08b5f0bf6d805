"""Many episodes in one `normjax export` call (normjax.interop.export_many).

One multi-episode export (2 norms x interaction / seen / unseen x protocol
episodes 0 and 1, random newcomer, 40 steps, batches of at most 3 so the test
episodes run in three calls, the last one padded) is shared by the tests; its
files must be byte-identical to single-episode exports of the same episodes.  The
oracle's 150-episode export is checked the same way by
benchmarks/export_throughput.py.
"""

from __future__ import annotations

import filecmp
import json

import numpy as np
import pytest

from normjax.cli import main
from normjax.interop.export_many import _episode, episode_name, plan_many

NORMS = ["bend_right_1", "forbidden_zone_q"]
STEPS = "40"  # the length of tests/interop/test_export.py: the single-episode scan program is shared


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    out = tmp_path_factory.mktemp("many")
    assert (
        main(
            [
                "export",
                "--norms",
                *NORMS,
                "--phases",
                "interaction",
                "seen",
                "unseen",
                "--episodes",
                "0",
                "1",
                "--policies",
                "random",
                "--steps",
                STEPS,
                "--max-batch",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


@pytest.mark.slow  # a multi-episode export compared file by file; the slow tier (CI runs both)
def test_files_and_manifest(many):
    names = sorted(p.name for p in many.glob("*.jsonl"))
    expected = sorted(
        f"{n}.{ph}.ep{e}.random.seed0.jsonl"
        for n in NORMS
        for ph, eps in (("interaction", [0]), ("seen", [0, 1]), ("unseen", [0, 1]))
        for e in eps
    )
    assert names == expected  # interaction: one protocol episode per norm
    manifest = json.loads((many / "manifest.json").read_text())
    assert manifest["timing"]["programs"] == 2 and manifest["timing"]["episodes"] == 10
    assert sorted(e["out"].rsplit("/", 1)[1] for e in manifest["episodes"]) == expected
    assert all(e["steps"] <= int(STEPS) for e in manifest["episodes"])


@pytest.mark.slow  # a multi-episode export compared file by file; the slow tier (CI runs both)
@pytest.mark.parametrize(
    "norm,phase,episode",
    [("bend_right_1", "interaction", 0), ("forbidden_zone_q", "seen", 1), ("bend_right_1", "unseen", 0)],
)
def test_byte_identical_to_single_export(many, tmp_path, norm, phase, episode):
    single = tmp_path / "one.jsonl"
    assert (
        main(
            [
                "export",
                "--norm",
                norm,
                "--phase",
                phase,
                "--episode",
                str(episode),
                "--policy",
                "random",
                "--steps",
                STEPS,
                "--out",
                str(single),
            ]
        )
        == 0
    )
    assert filecmp.cmp(single, many / f"{norm}.{phase}.ep{episode}.random.seed0.jsonl", shallow=False)


def test_plans_and_names():
    plans = plan_many(["all"], ["interaction", "seen"], [0, 7], ["oracle", "blind"])
    assert len(plans) == 50 * 2 * 2 * 2 and len({p["name"] for p in plans}) == len(plans)
    p = plans[0]
    assert p["name"] == "forbidden_zone_q.interaction.oracle.seed0" and p["key_seed"] == 0
    seen = [p for p in plans if p["phase"] == "seen" and p["key_seed"] == 7][0]
    assert seen["group"] == 7 % 3 and episode_name(seen).endswith(".seen.oracle.seed7")
    proto = plan_many(["clockwise_circulation"], ["interaction", "unseen"], [0], ["blind"], episodes=[2, 1])
    assert [q["name"] for q in proto] == [
        "clockwise_circulation.interaction.ep0.blind.seed0",
        "clockwise_circulation.unseen.ep2.blind.seed0",
        "clockwise_circulation.unseen.ep1.blind.seed0",
    ]
    assert proto[1]["info"]["protocol_seed"] == 0 and proto[1]["layout"] != "cafe"
    assert plan_many(["none"], ["interaction"], [3], ["random"])[0]["name"] == "none.interaction.random.seed3"


def test_bad_values_are_errors_before_tracing(tmp_path, capsys):
    with pytest.raises(ValueError, match="forbidden_zone_q"):
        plan_many(["no_such_norm"], ["seen"], [0], ["oracle"])
    with pytest.raises(ValueError, match="needs a norm"):
        plan_many(["none"], ["seen"], [0], ["oracle"], episodes=[0])
    assert main(["export", "--norm", "bend_right_1", "--norms", "all", "--out", str(tmp_path)]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["export", "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "--norm" in capsys.readouterr().err
    assert main(["export", "--norms", "all", "--max-batch", "0", "--out", str(tmp_path / "d")]) == 2
    assert "max_batch" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_test_phase_recording_cut_after_exit():
    """The host-side cut keeps steps up to the newcomer's exit (as `export.rollout`)."""
    from collections import namedtuple

    S, Info, P = namedtuple("S", "t"), namedtuple("Info", "exited"), namedtuple("P", "layout_id")  # pytrees
    exited = np.zeros((2, 6, 3), bool)
    exited[0, 3, 0] = True  # episode 0: the newcomer exits in step 3
    batch = (S(np.arange(14).reshape(2, 7)), Info(exited), P(np.array([0, 1])))
    states, infos, params = _episode(batch, 0, True, 6)
    assert states.t.tolist() == [0, 1, 2, 3, 4] and infos.exited.shape == (4, 3) and int(params.layout_id) == 0
    states, infos, _ = _episode(batch, 1, True, 6)
    assert states.t.shape == (7,) and infos.exited.shape == (6, 3)
    states, infos, _ = _episode(batch, 0, False, 6)  # not a test phase: no cut
    assert states.t.shape == (7,)
