"""`normjax.finetune` refuses bad arguments before anything is traced, naming the allowed values."""

from __future__ import annotations

import pytest

from normjax.finetune.dataset import build, split_norms
from normjax.finetune.harvest import harvest
from normjax.norms import FAMILIES, NORMS


@pytest.mark.parametrize("kwargs,match", [
    (dict(task="judge"), r"unknown task 'judge'; valid: compliant_action"),
    (dict(family="cafe"), r"unknown family 'cafe'; valid: access"),
    (dict(split="heldout"), r"unknown split 'heldout'; valid: train, test"),
    (dict(n=0), r"n must be >= 1, got 0"),
    (dict(policy="random"), r"unknown harvest policy 'random'; valid: oracle, blind, mixture"),
])
def test_build_refuses(kwargs, match):
    args = dict(task="norm_judgment", family="access", split="train", n=4) | kwargs
    with pytest.raises(ValueError, match=match):
        build(**args)


def test_harvest_refuses_bad_norms_and_shapes():
    with pytest.raises(ValueError, match=r"0\.\.49, got \[50\]"):
        harvest([50], [0])
    with pytest.raises(ValueError, match="equal-length"):
        harvest([0, 1], [0])


def test_splits_are_table_a4():
    """33 training and 17 held-out norms: 11/5 coordination, 8/4 access, 7/4 procedure, 7/4 allocation."""
    train = {f: split_norms(f, "train") for f in FAMILIES}
    test = {f: split_norms(f, "test") for f in FAMILIES}
    sizes = {f: (len(train[f]), len(test[f])) for f in FAMILIES}
    assert sizes == dict(coordination=(11, 5), access=(8, 4), procedure=(7, 4), allocation=(7, 4))
    for f in FAMILIES:
        assert not set(train[f]) & set(test[f])
        assert all(NORMS[i].held_out and NORMS[i].family == f for i in test[f])
