"""Host-side turn and memory objects of the runner, built from packed rows on demand.

The runner keeps, per step, one packed int32 array [B, F] of what the host
needs (`normjax.runtime.batch.obs_layout`).  Building every newcomer's `Turn`
with all other agents, and every remembered `StepRecord`, as Python objects
each step costs more than the whole device step at hundreds of episodes,
and an agent that acts on the state (or a scripted one) never reads them.
So:

* `Memory` keeps one small tuple per remembered step and builds a
  `StepRecord` (from that step's packed row) the first time it is read,
  then caches it; `select(n)` is `select_memory` over the first n steps.
* `LazyTurn` is a `Turn` whose ``others``, ``memory`` and ``earlier`` are
  built on first access from the packed row and the memory as they were
  when the turn was made (later steps never change a turn).

The values are exactly those the eager construction gives (tested).
"""

from __future__ import annotations

import bisect

from normjax.runtime.turns import EARLIER_SANCTIONED, RECENT_STEPS, Other, StepRecord, Turn

LAZY_FIELDS = ("others", "memory", "earlier")


class Columns:
    """Column offsets of a packed row (`obs_layout`) as plain ints, for fast list indexing."""

    def __init__(self, layout: dict[str, slice]):
        for name, sl in layout.items():
            setattr(self, name, sl.start)
        self.K = layout["active"].stop - layout["active"].start


def others_of(row: list, c: Columns, intents: bool) -> list[Other]:
    """The other agents on the grid (slots 1..K-1) of one packed row."""
    a, p, g, s, i = c.active, c.pos, c.group, c.sanctioned, c.intent
    return [
        Other((row[p + 2 * k], row[p + 2 * k + 1]), row[g + k], bool(row[s + k]), row[i + k] if intents else None)
        for k in range(1, c.K)
        if row[a + k]
    ]


class Memory:
    """One episode's memory: steps recorded as tuples, `StepRecord`s built when read."""

    def __init__(self, obs: list, row: int, cols: Columns):
        self.obs, self.row, self.cols = obs, row, cols  # obs: the stage's packed arrays, one per step
        self.entries: list[tuple] = []  # (step, action, note, reasoning, sanctioned)
        self.records: list[StepRecord | None] = []
        self.sanctioned: list[int] = []  # indices of sanctioned entries, ascending

    def __len__(self) -> int:
        return len(self.entries)

    def append(self, step: int, action: str, note: str, reasoning: str, sanctioned: bool) -> None:
        if sanctioned:
            self.sanctioned.append(len(self.entries))
        self.entries.append((step, action, note, reasoning, sanctioned))
        self.records.append(None)

    def record(self, i: int) -> StepRecord:
        rec = self.records[i]
        if rec is None:
            step, action, note, reasoning, sanctioned = self.entries[i]
            row, c = self.obs[step][self.row].tolist(), self.cols
            p, g, a = c.pos, c.group, c.active
            others = tuple(((row[p + 2 * k], row[p + 2 * k + 1]), row[g + k]) for k in range(1, c.K) if row[a + k])
            rec = self.records[i] = StepRecord(
                t=row[c.t],
                pos=(row[p], row[p + 1]),
                others=others,
                action=action,
                note=note,
                reasoning=reasoning,
                sanctioned=sanctioned,
            )
        return rec

    def select(self, n: int) -> tuple[list[StepRecord], list[StepRecord]]:
        """`select_memory(first n records)`: (recent window, earlier sanctioned steps), oldest first."""
        lo = max(0, n - RECENT_STEPS) if RECENT_STEPS > 0 else n
        k = bisect.bisect_left(self.sanctioned, lo)
        earlier = self.sanctioned[max(0, k - EARLIER_SANCTIONED) : k] if EARLIER_SANCTIONED > 0 else []
        return [self.record(i) for i in range(lo, n)], [self.record(i) for i in earlier]


class LazyTurn(Turn):
    """A `Turn` whose ``others``, ``memory`` and ``earlier`` are built on first access."""

    def __init__(self, fields: dict, row: list, cols: Columns, intents: bool, memory: Memory, n: int):
        self.__dict__.update(fields)
        self._source = (row, cols, intents, memory, n)

    def __getattr__(self, name):  # only called for attributes not yet set
        source = self.__dict__.get("_source")
        if name not in LAZY_FIELDS or source is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        row, cols, intents, memory, n = source
        if name == "others":
            self.others = others_of(row, cols, intents)
        else:
            self.memory, self.earlier = memory.select(n)
        return self.__dict__[name]


__all__ = ["Columns", "LAZY_FIELDS", "LazyTurn", "Memory", "others_of"]
