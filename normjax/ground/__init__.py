"""Ground utilities: numeric and geometric helpers with no knowledge of norms or
the world state, shared by `norms`, `world`, `community`, `observer` and `llm`.

* `moves`: effective actions and move targets on the grid (docs/world.md §3);
* `rare`: `run_where`, work few environments of a batch need, run only for those
  under `vmap`;
* `hashrand`: cheap counter-based uniforms for tie-breaking;
* `draws_at`: entries of a library random draw, computed only where needed;
* `ranking`: stable argsort, argmin and permutations of a short vector without a sort.

They import only the base modules (`normjax.constants`, `normjax.xla_cpu`) and the
layout tables; nothing here imports `norms` or `world` (tests/test_import_layers.py).
Import from the modules; this package file stays empty.
"""
