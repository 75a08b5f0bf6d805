"""`normjax table`: its parser and command (the command-line layer)."""

from __future__ import annotations

from pathlib import Path

from normjax.cli_names import TABLE_FORMATS, TABLE_VIEWS


def add_parser(sub, parents: list, formatter: type) -> None:
    """Register `table` on the `normjax` parser's subcommands."""
    cache = parents
    _DefaultsFormatter = formatter
    tb = sub.add_parser(
        "table",
        parents=cache,
        formatter_class=_DefaultsFormatter,
        help="Table 1 with 95%% intervals over any results: evaluate, DQN runs, llm-eval, play (docs/results.md)",
    )
    tb.add_argument(
        "results",
        nargs="+",
        metavar="[LABEL=]PATH",
        help="evaluate JSON files, DQN run directories (or folders of runs: chunks are pooled), llm-eval run "
        "directories, play study directories; one row per result, results with the same label pooled",
    )
    tb.add_argument("--by", choices=TABLE_VIEWS, default=None, help="rows per family or per norm (default: Table 1)")
    tb.add_argument("--format", choices=TABLE_FORMATS, default="markdown", dest="fmt")
    tb.add_argument("--paper", action="store_true", help="add the paper's published rows (Table 1)")
    tb.add_argument(
        "--compare",
        nargs=2,
        action="append",
        default=[],
        metavar=("A", "B"),
        help="paired difference A - B on their common episodes (row labels or 1-based positions); repeatable",
    )
    tb.add_argument("--holm", action="store_true", help="Holm-adjust the p-values of several --compare per cell")
    tb.add_argument(
        "--allow-mixed", action="store_true", help="tabulate results of different protocols, their rows marked *"
    )
    tb.add_argument(
        "--newcomers",
        action="store_true",
        help="also compare the llm-eval rows' newcomer kinds: over-imitation, belief correctness, evidence use, "
        "cost; each module row paired with its model's memory row (docs/results.md)",
    )
    tb.add_argument("--norms", nargs="+", default=None, metavar="NAME", help="only these norms' episodes, in every row")
    tb.add_argument("--figures", default=None, metavar="DIR", help="also write the figures into DIR")
    tb.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the sign flips")
    tb.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples and sign flips per cell")
    tb.add_argument("--out", default=None, metavar="FILE", help="also write the table to FILE")
    tb.set_defaults(fn=cmd_table)


def cmd_table(args) -> int:
    """Exit 2 (with what differs) when the results ran different protocols and --allow-mixed is not given."""
    from normjax.results.table import table_text

    if args.resamples < 100:
        raise ValueError(f"--resamples {args.resamples}: at least 100 (the default is 2000)")
    text = table_text(
        args.results,
        by=args.by or "table1",
        fmt=args.fmt,
        paper=args.paper,
        compare=[tuple(c) for c in args.compare],
        holm=args.holm,
        allow_mixed=args.allow_mixed,
        figures_dir=args.figures,
        seed=args.seed,
        n_resamples=args.resamples,
        norms=args.norms,
        newcomers=args.newcomers,
    )
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0
