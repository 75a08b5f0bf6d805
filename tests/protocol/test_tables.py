"""`normjax report --markdown`: final tests pooled over chunk directories, by family."""

import json

from normjax.cli import main
from normjax.train.tables import pooled_tables


def _chunk(path, norm, family, joints, tasks, wait):
    eps = [
        dict(norm=norm, family=family, condition=split, joint=j, task=t)
        for split in ("seen", "unseen")
        for j, t in zip(joints, tasks)
    ]
    overall = {"episodes": len(joints), "wait_share": wait}
    path.mkdir()
    (path / "results.json").write_text(
        json.dumps(
            {
                "results": {"mlp": {"no_penalty": {"seen": {"overall": overall}, "unseen": {"overall": overall}}}},
                "episodes": {"mlp": {"no_penalty": eps}},
            }
        )
    )
    return path


def test_pooled_tables_hand_computed(tmp_path, capsys):
    a = _chunk(tmp_path / "part0", "forbidden_zone_q", "access", [True, False, False], [1.0, 0.5, 0.0], 10.0)
    b = _chunk(tmp_path / "part1", "clockwise_circulation", "procedure", [True, True, True], [1.0, 1.0, 1.0], 40.0)
    text = pooled_tables([a, b, tmp_path / "missing"])
    lines = text.splitlines()
    assert lines[0].startswith("| DQN-MLP, no_penalty |")
    assert "| access (1 norms) | 33.3 | 50.0 | 33.3 | 50.0 | - | - |" in lines
    assert "| procedure (1 norms) | 100.0 | 100.0 | 100.0 | 100.0 | - | - |" in lines
    # overall: 4 of 6 joint, task (1.5 + 3) / 6; the paper reports only this row for no_penalty
    assert "| overall (2 norms) | 66.7 | 75.0 | 66.7 | 75.0 | 6.7 / 100.0 | 2.0 / 23.7 |" in lines
    assert "Newcomer steps spent waiting: 25.0% seen, 25.0% unseen." in lines
    assert main(["report", str(a), str(b), "--markdown"]) == 0
    assert capsys.readouterr().out.strip() == text
