"""The protocol for external agents (LLMs, VLMs, anything behind `act`), on the host.

    result = run_protocol(agent, norms=["forbidden_zone_q"], out="runs/llm/qwen")

For every requested norm: the 200-step interaction phase on the cafe
(docs/world.md §9.1: one norm-blind background slot; the newcomer is replaced
when it finishes and successive newcomers share one memory), then the
protocol's 3 seen + 3 unseen test episodes (same seeds, groups and
scenarios as `normjax.protocol.evaluate`), each with a fresh memory and the
norm's final interaction belief and confidence frozen into its prompts.

All episodes of a stage are rows of one batch stepped by one jitted, vmapped
step (`normjax.runtime.batch`; the stage loop is `normjax.runtime.stage`), but each
episode advances on its own clock: an async agent (``async def act``, e.g.
`LLMAgent`) is asked once per turn, and an episode steps as soon as its own
newcomer's reply is in (with whatever other episodes are ready then; rows
that are not ready are held by a mask), so one slow or retried request
delays only its own episode while hundreds of requests stay in flight.  A
synchronous agent is called once with the turns of all deciding episodes,
which then step together.  Every episode and step has its own keys, so the
results do not depend on the order in which replies arrive (tested against
``lockstep=True``, where every episode waits for the whole step).  Stage 1
runs every norm's interaction episode, stage 2 every test episode.  A newcomer is asked only when it is on the grid, its
episode has not ended, and its action is not forced (a WAIT during service,
docs/world.md §5.2); an unusable reply makes it WAIT (`normjax.llm.parse`).

Results: `normjax.protocol.summarize`'s JSON (so `format_table` prints the
Table-1 rows) with per-episode LLM fields (``decisions``, ``errors``,
``requests``, ``retries``, ``tokens_in``, ``tokens_out``, ``warnings``,
``belief``, ``confidence``), an ``interaction`` list (per norm: final belief
and confidence, the newcomer's tasks and sanctions, background sanctions
observed, LLM counters), ``llm`` totals and ``meta`` (settings, timing).
With a state policy wrapped as `StatePolicyAgent` the per-episode raw
metrics equal `evaluate`'s exactly (tested).

Distractors (docs/world.md §8.5): ``distractor=NAME, distractor_share=S``
gives that share of the norm-aware background agents the habit in both
stages (validated before anything is traced).  The results then also report
each test newcomer's over-imitation exactly as `normjax.protocol.evaluate`
does (per episode ``habit_steps`` and ``over_imitation``, aggregates in
percent), and the settings (``run.json``, ``meta``) name the distractor, so a
run is resumed only with the same one.  Off by default; with it off the
programs, transcripts and results are as before.

Failing loudly: before the first episode that needs the agent, an agent's
optional ``async preflight()`` is awaited (an LLM agent checks its endpoint
and raises if it is unusable), and only then is ``run.json`` written, so a
run that never started leaves no identity behind.  ``results.json`` is
removed at the start and written only when every requested episode is
complete; otherwise the result has ``incomplete`` (the names of the
episodes whose decisions mostly got no reply, `normjax.runtime.stage`) and no
``results.json`` is written.

Transcripts, resume and the judge export: `normjax.runtime.transcripts`,
`normjax.analysis.judge`.

`normjax play` plays the same episodes (`protocol_episodes`), each test episode with its
norm's frozen belief (`freeze_beliefs`) and stored ones restored (`restore`), one episode
per stage, norm by norm.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from normjax.norms import NORMS
from normjax.protocol.runner import resolve_norms, summarize
from normjax.protocol.seeds import TEST_STEPS, base_seed, test_episodes
from normjax.protocol.stamp import protocol_stamp
from normjax.runtime.stage import COUNTERS, Episode, Stage
from normjax.runtime.transcripts import TranscriptStore, check_run, write_run
from normjax.runtime.turns import MODULE_COUNTERS
from normjax.world.habits import check_distractor

INTERACTION_STEPS = 200


def interaction_episodes(norm_ids, seed: int = 0) -> list[dict]:
    return [
        dict(
            norm_id=n,
            norm=NORMS[n].name,
            family=NORMS[n].family,
            condition="interaction",
            layout="cafe",
            layout_id=0,
            episode=0,
            seed=base_seed(n, seed),
            group=None,
            name=f"{NORMS[n].name}/interaction",
        )
        for n in norm_ids
    ]


def protocol_test_episodes(norm_ids, seed: int = 0) -> list[dict]:
    return [dict(e, name=f"{e['norm']}/{e['condition']}_{e['episode']}") for e in test_episodes(norm_ids, seed)]


def protocol_episodes(norm_ids, seed: int = 0, interaction: bool = True) -> tuple[list[Episode], list[Episode]]:
    """(interaction episodes, test episodes) of the protocol: one interaction episode per norm
    (none when `interaction` is false: the phase is skipped), then every norm's test episodes,
    in protocol order.  The runner plays them stage by stage, `normjax play` norm by norm."""
    inter = [Episode(s) for s in interaction_episodes(norm_ids, seed)] if interaction else []
    return inter, [Episode(s) for s in protocol_test_episodes(norm_ids, seed)]


def freeze_beliefs(tests: list[Episode], inter: list[Episode]) -> None:
    """Give each test episode its norm's final interaction belief and confidence (None, None
    without one), frozen into its prompts."""
    belief = {e.spec["norm_id"]: (e.belief, e.confidence) for e in inter}
    for e in tests:
        e.belief, e.confidence = belief.get(e.spec["norm_id"], (None, None))


def restore(e: Episode, header: dict) -> Episode:
    """Mark `e` finished with the result (and final belief) its stored transcript's header holds."""
    e.result, e.done = header["result"], True
    e.belief, e.confidence = e.result["llm"]["belief"], e.result["llm"]["confidence"]
    return e


