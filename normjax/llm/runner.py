"""The protocol for external agents (LLMs, VLMs, anything behind `act`), on the host.

    result = run_protocol(agent, norms=["forbidden_zone_q"], out="runs/llm/qwen")

For every requested norm: the 200-step interaction phase on the cafe
(docs/world.md §9.1: one norm-blind background slot; the newcomer is replaced
when it finishes and successive newcomers share one memory), then the
protocol's 3 seen + 3 unseen test episodes (same seeds, groups and
scenarios as `normjax.protocol.evaluate`), each with a fresh memory and the
norm's final interaction belief and confidence frozen into its prompts.

All episodes of a stage are rows of one batch stepped by one jitted, vmapped
step (`normjax.llm.batch`; the stage loop is `normjax.llm.stage`), but each
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
episodes whose decisions mostly got no reply, `normjax.llm.stage`) and no
``results.json`` is written.

Transcripts, resume and the judge export: `normjax.llm.transcripts`,
`normjax.llm.judge`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from pathlib import Path
from typing import Callable

import numpy as np

from normjax.llm.stage import COUNTERS, Episode, Stage
from normjax.llm.transcripts import TranscriptStore, check_run, write_run
from normjax.norms import NORMS
from normjax.protocol.runner import resolve_norms, summarize
from normjax.protocol.seeds import TEST_STEPS, base_seed, test_episodes
from normjax.world.habits import check_distractor

INTERACTION_STEPS = 200


def interaction_episodes(norm_ids, seed: int = 0) -> list[dict]:
    return [dict(norm_id=n, norm=NORMS[n].name, family=NORMS[n].family, condition="interaction",
                 layout="cafe", layout_id=0, episode=0, seed=base_seed(n, seed), group=None,
                 name=f"{NORMS[n].name}/interaction") for n in norm_ids]


def protocol_test_episodes(norm_ids, seed: int = 0) -> list[dict]:
    return [dict(e, name=f"{e['norm']}/{e['condition']}_{e['episode']}") for e in test_episodes(norm_ids, seed)]


def _stored(e: Episode, header: dict) -> Episode:
    e.result, e.done = header["result"], True
    e.belief, e.confidence = e.result["llm"]["belief"], e.result["llm"]["confidence"]
    return e


async def run_protocol_async(agent, norms=None, *, seed: int = 0, capacity: int = 10,
                             interaction_steps: int = INTERACTION_STEPS, out=None, resume: bool = True,
                             settings: dict | None = None, cell_px: int = 32,
                             progress: Callable | None = None, distractor: str | None = None,
                             distractor_share: float = 0.0, allow_mixed_endpoint: bool = False,
                             lockstep: bool = False) -> dict:
    """Run the protocol for `agent` (see the module docstring); returns the results dict.

    `norms`: names or ids (None = all 50).  `interaction_steps` (0..200) shortens
    or skips (0) the interaction phase, for quick checks; the protocol is 200.
    `out`: a run directory for transcripts, frames, ``run.json`` and
    ``results.json``; None keeps everything in memory.  `settings` (model, prompt
    mode, ...) are stored in ``run.json`` and checked on resume (`allow_mixed_endpoint`:
    `normjax.llm.transcripts.check_run`).  `distractor` / `distractor_share`: see the
    module docstring (default off).  `lockstep`: every episode of a stage waits for the
    whole step's replies (the former schedule; same results for the same replies).
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
    load = (lambda name: store.load(name)) if store is not None else (lambda name: None)  # noqa: E731
    t0 = time.perf_counter()

    inter = [Episode(s) for s in interaction_episodes(ids, seed)]
    tests = [Episode(s) for s in protocol_test_episodes(ids, seed)]
    pending = any(load(e.name) is None for e in (inter if interaction_steps > 0 else []) + tests)
    if pending and hasattr(agent, "preflight"):
        await agent.preflight()
    if out is not None:
        write_run(out, run_json)
    stage_args = (capacity, store, settings, cell_px, progress, on, lockstep)
    inter_todo = []
    for e in inter if interaction_steps > 0 else []:
        header = load(e.name)
        if header is not None:
            _stored(e, header)
            continue
        inter_todo.append(e)
        for t in tests:  # their frozen belief would come from a new interaction
            if t.spec["norm_id"] == e.spec["norm_id"] and store is not None:
                store.discard(t.name)
    tests_todo = [e for e in tests if load(e.name) is None]
    for e in tests:
        if e not in tests_todo:
            _stored(e, load(e.name))
    timing = {}
    pipelined = not lockstep and inspect.iscoroutinefunction(getattr(agent, "act", None))
    try:
        if pipelined:
            await _pipelined(agent, inter_todo, inter, tests_todo, interaction_steps, stage_args, timing)
        else:
            if inter_todo:
                stage = Stage(agent, inter_todo, INTERACTION_STEPS, interaction_steps, *stage_args)
                await stage.run()
                timing["interaction"] = stage.timing
            _freeze_beliefs(tests_todo, inter)
            if tests_todo:
                stage = Stage(agent, tests_todo, TEST_STEPS, TEST_STEPS, *stage_args)
                await stage.run()
                timing["test"] = stage.timing
    finally:
        if store is not None:
            store.close()
    result = assemble(tests, inter if interaction_steps > 0 else [])
    result["meta"] = dict(settings, norms=[NORMS[n].name for n in ids], wall_s=round(time.perf_counter() - t0, 3),
                          timing=timing)
    if out is not None:
        result["meta"]["endpoints"] = json.loads(Path(out, "run.json").read_text()).get("endpoints")
    if result["incomplete"]:
        return result
    if out is not None:
        Path(out, "results.json").write_text(json.dumps(result, indent=1))
    return result


