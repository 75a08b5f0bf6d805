"""The explicit per-norm unseen layout table (normjax.norms.unseen_layouts, issue 55): the values
the former positional rule gave, and the errors of a bad table."""

from __future__ import annotations

from collections import Counter

import pytest

from normjax.layouts import LAYOUTS
from normjax.norms import NORM_NAMES, NORMS, UNSEEN_LAYOUTS
from normjax.norms.unseen_layouts import UNSEEN_LAYOUT, assign


def _old_rule() -> dict[str, str]:
    """The former assignment: norm id i -> UNSEEN_LAYOUTS[i % 9], in the registry's order."""
    return {name: UNSEEN_LAYOUTS[i % len(UNSEEN_LAYOUTS)] for i, name in enumerate(NORM_NAMES)}


def test_table_is_the_former_rule_for_the_canonical_norms():
    assert len(NORM_NAMES) == 50 and UNSEEN_LAYOUTS == tuple(n for n in LAYOUTS if n != "cafe")
    old = _old_rule()
    assert UNSEEN_LAYOUT == old
    assert list(UNSEEN_LAYOUT) == list(NORM_NAMES)  # written in id order
    assert all(n.unseen_layout == old[n.name] for n in NORMS)


def test_every_entry_is_a_non_cafe_layout_as_often_as_before():
    assert set(UNSEEN_LAYOUT.values()) == set(LAYOUTS) - {"cafe"}
    assert Counter(UNSEEN_LAYOUT.values()) == Counter(_old_rule().values())
    assert sorted(Counter(UNSEEN_LAYOUT.values()).values()) == [5] * 4 + [6] * 5


def test_a_bad_table_names_the_norm():
    assert assign(NORM_NAMES) == tuple(n.unseen_layout for n in NORMS)
    missing = {k: v for k, v in UNSEEN_LAYOUT.items() if k != "bend_left_2"}
    with pytest.raises(ValueError, match="norm 'bend_left_2' has no unseen layout"):
        assign(NORM_NAMES, missing)
    for bad in ("cafe", "moon_base"):
        with pytest.raises(ValueError, match=f"norm 'square_left': unseen layout '{bad}' is not one of"):
            assign(NORM_NAMES, dict(UNSEEN_LAYOUT, square_left=bad))
    with pytest.raises(ValueError, match="unregistered norms in UNSEEN_LAYOUT: no_such_norm"):
        assign(NORM_NAMES, dict(UNSEEN_LAYOUT, no_such_norm="bank"))
