"""Interop with the world outside JAX: trajectory export (docs/world.md §12) and rendering."""
