"""`normjax finetune-data`: each task's records for each family and split asked, as JSON Lines + manifest."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from normjax.cli_names import FAMILIES, FINETUNE_SPLITS, FINETUNE_TASKS, HARVEST_POLICIES, SFT_TASK
from normjax.constants import INTERACTION_STEPS
from normjax.llm.settings import client_config


def add_parsers(sub, parents: list, client: argparse.ArgumentParser) -> None:
    """`finetune-data` and `finetune-eval` (`client`: the endpoint options of normjax.cli)."""
    add_parser(sub, parents)
    e = sub.add_parser(
        "finetune-eval",
        parents=parents + [client],
        help="score an OpenAI-compatible model on a finetune-data file (paper Table A5 metrics)",
    )
    e.add_argument("--data", required=True, metavar="FILE", help="a finetune-data .jsonl file (held-out split)")
    e.add_argument("--out", default=None, metavar="DIR", help="write replies.jsonl and metrics.json here")
    e.set_defaults(fn=cmd_finetune_eval)
    b = sub.add_parser(
        "finetune-baselines",
        parents=parents,
        help="shortcut and constant baselines of finetune-data files (a Table A5-style table)",
    )
    b.add_argument("files", nargs="+", metavar="FILE", help="finetune-data .jsonl files")
    b.add_argument("--json", default=None, metavar="PATH", help="also write the scores as JSON here")
    b.set_defaults(fn=cmd_finetune_baselines)


def add_parser(sub, parents: list) -> argparse.ArgumentParser:
    f = sub.add_parser(
        "finetune-data",
        parents=parents,
        help="training / held-out records of the paper's fine-tuning tasks (docs/finetune.md)",
    )
    # several names (or "all") build every task x family x split file in one call, programs compiled once
    f.add_argument(
        "--task",
        required=True,
        nargs="+",
        choices=FINETUNE_TASKS + ("all", SFT_TASK),
        help="one or more, or all (the four tasks); or sft alone: the supervised cold-start corpus (--runs, or --policy oracle)",
    )
    f.add_argument("--family", required=True, nargs="+", choices=FAMILIES + ("all",), help="one or more, or all")
    f.add_argument(
        "--split",
        required=True,
        nargs="+",
        choices=FINETUNE_SPLITS + ("all",),
        help="the family's training norms, or its held-out norms (paper Table A4); one or both, or all",
    )
    f.add_argument(
        "--examples",
        "--n",
        dest="n",
        type=int,
        default=None,
        metavar="N",
        help="number of records (required; sft: the oracle's states, not used with --runs)",
    )
    f.add_argument(
        "--policy",
        choices=HARVEST_POLICIES,
        default="epsilon_blind",  # dataset.DEFAULT_POLICY (tested equal)
        help="the newcomer whose states are harvested (compliant_action, norm_selection); default epsilon_blind: "
        "the oracle, norm-blind at a random 10%% of steps, so the newcomer sometimes violates",
    )
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--batch", type=int, default=16, help="episodes per compiled call")
    f.add_argument(
        "--steps",
        type=int,
        default=INTERACTION_STEPS,
        help="steps per interaction-phase episode (the paper's 200; shorter for quick checks)",
    )
    f.add_argument(
        "--text-only",
        action="store_true",
        help="no frames: text prompts only (default: each record carries its frame, drawn as "
        "llm-eval's VLM mode draws it, written under OUT/images/)",
    )
    f.add_argument(
        "--states-from",
        default=None,
        metavar="RUN_DIR",
        help="compliant_action / norm_selection: the newcomer states of an llm-eval run's interaction "
        "transcripts (replayed and checked), instead of --policy's",
    )
    f.add_argument(
        "--runs",
        nargs="+",
        default=None,
        metavar="RUN_DIR",
        help="sft: llm-eval run directories whose successful, violation-free training-norm episodes make the corpus",
    )
    f.add_argument(
        "--no-progress", action="store_true", help="no progress bar (none either when stderr is not a terminal)"
    )
    f.add_argument(
        "--unbalanced", action="store_true", help="norm_judgment: draw transitions uniformly instead of half violations"
    )
    f.add_argument(
        "--episodes",
        type=int,
        default=None,
        metavar="N",
        help="harvest at least N episodes (in batches of --batch; the paper: 176 per family), records drawn from all",
    )
    f.add_argument(
        "--balance-actions",
        action="store_true",
        help="compliant_action: spread each norm's records evenly over the oracle's action (a constant action scores less)",
    )
    f.add_argument(
        "--out", required=True, metavar="DIR", help="writes TASK_FAMILY_SPLIT.jsonl and .manifest.json per file"
    )
    f.set_defaults(fn=cmd_finetune_data)
    return f


def cmd_finetune_data(args) -> int:
    from normjax.finetune.many import build_many, plan

    if SFT_TASK in args.task:
        return cmd_sft(args)
    if args.runs is not None:
        raise ValueError("--runs serves --task sft; for compliant_action / norm_selection see --states-from")
    if args.n is None:
        raise ValueError("--examples N is required")
    files = plan(args.task, args.family, args.split)  # refusals before tracing
    if args.batch < 1 or args.steps < 1:
        raise ValueError(f"--batch and --steps must be >= 1, got {args.batch} and {args.steps}")
    from tqdm import tqdm

    short = []

    def done(data, meta, manifest):
        print(json.dumps({k: manifest[k] for k in ("records", "counts", "violation_share", "wall_s")}))
        print(f"wrote {data} and {meta}")
        if manifest["records"] < args.n:
            short.append(f"{data.name}: only {manifest['records']} of {args.n} records could be drawn (see {meta})")

    # disable=None: tqdm draws only on a terminal
    with tqdm(
        total=args.n * len(files),
        unit="record",
        desc=f"finetune-data {len(files)} file{'s' if len(files) > 1 else ''}",
        disable=True if args.no_progress else None,
    ) as bar:
        build_many(
            args.task,
            args.family,
            args.split,
            args.n,
            args.out,
            policy=args.policy,
            on_file=done,
            seed=args.seed,
            batch=args.batch,
            steps=args.steps,
            balance=not args.unbalanced,
            balance_actions=args.balance_actions,
            episodes=args.episodes,
            frames=not args.text_only,
            states_from=args.states_from,
            progress=bar.update,
        )
    for line in short:
        print(f"normjax: error: {line}", file=sys.stderr)
    return 1 if short else 0


def cmd_sft(args) -> int:
    """`--task sft`: the cold-start corpus of each family, from llm-eval runs or the oracle."""
    from normjax.finetune import sft
    from normjax.finetune.many import expand
    from normjax.norms import FAMILIES as ALL_FAMILIES

    if args.task != [SFT_TASK]:
        raise ValueError(f"--task sft builds the SFT corpus alone, not with {[t for t in args.task if t != SFT_TASK]}")
    if args.split != ["train"]:
        raise ValueError("--task sft uses the training norms only (paper Table A4): give --split train")
    families = expand(args.family, ALL_FAMILIES, "family")
    other = [
        o
        for o, on in (
            ("--episodes", args.episodes is not None),
            ("--unbalanced", args.unbalanced),
            ("--balance-actions", args.balance_actions),
            ("--states-from", args.states_from),
        )
        if on
    ]
    if other:
        raise ValueError(f"--task sft does not take {', '.join(other)}")
    if args.runs is not None:
        if args.n is not None or args.policy == "oracle" or args.text_only:
            raise ValueError(
                "--task sft --runs takes every kept turn of the runs in their own prompt mode: "
                "no --examples, --policy or --text-only"
            )
        sft.check_runs(args.runs)  # before any work
    elif args.policy != "oracle" or args.n is None:
        raise ValueError("--task sft needs --runs RUN_DIR... (llm-eval runs) or --policy oracle --examples N")
    elif args.n < 1 or args.batch < 1 or args.steps < 1:
        raise ValueError(f"--examples, --batch and --steps must be >= 1, got {args.n}, {args.batch}, {args.steps}")
    # every family's corpus first: an empty one fails the call before any file is written
    built = []
    for family in families:
        if args.runs is not None:
            corpus = sft.from_runs(args.runs, family)
        else:
            corpus = sft.from_oracle(
                family, args.n, seed=args.seed, batch=args.batch, steps=args.steps, frames=not args.text_only
            )
        if not corpus["examples"]:
            print(
                f"normjax: error: the {family} SFT corpus is empty: no turn passed the filters "
                f"({json.dumps(corpus['counts'])}); no file written",
                file=sys.stderr,
            )
            return 1
        built.append(corpus)
    for corpus in built:
        train, validation, manifest = sft.split(corpus, seed=args.seed)
        paths = sft.write(args.out, train, validation, manifest, corpus["frames"])
        print(json.dumps({k: manifest[k] for k in ("examples", "train", "validation", "counts")}))
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def cmd_finetune_eval(args) -> int:
    from normjax.finetune.baselines import table
    from normjax.finetune.evaluate import finetune_eval

    config = client_config(args)
    from normjax.llm.client import EndpointError

    try:
        result = finetune_eval(args.data, config, args.out)
    except EndpointError as e:
        print(f"normjax: error: {e}", file=sys.stderr)
        return 3
    print(json.dumps(result, indent=2))
    print(table({Path(args.data).stem: beside_model(result)}))
    if result["failed"]:
        print(
            f"normjax: warning: {result['failed']} of {result['records']} requests got no reply after their retries "
            f"({result['failed_share']:.1%}; not scored){'; a rerun with the same --out sends them again' if args.out else ''}",
            file=sys.stderr,
        )
    return 0


def beside_model(result: dict) -> dict:
    """{task: {row: score}}: the file's baselines, then the model in the same metric."""
    out = {}
    for task, metrics in result["tasks"].items():
        model = metrics.get("balanced_accuracy", metrics["accuracy"])
        out[task] = dict(result["baselines"].get(task, {}), **{f"model {result['model']}": model})
    return out


def cmd_finetune_baselines(args) -> int:
    from normjax.finetune.baselines import baselines, table
    from normjax.finetune.evaluate import read_records

    columns = {Path(f).stem: baselines(read_records(f)) for f in args.files}
    print(table(columns))
    if args.json:
        Path(args.json).write_text(json.dumps(columns, indent=2) + "\n")
    return 0
