"""normjax.salts: no two random streams share a salt or a key tag."""

from normjax import salts
from normjax.community import planner
from normjax.world.habits import HABIT_SALT
from normjax.wrappers.core import RESET_SALT


def test_salts_and_key_tags_are_distinct_and_used():
    assert len(set(salts.HASH_SALTS.values())) == len(salts.HASH_SALTS)
    assert len(set(salts.KEY_TAGS.values())) == len(salts.KEY_TAGS)
    # The modules read the registry (their public names are its values).
    assert HABIT_SALT == salts.HABIT and RESET_SALT == salts.AUTO_RESET
    assert planner.salts is salts