def unfinished(episodes: list[Episode], load: Callable) -> list[Episode]:
    """The episodes still to run; each of the others (`load(name)` gives its stored transcript's
    header) is restored from it (`restore`)."""
    todo = []
    for e in episodes:
        header = load(e.name)
        if header is None:
            todo.append(e)
        else:
            restore(e, header)
    return todo


async def run_protocol_async(
    agent,
    norms=None,
    *,
    seed: int = 0,
    capacity: int = 10,
    interaction_steps: int = INTERACTION_STEPS,
    out=None,
    resume: bool = True,
    settings: dict | None = None,
    cell_px: int = 32,
    progress: Callable | None = None,
    distractor: str | None = None,
    distractor_share: float = 0.0,
    allow_mixed_endpoint: bool = False,
    lockstep: bool = False,
) -> dict:
    """Run the protocol for `agent` (see the module docstring); returns the results dict.

    `norms`: names or ids (None = all 50).  `interaction_steps` (0..200) shortens
    or skips (0) the interaction phase, for quick checks; the protocol is 200.
    `out`: a run directory for transcripts, frames, ``run.json`` and
    ``results.json``; None keeps everything in memory.  `settings` (model, prompt
    mode, ...) are stored in ``run.json`` and checked on resume (`allow_mixed_endpoint`:
    `normjax.runtime.transcripts.check_run`).  `distractor` / `distractor_share`: see the
    module docstring (default off).  `lockstep`: every episode of a stage waits for the
    whole step's replies (same results for the same replies; a simpler schedule to reason about).
    """
    ids = resolve_norms(norms)
    if not ids:
        raise ValueError("no norms to evaluate")
    if not 0 <= interaction_steps <= INTERACTION_STEPS:
        raise ValueError(f"interaction_steps must be in 0..{INTERACTION_STEPS}, got {interaction_steps}")
    habit, share = check_distractor(distractor, distractor_share)  # before anything is traced
    settings = dict(settings or {}, seed=seed, capacity=capacity, interaction_steps=interaction_steps)
    on = None
    if habit != 0 and share > 0.0:
        on = (distractor, habit, share)
        settings.update(distractor=distractor, distractor_share=share)
    store, run_json = None, None
    if out is not None:
        run_json = check_run(out, settings, resume=resume, allow_mixed=allow_mixed_endpoint)
        store = TranscriptStore(out)
        Path(out, "results.json").unlink(missing_ok=True)  # never a stale table beside a failed run
    load = (lambda name: store.load(name)) if store is not None else (lambda name: None)
    t0 = time.perf_counter()

    inter, tests = protocol_episodes(ids, seed, interaction=interaction_steps > 0)
    pending = any(load(e.name) is None for e in inter + tests)
    if pending and hasattr(agent, "preflight"):
        await agent.preflight()
    if out is not None:
        write_run(out, run_json)
    todo = unfinished(inter, load)
    for e in todo:
        for t in tests:  # their frozen belief would come from a new interaction
            if t.spec["norm_id"] == e.spec["norm_id"] and store is not None:
                store.discard(t.name)
    timing = {}
    if todo:
        stage = Stage(
            agent,
            todo,
            INTERACTION_STEPS,
            interaction_steps,
            capacity,
            store,
            settings,
            cell_px,
            progress,
            on,
            lockstep,
        )
        await stage.run()
        timing["interaction"] = stage.timing
    freeze_beliefs(tests, inter)  # a stored test episode's own header overrides it (`restore`)
    todo = unfinished(tests, load)
    if todo:
        stage = Stage(agent, todo, TEST_STEPS, TEST_STEPS, capacity, store, settings, cell_px, progress, on, lockstep)
        await stage.run()
        timing["test"] = stage.timing
    result = assemble(tests, inter)
    result["meta"] = dict(
        settings,
        norms=[NORMS[n].name for n in ids],
        wall_s=round(time.perf_counter() - t0, 3),
        timing=timing,
        **protocol_stamp(),  # the scenario tables' hash and the code version (normjax table)
    )
    if out is not None:
        result["meta"]["endpoints"] = json.loads(Path(out, "run.json").read_text()).get("endpoints")
    if result["incomplete"]:
        return result
    if out is not None:
        Path(out, "results.json").write_text(json.dumps(result, indent=1))
    return result