def _freeze_beliefs(tests: list[Episode], inter: list[Episode]) -> None:
    """Each test episode gets its norm's final interaction belief and confidence (None without one)."""
    belief = {e.spec["norm_id"]: (e.belief, e.confidence) for e in inter}
    for e in tests:
        e.belief, e.confidence = belief.get(e.spec["norm_id"], (None, None))


async def _pipelined(agent, inter_todo, inter, tests_todo, interaction_steps, stage_args, timing) -> None:
    """Every norm's test episodes start as soon as its own interaction episode ends (one stage of
    6 rows per norm), so the run takes the longest norm's interaction + tests, not the longest
    interaction plus the longest test episode.  Results equal the two-stage schedule's: every
    episode and step has its own keys."""
    pending = {}
    for e in tests_todo:
        pending.setdefault(e.spec["norm_id"], []).append(e)
    started, stages, span, done_per_stage = [], [], [], {}
    progress = stage_args[4]

    def start_tests(norm_id: int) -> None:
        eps = pending.pop(norm_id, [])
        if eps:
            if not span:
                span.extend((time.perf_counter(), time.process_time()))
            _freeze_beliefs(eps, inter)
            args = list(stage_args)
            if progress is not None:  # one count over all norms' test stages
                args[4] = _counted(progress, len(tests_todo), done_per_stage, len(stages))
            stage = Stage(agent, eps, TEST_STEPS, TEST_STEPS, *args)
            stages.append(stage)
            started.append(asyncio.ensure_future(stage.run()))

    waiting = {e.spec["norm_id"] for e in inter_todo}
    for norm_id in [n for n in pending if n not in waiting]:  # their interaction is stored or skipped
        start_tests(norm_id)
    try:
        if inter_todo:
            stage = Stage(agent, inter_todo, INTERACTION_STEPS, interaction_steps, *stage_args,
                          on_finish=lambda e: start_tests(e.spec["norm_id"]))
            await stage.run()
            timing["interaction"] = stage.timing
        while started:  # a finished stage may not start others, but gather what is running
            await asyncio.gather(*started)
            started = [f for f in started if not f.done()]
    finally:
        for f in started:
            f.cancel()
        if started:
            await asyncio.gather(*started, return_exceptions=True)
    if stages:  # sums over the norms' stages, but wall and CPU seconds over their span (they overlap)
        timing["test"] = {k: round(sum(st.timing[k] for st in stages), 4) for k in stages[0].timing}
        timing["test"].update(wall_s=time.perf_counter() - span[0], cpu_s=time.process_time() - span[1],
                              stages=len(stages))


def _counted(progress: Callable, total: int, done_per_stage: dict, stage: int) -> Callable:
    """A stage's progress callback reporting the episodes done over all test stages of the run."""

    def report(phase, t, steps, _total, done, asked):
        done_per_stage[stage] = done
        progress(phase, t, steps, total, sum(done_per_stage.values()), asked)

    return report


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
    result["interaction"] = [dict(norm=e.spec["norm"], norm_id=e.spec["norm_id"], family=e.spec["family"],
                                  seed=e.spec["seed"], **{k: e.result["raw"][k] for k in
                                                          ("newcomer_tasks", "newcomer_sanctions",
                                                           "background_sanctions")},
                                  **e.result["llm"]) for e in inter]
    every = [e.result["llm"] for e in tests + inter]
    result["llm"] = {k: int(sum(x.get(k, 0) for x in every)) for k in COUNTERS}
    result["incomplete"] = [e.name for e in inter + tests if e.result["llm"].get("incomplete")]
    return result


__all__ = ["INTERACTION_STEPS", "assemble", "interaction_episodes", "protocol_test_episodes", "run_protocol",
           "run_protocol_async"]
