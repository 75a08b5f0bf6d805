"""The paper's published numbers, in one place: Table 1 and the DQN family tables A6-A9.

`APPENDIX_DQN[(arch, reward_condition)][split][family] = (joint, task)` in
percent (Tables A6-A9; `train.report` prints it beside a run's final tests).
`APPENDIX_WAIT[(arch, reward_condition)] = (WAIT share, all-wait episodes)`, seen layouts.
`TABLE1[label][(split, family, metric)]` is Table 1: joint success per family
and overall, and overall task success, seen and unseen; its two DQN rows are
the sparse_penalty rows of `APPENDIX_DQN` (the same numbers in the paper).
"""

from __future__ import annotations

from normjax.cli_names import FAMILIES

APPENDIX_DQN = {
    ("mlp", "sparse_penalty"): {
        "seen": {
            "overall": (8.0, 10.7),
            "access": (33.3, 38.9),
            "procedure": (0.0, 0.0),
            "coordination": (0.0, 0.0),
            "allocation": (0.0, 6.1),
        },
        "unseen": {
            "overall": (2.0, 3.0),
            "access": (8.3, 9.7),
            "procedure": (0.0, 0.0),
            "coordination": (0.0, 0.0),
            "allocation": (0.0, 3.0),
        },
    },
    ("cnn", "sparse_penalty"): {
        "seen": {
            "overall": (12.7, 16.0),
            "access": (44.4, 55.6),
            "procedure": (0.0, 0.0),
            "coordination": (0.0, 0.0),
            "allocation": (9.1, 12.1),
        },
        "unseen": {
            "overall": (2.0, 11.3),
            "access": (8.3, 26.4),
            "procedure": (0.0, 0.0),
            "coordination": (0.0, 1.0),
            "allocation": (0.0, 21.2),
        },
    },
    ("mlp", "no_penalty"): {"seen": {"overall": (6.7, 100.0)}, "unseen": {"overall": (2.0, 23.7)}},
    ("cnn", "no_penalty"): {"seen": {"overall": (8.7, 98.3)}, "unseen": {"overall": (4.0, 34.3)}},
    ("mlp", "dense"): {"seen": {"overall": (8.7, 39.0)}, "unseen": {"overall": (1.3, 19.0)}},
    ("cnn", "dense"): {"seen": {"overall": (7.3, 54.7)}, "unseen": {"overall": (2.0, 17.0)}},
}

# The paper's "Waiting and low Task success" paragraph (Appendix, penalty ablation): under
# sparse_penalty on seen-layout tests, the episode-averaged share of steps on which the policy
# chose WAIT and the share of episodes that contain only waits, in percent.
APPENDIX_WAIT = {("mlp", "sparse_penalty"): (55.4, 19.3), ("cnn", "sparse_penalty"): (55.2, 20.0)}

# Table 1 as printed: joint per family (access, procedure, coordination, allocation), joint
# overall, task overall; each (seen, unseen).
_PRINTED = {
    "Claude Opus 5": ((69.4, 69.4), (48.5, 54.5), (66.7, 54.2), (30.3, 24.2), (55.3, 51.3), (95.7, 96.7)),
    "GPT-5.6 Sol": ((69.4, 44.4), (45.5, 57.6), (20.8, 29.2), (48.5, 36.4), (44.0, 40.7), (86.3, 83.0)),
    "Gemini 3.1 Pro": ((36.1, 36.1), (0.0, 0.0), (37.5, 14.6), (15.2, 15.2), (24.0, 16.7), (90.3, 87.7)),
    "GLM-4.6V-Flash": ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (11.7, 15.7)),
    "Qwen3-VL-8B": ((5.6, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 3.0), (1.3, 0.6), (38.3, 34.0)),
    "Llama-3.2-11B": ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0), (3.0, 3.0)),
    "Ministral-3-8B": ((8.3, 8.3), (0.0, 0.0), (0.0, 2.1), (6.1, 6.1), (3.3, 4.0), (49.7, 50.0)),
    "Human (25 norms, best per norm)": (
        (100.0, 100.0),
        (100.0, 80.0),
        (88.0, 100.0),
        (67.0, 67.0),
        (88.0, 88.0),
        (100.0, 100.0),
    ),
    "Known-Norm LLM": ((100.0, 100.0), (84.8, 84.8), (91.7, 83.4), (84.8, 87.8), (90.7, 88.7), (99.7, 97.0)),
    "Norm Oracle": ((100.0, 100.0),) * 6,
    "Norm-Blind Planner": ((0.0, 0.0),) * 5 + ((100.0, 100.0),),
}
_COLUMNS = tuple((fam, "joint") for fam in FAMILIES) + (("overall", "joint"), ("overall", "task"))


def _table1() -> dict:
    out = {}
    for label, cells in _PRINTED.items():
        out[f"{label} (paper)"] = {
            (split, fam, metric): v[i]
            for (fam, metric), v in zip(_COLUMNS, cells)
            for i, split in enumerate(("seen", "unseen"))
        }
    for arch in ("mlp", "cnn"):
        rows = APPENDIX_DQN[(arch, "sparse_penalty")]
        cells = {}
        for split, fams in rows.items():
            for fam, (joint, task) in fams.items():
                cells[(split, fam, "joint")] = joint
                if fam == "overall":
                    cells[(split, fam, "task")] = task
        out[f"RL (DQN-{arch.upper()}) (paper)"] = cells
    return out


TABLE1 = _table1()

__all__ = ["APPENDIX_DQN", "APPENDIX_WAIT", "TABLE1"]