def run_protocol(agent, norms=None, **kwargs) -> dict:
    """Synchronous `run_protocol_async` (runs its own event loop)."""
    return asyncio.run(run_protocol_async(agent, norms, **kwargs))


def assemble(tests: list[Episode], inter: list[Episode]) -> dict:
    """`summarize`'s results of the test episodes plus the LLM fields."""
    specs = [e.spec for e in tests]
    raw = {k: np.asarray([e.result["raw"][k] for e in tests]) for k in tests[0].result["raw"]}
    result = summarize(specs, raw)
    for row, e in zip(result["episodes"], tests):
        row.update(e.result["llm"], waits=e.result["raw"]["waits"])
    result["interaction"] = [
        dict(
            norm=e.spec["norm"],
            norm_id=e.spec["norm_id"],
            family=e.spec["family"],
            seed=e.spec["seed"],
            **{k: e.result["raw"][k] for k in ("newcomer_tasks", "newcomer_sanctions", "background_sanctions")},
            **e.result["llm"],
        )
        for e in inter
    ]
    every = [e.result["llm"] for e in tests + inter]
    result["llm"] = {k: int(sum(x.get(k, 0) for x in every)) for k in COUNTERS}
    if any("module_calls" in x for x in every):  # a normative module's calls (normjax.llm.modules)
        result["llm"].update({k: int(sum(x.get(k, 0) for x in every)) for k in MODULE_COUNTERS})
    result["incomplete"] = [e.name for e in inter + tests if e.result["llm"].get("incomplete")]
    return result


__all__ = [
    "INTERACTION_STEPS",
    "assemble",
    "freeze_beliefs",
    "interaction_episodes",
    "protocol_episodes",
    "protocol_test_episodes",
    "restore",
    "unfinished",
    "run_protocol",
    "run_protocol_async",
]
