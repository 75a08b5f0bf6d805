"""`normjax play` and `normjax play-export`: their parsers and commands (the command-line layer)."""

from __future__ import annotations

import re
import sys

from normjax import constants as C
from normjax.commands import _norm_list


def add_parsers(sub, parents: list, formatter: type) -> None:
    """Register `play` and `play-export` on the `normjax` parser's subcommands."""
    cache = parents
    _DefaultsFormatter = formatter
    pl = sub.add_parser(
        "play",
        parents=cache,
        formatter_class=_DefaultsFormatter,
        help="a person plays the protocol in the browser (docs/play.md)",
    )
    pl.add_argument(
        "--norms",
        nargs="+",
        default=None,
        metavar="NAME",
        help="norm names (default: all 50); with --assign, the pool the norms are drawn from",
    )
    pl.add_argument("--host", default="127.0.0.1", help="address to bind (another host exposes the study)")
    pl.add_argument("--port", type=int, default=8000)
    pl.add_argument("--seed", type=int, default=0, help="protocol seed (0 = canonical)")
    pl.add_argument(
        "--interaction-steps",
        type=int,
        default=C.INTERACTION_STEPS,
        metavar="N",
        help="length of the interaction phase, 0-200 (the protocol's is 200; shorter for quick checks)",
    )
    pl.add_argument("--out", required=True, help="study directory: one run directory per participant")
    pl.add_argument(
        "--assign",
        type=int,
        default=None,
        metavar="N",
        help="study mode: each new participant gets N norms of the pool, drawn across families, after "
        "agreeing to a consent page (the paper's study: 2)",
    )
    pl.add_argument(
        "--study-seed", type=int, default=0, metavar="S", help="with --assign: the seed of the assignment and --pool"
    )
    pl.add_argument(
        "--pool",
        type=int,
        default=None,
        metavar="N",
        help="with --assign: draw N norms of --norms (default all 50) with the families in the paper's proportions "
        "(25: 6 access, 5 procedure, 8 coordination, 6 allocation)",
    )
    pl.add_argument(
        "--balance",
        choices=("norms", "families"),
        default="norms",
        help="with --assign: play every pool norm equally often (the paper) or every family equally often",
    )
    pl.add_argument(
        "--public-host",
        nargs="+",
        default=[],
        metavar="NAME",
        help="host names the server answers besides loopback (the name participants' browsers use)",
    )
    pl.add_argument(
        "--base-path", default="", metavar="/PATH", help="serve under this sub-path (a reverse proxy that keeps it)"
    )
    pl.add_argument(
        "--id-params",
        nargs="+",
        default=["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"],
        metavar="NAME",
        help="URL parameters stored with the participant; the first one, if present, is the participant id",
    )
    pl.add_argument("--completion-code", default=None, help="shown on the finish page (e.g. Prolific's code)")
    pl.add_argument("--completion-url", default=None, help="a link on the finish page (e.g. Prolific's return URL)")
    pl.add_argument(
        "--questionnaire",
        default=None,
        metavar="FILE",
        help="post-study questions (JSON, docs/play.md); default: the paper's evidence-source question",
    )
    pl.add_argument(
        "--comprehension",
        default=None,
        metavar="FILE",
        help="questions with right answers shown before play (JSON, docs/play.md); play starts once all are right",
    )
    pl.add_argument(
        "--idle-timeout", type=float, default=1800.0, metavar="S", help="close a session idle this long (it resumes)"
    )
    pl.add_argument(
        "--phase-limit",
        type=float,
        default=None,
        metavar="S",
        help="seconds of think time per episode (an interaction phase, a test episode); then its remaining "
        "steps are played as waits (logged, recorded when it fires); default: no limit",
    )
    pl.add_argument("--max-participants", type=int, default=1000, help="new participants accepted in all")
    pl.add_argument(
        "--no-warmup",
        action="store_true",
        help="let participants in before the world's programs are compiled (the first key press then waits)",
    )
    pl.add_argument("--new-per-minute", type=int, default=30, help="new participants accepted per minute")
    pl.add_argument(
        "--consent",
        default=None,
        metavar="FILE",
        help="with --assign: the consent/instructions text (markdown subset; default: OUT/consent.md, "
        "copied from the shipped template on first start)",
    )
    pl.set_defaults(fn=cmd_play)

    px = sub.add_parser(
        "play-export",
        parents=cache,
        formatter_class=_DefaultsFormatter,
        help="gather every participant of a play study into one result (docs/play.md)",
    )
    px.add_argument("--out", required=True, metavar="DIR", help="the study directory (normjax play's --out)")
    px.add_argument(
        "--compare",
        nargs="+",
        default=[],
        metavar="[LABEL=]PATH",
        help="model rows for the combined table: normjax evaluate JSON files or llm-eval run directories",
    )
    px.add_argument(
        "--all-norms",
        action="store_true",
        help="model rows over all their norms (default: only the norms the participants played)",
    )
    px.set_defaults(fn=cmd_play_export)


