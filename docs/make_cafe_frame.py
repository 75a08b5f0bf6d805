"""Render the cafe layout with a few hand-placed agents -> docs/cafe_frame.png.

Run from the repository root: `python docs/make_cafe_frame.py`.  The state is built
by hand (no world step), so every visual element of `normjax.interop.render` appears once:
the newcomer's star, the three group colours, a public sanction (red X), the
service-timer digit, a collision badge "!", the goal-1 check mark, an agent on a
chair, and an inactive slot that is not drawn.
"""

from __future__ import annotations

from pathlib import Path

import jax.numpy as jnp

from normjax.interop.render import render_frame_jit, save_png
from normjax.layouts.tables import layout_id
from normjax.world.state import empty_state, make_params

DOCS = Path(__file__).resolve().parent

ORANGE, GREEN, BLUE = 0, 1, 2

# slot: (row, col), group, dict of extra fields.  Cells are free cells of maps/cafe.txt.
AGENTS = {
    0: ((6, 3), ORANGE, {}),  # the newcomer (slot 0): gold star
    1: ((1, 7), GREEN, {"timer": 2}),  # on the service cell below the counter, timer 2
    2: ((6, 7), BLUE, {"sanctioned": True}),  # stepped into zone Q: sanctioned
    3: ((2, 11), ORANGE, {"leg": 1}),  # goal 1 done (check mark), in zone R
    4: ((4, 9), GREEN, {"collided": True}),  # collided with slot 5
    5: ((4, 10), BLUE, {"collided": True}),
    6: ((4, 3), BLUE, {"timer": 1}),  # seated on a chair, service timer 1
    7: ((9, 6), GREEN, {"leg": 1}),  # heading for door B
    8: ((8, 12), ORANGE, {}),  # plain background agent
}
INACTIVE = {9: (5, 10)}  # an inactive slot: not drawn


def cafe_state():
    state = empty_state(10)
    ag = state.agents
    pos = ag.pos
    fields = {name: getattr(ag, name) for name in ("timer", "leg", "sanctioned", "collided")}
    active, group = ag.active, ag.group
    for slot, ((r, c), g, extra) in AGENTS.items():
        pos = pos.at[slot].set(jnp.array([r, c], jnp.int32))
        active = active.at[slot].set(True)
        group = group.at[slot].set(g)
        for name, value in extra.items():
            fields[name] = fields[name].at[slot].set(value)
    for slot, (r, c) in INACTIVE.items():
        pos = pos.at[slot].set(jnp.array([r, c], jnp.int32))
    agents = ag.replace(pos=pos, active=active, in_use=active, group=group, **fields)
    return state.replace(agents=agents, t=jnp.int32(17))


def main(path: Path = DOCS / "cafe_frame.png") -> Path:
    params = make_params(layout_id("cafe"))
    frame = render_frame_jit(cafe_state(), params, cell_px=40)
    out = save_png(frame, path)
    print(f"wrote {out} {tuple(frame.shape)}")
    return out


if __name__ == "__main__":
    main()
