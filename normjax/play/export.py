"""`normjax play-export`: every participant of a study in one result, and beside model rows.

A participant is a folder ``DIR/<id>/`` whose ``run.json`` says ``policy:
"human"``, or that holds a study assignment (agreed, not started). One is
complete when its ``results.json`` exists (written once the last test episode
of the last norm ends) and holds the six test episodes of each of its norms;
otherwise it is listed as incomplete with the norms it finished, and none of
its episodes count (never as zeros).

Written into the study directory (names with a dot: no participant id can
take them):

* ``export.json``: ``participants`` (each complete one with its results in
  `normjax evaluate`'s format, each incomplete one with its finished and
  missing norms), ``complete``, ``incomplete``, and ``pooled``: the
  evaluate-format aggregates over every complete participant's episodes
  (`normjax.protocol.runner.aggregate_rows`; the rows carry ``participant``);
* ``export.txt``: the Table-1 text table pooled, then per participant;
* ``export.md``: the combined markdown table, the human rows beside the
  model rows of ``--compare`` (evaluate JSON files or llm-eval run
  directories), with the same columns; model rows only over the norms the
  participants played, unless ``all_norms``;
  Each participant entry also holds their crowdsourcing ``ids`` (PROLIFIC_PID, ...),
  their ``questionnaire`` answers, and ``timing``: one line per accepted action (turn,
  step, wall and monotonic clock, think time) plus the timeouts that fired.  A
  participant the admin excluded (``status.json``) is listed as ``excluded``, not counted.
  ``human``: the best-per-norm row and the means with 95% intervals, per family
  (`normjax.play.report`); ``protocol``: the settings the study ran with;
* ``judge_prompts.jsonl``: every complete participant's beliefs as llm-judge's
  lines, ids ``<id>/<norm>#<j>`` and a ``participant`` field (each one's own
  ``DIR/<id>/judge_prompts.jsonl`` is written too: ``normjax llm-judge --run
  DIR/<id>`` reads it as a model run's).
"""

from __future__ import annotations

import json
from pathlib import Path

from normjax.analysis.judge import JUDGE_FILE, export_judge_prompts, read_prompts
from normjax.norms import FAMILIES, get_norm
from normjax.play import questionnaire, report
from normjax.play.comprehension import RECORD as CHECK_RECORD
from normjax.play.guard import read_ids
from normjax.play.session import LOG, TIMING, read_log
from normjax.play.study import ASSIGNMENT_FILE, STATUS_FILE, write_json
from normjax.protocol.runner import aggregate_rows, format_table
from normjax.protocol.seeds import CONDITIONS
from normjax.runtime.transcripts import TranscriptStore

EXPORT_FORMAT = "normjax.play-export/1"
TESTS = tuple(f"{c}_{e}" for c in CONDITIONS for e in range(3))  # a norm's six test episodes


def participant_dirs(study_dir) -> list[Path]:
    """The study's participant folders, by id: a ``run.json`` with ``policy: "human"``, or an
    assignment (a study participant who agreed but has not started)."""
    out = []
    for d in sorted(Path(study_dir).iterdir()):
        run = d / "run.json"
        if run.is_file():
            if json.loads(run.read_text(encoding="utf-8")).get("policy") == "human":
                out.append(d)
        elif (d / ASSIGNMENT_FILE).is_file():
            out.append(d)
    return out


