"""The scripted community (docs/world.md §8): the one-step predictive planner."""
