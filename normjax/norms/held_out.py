"""The paper's held-out split (Table A4, as listed in docs/world.md §7): the norms, by name,
kept out of training (`NormSpec.held_out`; the finetune tasks' held-out records).

Its own module beside `normjax.norms.unseen_layouts`: both are per-norm-name assignments of
the evaluation protocol that the registry (`normjax.norms.registry`) reads when it builds
`NORMS`, and checks at import (every name here is a registered norm).
"""

HELD_OUT_NAMES = frozenset(
    {
        "all_exit_bottom",
        "right_door_forbidden",
        "bottom_right_seats_only",
        "no_bottom_right_seats",
        "counterclockwise_circulation",
        "even_turns_only",
        "no_turns_1_mod_3",
        "move2_wait1",
        "zigzag_left_2",
        "bend_right_2",
        "square_left",
        "staircase_right",
        "l_shape_left",
        "zone_r_capacity_2",
        "group_doors_cab",
        "group_seating_rot2",
        "seats_in_order_r2l",
    }
)