def _norms(d: Path) -> list[str]:
    """The participant's norms: the assignment, else run.json's list, else the transcripts' folders."""
    if (d / ASSIGNMENT_FILE).is_file():
        return json.loads((d / ASSIGNMENT_FILE).read_text(encoding="utf-8"))["norms"]
    run = json.loads((d / "run.json").read_text(encoding="utf-8"))
    if run.get("norms"):
        return list(run["norms"])
    root = d / "transcripts"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def participant(d: Path) -> dict:
    """One participant's entry of export.json (module docstring); ValueError on a malformed results.json."""
    norms = _norms(d)
    store = TranscriptStore(d)
    finished = [n for n in norms if all(store.load(f"{n}/{t}") is not None for t in TESTS)]
    entry = dict(
        participant=d.name,
        norms=norms,
        finished_norms=finished,
        missing_norms=[n for n in norms if n not in finished],
        steps_logged=len(read_log(d / LOG)),
        ids=read_ids(d).get("ids", {}),
        questionnaire=(questionnaire.read(d) or {}).get("answers"),
        comprehension=json.loads((d / CHECK_RECORD).read_text(encoding="utf-8"))
        if (d / CHECK_RECORD).is_file()
        else None,
        timing=read_log(d / TIMING),
    )
    marks = json.loads((d / STATUS_FILE).read_text(encoding="utf-8")) if (d / STATUS_FILE).is_file() else {}
    if marks.get("excluded"):
        return dict(entry, status="excluded", freed=bool(marks.get("freed")))
    path = d / "results.json"
    if not path.is_file():
        return dict(entry, status="incomplete")
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
        counts = {n: sum(1 for r in results["episodes"] if r["norm"] == n) for n in norms}
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a normjax play results file ({type(e).__name__}: {e})") from None
    got = {r["norm"] for r in results["episodes"]}
    if got != set(norms) or set(counts.values()) != {len(TESTS)}:
        raise ValueError(
            f"{path}: its episodes ({sorted(got)}) are not the six test episodes of each of the "
            f"participant's norms ({norms})"
        )
    return dict(entry, status="complete", results=results)


def load_rows(source: str) -> tuple[str, list[dict]]:
    """(label, per-episode rows) of a ``[LABEL=]PATH`` model source: an evaluate JSON or an llm-eval run dir."""
    label, path = ("", source) if Path(source).exists() or "=" not in source else source.split("=", 1)
    p = Path(path)
    file = p / "results.json" if p.is_dir() else p
    try:
        result = json.loads(file.read_text(encoding="utf-8"))
        rows = result["episodes"]
        assert isinstance(rows, list) and all({"condition", "family", "norm", "joint", "task"} <= set(r) for r in rows)
    except (OSError, json.JSONDecodeError, KeyError, TypeError, AssertionError):
        raise ValueError(
            f"--compare {source}: not a normjax evaluate JSON file or llm-eval run directory "
            "(a results.json with per-episode rows)"
        ) from None
    meta = result.get("meta") or {}
    return label or str(meta.get("model") or meta.get("policy") or p.stem), rows


def _cell(rows: list[dict], key: str) -> str:
    return f"{100.0 * sum(float(r[key]) for r in rows) / len(rows):.1f}" if rows else "-"


