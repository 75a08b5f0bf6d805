"""The ten layouts and two validation cafes (docs/world.md §1): text maps, validator, geometry, host tables.

`parse` reads and validates a map into a `Layout`; `geometry` derives its norm
features; `tables` stacks the arrays of all layouts for the jitted world and
`routes` holds the planner's shortest-path tables.
"""

from normjax.layouts.geometry import QUEUE_NAMES, QUEUE_SHAPES
from normjax.layouts.parse import (
    ALL_LAYOUTS,
    LAYOUTS,
    VALIDATION_LAYOUTS,
    Layout,
    check_layout_name,
    get_layout,
    load_layout,
    parse_layout,
)
from normjax.layouts.validate import VALIDATION_RULES, LayoutError, validate_grid

__all__ = [
    "ALL_LAYOUTS",
    "LAYOUTS",
    "Layout",
    "LayoutError",
    "QUEUE_NAMES",
    "QUEUE_SHAPES",
    "VALIDATION_LAYOUTS",
    "VALIDATION_RULES",
    "check_layout_name",
    "get_layout",
    "load_layout",
    "parse_layout",
    "validate_grid",
]
