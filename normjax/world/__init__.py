"""The pure world (docs/world.md §2-6, §10): state pytrees, effective moves,
physics, tasks and rewards, the world step, and the DQN observation.

Import from the modules (`normjax.world.step`, `normjax.world.state`, ...); this
package file stays empty so that the norms can import `normjax.world.moves`
without pulling in the step, which imports the norms.
"""