def combined_table(groups: list[tuple[str, list[dict]]]) -> str:
    """Markdown: per family (overall first) one row per newcomer; joint (J) and task (T) success in %."""
    lines = [
        "| newcomer | family | norms | episodes | seen J | seen T | unseen J | unseen T |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fam in ("overall",) + FAMILIES:
        for label, rows in groups:
            rs = [r for r in rows if fam in ("overall", r["family"])]
            if not rs:
                continue
            seen, unseen = ([r for r in rs if r["condition"] == c] for c in CONDITIONS)
            lines.append(
                f"| {label} | {fam} | {len({r['norm'] for r in rs})} | {len(rs)} | {_cell(seen, 'joint')} | "
                f"{_cell(seen, 'task')} | {_cell(unseen, 'joint')} | {_cell(unseen, 'task')} |"
            )
    return "\n".join(lines)


def _judge_lines(d: Path) -> list[dict]:
    """The participant's beliefs as llm-judge's lines (its own judge_prompts.jsonl is rewritten)."""
    store = TranscriptStore(d)
    if not any(n.endswith("/interaction") and store.load(n) is not None for n in store.episodes()):
        return []
    export_judge_prompts(d)
    return [dict(p, id=f"{d.name}/{p['id']}", participant=d.name) for p in read_prompts(d)]


def export_study(study_dir, compare=(), all_norms: bool = False) -> dict:
    """Write the export files (module docstring); returns a summary with the markdown and the paths."""
    out = Path(study_dir)
    if not out.is_dir():
        raise ValueError(f"--out {out}: no such study directory (normjax play's --out)")
    dirs = participant_dirs(out)
    if not dirs:
        raise ValueError(f"{out} holds no participant (no {out}/<id>/run.json written by normjax play)")
    entries = [participant(d) for d in dirs]
    for e in entries:
        for n in e["norms"]:
            get_norm(n)  # a participant folder naming an unknown norm is an error, not a row
    complete = [e for e in entries if e["status"] == "complete"]
    incomplete = [e for e in entries if e["status"] == "incomplete"]
    excluded = [e for e in entries if e["status"] == "excluded"]
    if not complete:
        raise ValueError(
            f"no participant in {out} has finished their norms (incomplete: "
            + ", ".join(e["participant"] for e in incomplete)
            + "); nothing to tabulate"
        )
    rows = [dict(r, participant=e["participant"]) for e in complete for r in e["results"]["episodes"]]
    inter = [dict(r, participant=e["participant"]) for e in complete for r in e["results"].get("interaction", [])]
    pooled = dict(aggregate_rows(rows), episodes=rows, interaction=inter)
    human = f"human ({len(complete)} participant{'s' * (len(complete) != 1)})"
    played = {r["norm"] for r in rows}
    groups = [(human, rows)]
    for source in compare:
        label, model_rows = load_rows(source)
        if not all_norms:
            model_rows = [r for r in model_rows if r["norm"] in played]
            if not model_rows:
                raise ValueError(
                    f"--compare {source}: none of the participants' norms ({', '.join(sorted(played))}) "
                    "is in it; add --all-norms to compare over different norms"
                )
        groups.append((label, model_rows))
    scope = "all their norms" if all_norms else f"the {len(played)} norm(s) the participants played"
    protocol = report.settings(out)
    human_md, human_numbers = report.human_tables(rows, len(complete))
    markdown = (
        f"Joint (J) and task (T) success in %; model rows over {scope}; "
        f"{len(incomplete)} incomplete participant(s) not counted; {len(excluded)} excluded by the researcher.\n\n"
        + combined_table(groups)
        + "\n\n"
        + human_md
        + "".join(f"\n\nNote: {n}." for n in protocol["notes"])
    )

    blocks = [f"pooled: {human}, {len(rows)} test episodes\n{format_table(pooled)}"]
    blocks += [
        f"participant {e['participant']} ({', '.join(e['norms'])})\n{format_table(e['results'])}" for e in complete
    ]
    blocks += [
        f"participant {e['participant']}: incomplete, finished {e['finished_norms'] or 'none'} of "
        f"{e['norms']} (not counted)"
        for e in incomplete
    ]
    judge = [line for e in complete for line in _judge_lines(out / e["participant"])]

    files = [out / "export.json", out / "export.txt", out / "export.md", out / JUDGE_FILE]
    write_json(
        files[0],
        dict(
            format=EXPORT_FORMAT,
            participants={e["participant"]: e for e in entries},
            complete=[e["participant"] for e in complete],
            incomplete=[e["participant"] for e in incomplete],
            excluded=[e["participant"] for e in excluded],
            pooled=pooled,
            human=human_numbers,
            protocol=protocol,
        ),
    )
    files[1].write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
    files[2].write_text(markdown + "\n", encoding="utf-8")
    files[3].write_text("".join(json.dumps(x) + "\n" for x in judge), encoding="utf-8")
    return dict(
        markdown=markdown,
        complete=[e["participant"] for e in complete],
        incomplete=incomplete,
        files=files,
        judge_lines=len(judge),
    )


__all__ = ["EXPORT_FORMAT", "combined_table", "export_study", "load_rows", "participant", "participant_dirs"]
