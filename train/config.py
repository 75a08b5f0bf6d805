"""DQN configuration (docs/world.md §11, paper A14): every hyperparameter as data.

Configs are JSON files in `configs/`; `load_config(path, overrides)` reads one,
applies `key=value` overrides, and validates everything before anything is
traced: an unknown key, a bad value or a norm name that does not exist is an
error naming it and the allowed values.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from normjax.agents.networks import ARCHITECTURES
from normjax.constants import CAPACITIES, HABIT_NAMES
from normjax.layouts import ALL_LAYOUTS, LAYOUTS, VALIDATION_LAYOUTS
from normjax.norms import NORMS, get_norm
from normjax.world.habits import check_distractor
from normjax.world.state import REWARD_CONDITIONS

PAPER_VALIDATION = (100_000, 250_000, 500_000, 750_000, 1_000_000)
REPLAY_DTYPES = ("float32", "float16", "bfloat16")
FIRST_LAYERS = ("factorised", "dense")  # train.first_layer
# Behavioural validation layouts: the cafe and the two modified cafes (docs/world.md §1.7).
PAPER_VALIDATION_LAYOUTS = ("cafe",) + VALIDATION_LAYOUTS


@dataclasses.dataclass(frozen=True)
class DQNConfig:
    name: str = "dqn"
    arch: str = "mlp"  # mlp | cnn | "mlp,cnn" (both as one population; a JSON list works too)
    reward_conditions: tuple[str, ...] = ("sparse_penalty",)
    norms: tuple[str, ...] = ("all",)  # norm names, or ("all",)
    seeds_per_norm: int = 1
    total_steps: int = 1_000_000  # transitions per run
    buffer_size: int = 100_000
    replay_dtype: str = "float32"  # storage of observations; float16 halves replay memory (inexact)
    # DQN-MLP's first layer in training: "factorised" over the observation's structure (same function and
    # updates up to float summation order; train.first_layer) or "dense"; runs before it were dense.
    first_layer: str = "factorised"
    learning_starts: int = 1_000
    batch_size: int = 32
    train_freq: int = 4
    target_update: int = 10_000
    learning_rate: float = 1e-4
    gamma: float = 0.99
    max_grad_norm: float = 10.0
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_fraction: float = 0.3
    episode_steps: int = 200
    capacity: int | tuple[int, ...] = 10  # K; a list (e.g. [6, 8, 10]) = one population per K (docs/training.md)
    layout: str = "cafe"
    validation_at: tuple[int, ...] = PAPER_VALIDATION
    validation_layouts: tuple[str, ...] = PAPER_VALIDATION_LAYOUTS
    probe_states: int = 1_000  # random-policy probe transitions per run (train.probes); 0: no probes
    seed: int = 0
    progress_every: int = 5_000  # transitions between progress-bar updates
    # Distractor habits of norm-aware background agents, in training and the final
    # tests (docs/world.md §8.5): a habit name and its share; off by default.
    distractor: str = "none"
    distractor_share: float = 0.0

    def __post_init__(self):
        def bad(field, value, allowed):
            raise ValueError(f"config {field}={value!r} is invalid; allowed: {allowed}")

        if isinstance(self.capacity, (list, tuple)):  # a one-item list is that K; lists become tuples
            caps = tuple(self.capacity)
            object.__setattr__(self, "capacity", caps[0] if len(caps) == 1 else caps)
        if isinstance(self.arch, (list, tuple)):  # DQNConfig(arch=("mlp", "cnn")) in Python
            object.__setattr__(self, "arch", ",".join(map(str, self.arch)))
        archs = self.arch.split(",") if isinstance(self.arch, str) else [self.arch]
        if not archs or any(a not in ARCHITECTURES for a in archs) or len(set(archs)) != len(archs):
            bad("arch", self.arch, ", ".join(ARCHITECTURES) + " or a comma-separated list of distinct ones")
        if self.replay_dtype not in REPLAY_DTYPES:
            bad("replay_dtype", self.replay_dtype, ", ".join(REPLAY_DTYPES))
        if self.first_layer not in FIRST_LAYERS:
            bad("first_layer", self.first_layer, ", ".join(FIRST_LAYERS))
        for rc in self.reward_conditions:
            if rc not in REWARD_CONDITIONS:
                bad("reward_conditions", rc, ", ".join(REWARD_CONDITIONS))
        if self.layout not in LAYOUTS:
            bad("layout", self.layout, ", ".join(LAYOUTS))
        if tuple(self.norms) != ("all",):
            for n in self.norms:
                get_norm(n)  # raises, listing the valid names
        caps = self.capacities
        if not caps or any(isinstance(k, bool) or k not in CAPACITIES for k in caps) or len(set(caps)) != len(caps):
            bad("capacity", self.capacity, f"one of {', '.join(map(str, CAPACITIES))} or a list of distinct ones")
        if not self.validation_layouts or len(set(self.validation_layouts)) != len(self.validation_layouts):
            bad("validation_layouts", self.validation_layouts, "a non-empty list of distinct layouts")
        for name in self.validation_layouts:
            if name not in ALL_LAYOUTS:
                bad("validation_layouts", name, ", ".join(ALL_LAYOUTS))
        if int(self.probe_states) < 0:
            bad("probe_states", self.probe_states, "0 (no probe set) or a positive integer")
        if self.distractor not in HABIT_NAMES:
            bad("distractor", self.distractor, ", ".join(HABIT_NAMES))
        try:
            check_distractor(self.distractor, self.distractor_share)
        except ValueError:
            bad("distractor_share", self.distractor_share, "a number in [0, 1]; above 0 only with a distractor")
        for field in (
            "total_steps",
            "buffer_size",
            "batch_size",
            "train_freq",
            "target_update",
            "episode_steps",
            "seeds_per_norm",
            "progress_every",
        ):
            if int(getattr(self, field)) < 1:
                bad(field, getattr(self, field), "a positive integer")
        if self.learning_starts < 0 or self.learning_starts > self.total_steps:
            bad("learning_starts", self.learning_starts, f"0..total_steps ({self.total_steps})")
        if self.target_update % self.train_freq:
            bad("target_update", self.target_update, f"a multiple of train_freq ({self.train_freq})")
        if self.buffer_size % self.train_freq:
            bad("buffer_size", self.buffer_size, f"a multiple of train_freq ({self.train_freq})")
        if self.episode_steps % self.train_freq:
            bad("episode_steps", self.episode_steps, f"a multiple of train_freq ({self.train_freq})")
        if self.total_steps % self.train_freq:
            bad("total_steps", self.total_steps, f"a multiple of train_freq ({self.train_freq})")
        if not 0 < self.gamma <= 1:
            bad("gamma", self.gamma, "0 < gamma <= 1")
        if not 0 <= self.eps_end <= self.eps_start <= 1 or not 0 < self.eps_fraction <= 1:
            bad("eps_*", (self.eps_start, self.eps_end, self.eps_fraction), "0 <= end <= start <= 1, 0 < fraction <= 1")
        for v in self.validation_at:
            if v % self.train_freq or not 0 < v <= self.total_steps:
                bad("validation_at", v, f"multiples of train_freq in 1..total_steps ({self.total_steps})")

    @property
    def capacities(self) -> tuple:
        """The capacities K of the config, in config order (one population per K)."""
        return tuple(self.capacity) if isinstance(self.capacity, (list, tuple)) else (self.capacity,)

    def per_capacity(self) -> list[DQNConfig]:
        """One single-K config per capacity (the name gets a `_K<k>` suffix when there are several)."""
        if len(self.capacities) == 1:
            return [dataclasses.replace(self, capacity=self.capacities[0])]
        return [dataclasses.replace(self, capacity=k, name=f"{self.name}_K{k}") for k in self.capacities]

    @property
    def archs(self) -> tuple[str, ...]:
        """The architectures of the population, in config order."""
        return tuple(self.arch.split(","))

    @property
    def norm_ids(self) -> tuple[int, ...]:
        if tuple(self.norms) == ("all",):
            return tuple(range(len(NORMS)))
        return tuple(get_norm(n).id for n in self.norms)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


_TUPLES = {f.name for f in dataclasses.fields(DQNConfig) if str(f.type).startswith("tuple")}


def _coerce(field: str, raw, current):
    if field == "arch" and isinstance(raw, (list, tuple)):
        return ",".join(str(x) for x in raw)
    if field in _TUPLES:
        items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
        conv = int if field == "validation_at" else str
        return tuple(conv(x) for x in items if str(x) != "")
    if field == "capacity":  # an int, a JSON list or "6,8,10" on the command line
        items = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
        try:
            ks = tuple(x if isinstance(x, int) else int(str(x).strip()) for x in items if str(x).strip() != "")
        except ValueError:
            raise ValueError(
                f"config capacity={raw!r} is invalid; allowed: one of "
                f"{', '.join(map(str, CAPACITIES))} or a list of distinct ones"
            ) from None
        return ks[0] if len(ks) == 1 and not isinstance(raw, (list, tuple)) else ks
    if isinstance(raw, str) and not isinstance(current, str):
        try:
            return type(current)(float(raw)) if isinstance(current, int) and "e" in raw.lower() else type(current)(raw)
        except ValueError:
            raise ValueError(f"config {field}={raw!r}: expected {type(current).__name__}") from None
    return raw


def make_config(values: dict) -> DQNConfig:
    known = {f.name for f in dataclasses.fields(DQNConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown config key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(known))}")
    defaults = DQNConfig()
    return DQNConfig(**{k: _coerce(k, v, getattr(defaults, k)) for k, v in values.items()})


# The project's configs/ folder, found from this module rather than the working directory.
CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


def resolve_config(path: str | Path) -> Path:
    """A config's file: `path` as given if it exists, else the same name in configs/.

    "cpu_default", "configs/cpu_default" and "configs/cpu_default.json" all name
    configs/cpu_default.json from any working directory; a path to another file works too.
    """
    given = Path(path)
    candidates = (
        [given, CONFIG_DIR / given.name]
        if given.suffix
        else [given.with_suffix(".json"), given, CONFIG_DIR / (given.name + ".json")]
    )
    for c in candidates:
        if c.is_file():
            return c
    names = ", ".join(sorted(f.stem for f in CONFIG_DIR.glob("*.json")))
    raise ValueError(f"config file {str(path)!r} does not exist; the configs in {CONFIG_DIR} are: {names}")


def load_config(path: str | Path, overrides: list[str] | None = None) -> DQNConfig:
    """Read a JSON config (a path, or a name in configs/); `overrides` are 'key=value' strings."""
    path = resolve_config(path)
    values = json.loads(path.read_text())
    values.pop("_comment", None)
    for item in overrides or []:
        if "=" not in item:
            raise ValueError(f"override {item!r} must look like key=value")
        k, v = item.split("=", 1)
        values[k.strip()] = v.strip()
    return make_config(values)