def cmd_play(args) -> int:
    norms = _norm_list(args.norms)  # before any tracing
    from normjax.protocol import resolve_norms
    from normjax.runtime.runner import INTERACTION_STEPS

    if not 0 <= args.interaction_steps <= INTERACTION_STEPS:
        raise ValueError(f"--interaction-steps must be in 0..{INTERACTION_STEPS}, got {args.interaction_steps}")
    if args.assign is None and args.consent is not None:
        raise ValueError("--consent needs --assign N (the consent page belongs to study mode)")
    if args.assign is None and args.pool is not None:
        raise ValueError("--pool needs --assign N (the pool is what participants' norms are drawn from)")
    if args.base_path and not re.fullmatch(r"(/[A-Za-z0-9_.~-]+)+/?", args.base_path):
        raise ValueError(f"--base-path must look like /study or /a/b, got {args.base_path!r}")
    if args.completion_url and not re.match(r"https?://", args.completion_url):
        raise ValueError(f"--completion-url must start with https:// or http://, got {args.completion_url!r}")
    for name in args.id_params:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
            raise ValueError(f"--id-params: {name!r} is not a parameter name (letters, digits, '_')")
    if args.phase_limit is not None and not args.phase_limit > 0:
        raise ValueError(f"--phase-limit must be a positive number of seconds, got {args.phase_limit}")
    if args.idle_timeout <= 0 or args.max_participants < 1 or args.new_per_minute < 1:
        raise ValueError("--idle-timeout, --max-participants and --new-per-minute must be positive")
    ids = resolve_norms(norms)
    questions = None
    if args.questionnaire is not None:
        from normjax.play.questionnaire import load

        questions = load(args.questionnaire)
    check = None
    if args.comprehension is not None:
        from normjax.play.comprehension import load as load_check

        check = load_check(args.comprehension)
    study = None
    if args.assign is not None:
        from normjax.play.design import draw_pool
        from normjax.play.study import Study

        pool = draw_pool(ids, args.pool, args.study_seed) if args.pool is not None else ids
        study = Study(
            args.out,
            pool,
            args.assign,
            args.study_seed,
            args.consent,
            balance=args.balance,
            seed=args.seed,
            interaction_steps=args.interaction_steps,
        )
    try:
        from normjax.play.server import serve

        serve(
            args.out,
            ids,
            host=args.host,
            port=args.port,
            seed=args.seed,
            interaction_steps=args.interaction_steps,
            study=study,
            public_hosts=tuple(args.public_host),
            base_path=args.base_path.rstrip("/"),
            id_params=tuple(args.id_params),
            completion_code=args.completion_code,
            completion_url=args.completion_url,
            questions=questions,
            idle_timeout=args.idle_timeout,
            phase_limit=args.phase_limit,
            comprehension=check,
            new_per_minute=args.new_per_minute,
            max_participants=args.max_participants,
            warm=not args.no_warmup,
        )
    except ImportError as e:  # Flask or waitress missing: name the extra
        print(f"normjax: error: {e}", file=sys.stderr)
        return 2
    return 0


def cmd_play_export(args) -> int:
    from normjax.play.export import export_study

    summary = export_study(args.out, args.compare, all_norms=args.all_norms)
    print(summary["markdown"])
    for p in summary["incomplete"]:
        print(
            f"normjax: participant {p['participant']} is incomplete (finished {len(p['finished_norms'])} of "
            f"{len(p['norms'])} norms): listed, not counted",
            file=sys.stderr,
        )
    print(f"{len(summary['complete'])} complete participant(s); wrote " + ", ".join(map(str, summary["files"])))
    return 0
