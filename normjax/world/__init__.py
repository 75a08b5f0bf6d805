"""The pure world (docs/world.md §2-6, §10): state pytrees, physics, tasks and
rewards, the world step, and the DQN observation.

Import from the modules (`normjax.world.step`, `normjax.world.state`, ...); this
package file stays empty so that importing one module does not import the step.
The utilities the world shares with the layers below it (effective moves,
`run_where`, hashed and per-index random draws, ranking) live in `normjax.ground`.
"""
