"""Each norm's unseen test layout, by norm name (docs/world.md §1.5; `NormSpec.unseen_layout`).

The assignment is an explicit table, not a rule on the norm's position: it was
``UNSEEN_LAYOUTS[i % 9]`` for norm id i, so inserting, removing or reordering a norm would
silently move every later norm to another unseen layout and change its unseen test episodes
(and every unseen score measured before).  `UNSEEN_LAYOUT` holds exactly the values that rule
gave for the 50 canonical norms (tests/norms/test_unseen_layouts.py checks it); a new norm
gets its own entry here, and no other norm's entry moves.

`assign(names)` gives the layouts of the registry's norms in its order, and raises ValueError
naming the norm when a norm has no entry or its entry is not one of `UNSEEN_LAYOUTS` (the nine
non-cafe layouts: the cafe is the seen layout), or naming the entries of no registered norm.
"""

from __future__ import annotations

from normjax.layouts import LAYOUTS

# The nine non-cafe layouts, in docs/world.md §1 order: the layouts a norm may be tested on unseen.
UNSEEN_LAYOUTS = tuple(name for name in LAYOUTS if name != "cafe")

# norm name -> unseen layout, in docs/world.md §7 id order (each layout five or six times).
UNSEEN_LAYOUT: dict[str, str] = {
    "forbidden_zone_q": "bank",
    "all_exit_left": "barbershop",
    "all_exit_bottom": "clothing_store",
    "all_exit_right": "grocery_store",
    "left_door_forbidden": "hospital",
    "bottom_door_forbidden": "library",
    "right_door_forbidden": "movie_theater",
    "bottom_left_seats_only": "pharmacy",
    "top_left_seats_only": "post_office",
    "bottom_right_seats_only": "bank",
    "no_bottom_left_seats": "barbershop",
    "no_bottom_right_seats": "clothing_store",
    "clockwise_circulation": "grocery_store",
    "counterclockwise_circulation": "hospital",
    "even_turns_only": "library",
    "odd_turns_only": "movie_theater",
    "no_turns_0_mod_3": "pharmacy",
    "no_turns_1_mod_3": "post_office",
    "no_turns_2_mod_3": "bank",
    "move1_wait1": "barbershop",
    "move2_wait1": "clothing_store",
    "move3_wait1": "grocery_store",
    "visit_zone_q_first": "hospital",
    "bend_right_1": "library",
    "bend_right_2": "movie_theater",
    "bend_left_1": "pharmacy",
    "bend_left_2": "post_office",
    "zigzag_right_1": "bank",
    "zigzag_right_2": "barbershop",
    "zigzag_left_1": "clothing_store",
    "zigzag_left_2": "grocery_store",
    "staircase_right": "hospital",
    "staircase_left": "library",
    "l_shape_right": "movie_theater",
    "l_shape_left": "pharmacy",
    "square_right": "post_office",
    "square_left": "bank",
    "edge_queue_left": "barbershop",
    "edge_queue_right": "clothing_store",
    "zone_r_capacity_1": "grocery_store",
    "zone_r_capacity_2": "hospital",
    "single_group_zone_r": "library",
    "group_doors_abc": "movie_theater",
    "group_doors_bca": "pharmacy",
    "group_doors_cab": "post_office",
    "group_seating_rot1": "bank",
    "group_seating_rot2": "barbershop",
    "group_seating_rot3": "clothing_store",
    "seats_in_order_l2r": "grocery_store",
    "seats_in_order_r2l": "hospital",
}


def assign(names, table: dict[str, str] = UNSEEN_LAYOUT) -> tuple[str, ...]:
    """The unseen layout of each norm of `names`, in that order (ValueError on a bad table)."""
    out = []
    for name in names:
        if name not in table:
            raise ValueError(
                f"norm {name!r} has no unseen layout: add it to normjax.norms.unseen_layouts.UNSEEN_LAYOUT"
            )
        layout = table[name]
        if layout not in UNSEEN_LAYOUTS:
            raise ValueError(
                f"norm {name!r}: unseen layout {layout!r} is not one of the non-cafe layouts {', '.join(UNSEEN_LAYOUTS)}"
            )
        out.append(layout)
    stale = sorted(set(table) - set(names))
    if stale:
        raise ValueError(f"unseen layouts of unregistered norms in UNSEEN_LAYOUT: {', '.join(stale)}")
    return tuple(out)
