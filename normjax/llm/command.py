"""The `llm-*` commands (the command-line layer): `llm-eval` (an LLM/VLM newcomer through the
protocol, with or without a normative module), `llm-judge` (an LLM judge's scores of its
beliefs) and `llm-beliefs` (Figure 4b / 4c, and with --observer the same events weighed by
what the ideal observer could learn from them).  `normjax.cli` registers them with
`add_parsers`; docs/llm.md is the user's account.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

from normjax import constants as C
from normjax.cli_names import NEWCOMERS
from normjax.commands import _distractor, _norm_list, _print_programs
from normjax.llm.settings import client_config


def add_parsers(sub, cache: list, distract: list, client_options, formatter: type) -> None:
    """Register llm-eval, llm-judge and llm-beliefs; `client_options(temperature, help)` builds
    the endpoint options' parent parser (`normjax.cli`), shared with the fine-tuning commands."""
    m = sub.add_parser(
        "llm-eval",
        parents=cache + distract + [client_options()],
        formatter_class=formatter,
        help="run the protocol with an LLM/VLM newcomer (docs/llm.md)",
    )
    m.add_argument("--norms", nargs="+", default=None, metavar="NAME", help="norm names (default: all 50)")
    m.add_argument("--text-only", action="store_true", help="no images: the state as text only")
    m.add_argument("--known-norm", action="store_true", help="state the true norm in the system prompt")
    m.add_argument(
        "--newcomer",
        choices=NEWCOMERS,
        default="memory",
        help="memory: the paper's newcomer; the others wrap it with one of the debate study's normative modules "
        "(docs/llm.md 'Normative modules')",
    )
    m.add_argument(
        "--module-base-url",
        default=None,
        help="endpoint of the normative module's model (default: --base-url; API key from NORMJAX_MODULE_API_KEY, "
        "else the main one's)",
    )
    m.add_argument("--module-model", default=None, help="the normative module's model (default: --model)")
    m.add_argument("--seed", type=int, default=0, help="protocol seed (0 = canonical)")
    m.add_argument(
        "--interaction-steps",
        type=int,
        default=C.INTERACTION_STEPS,
        metavar="N",
        help=f"length of the interaction phase, 0-{C.INTERACTION_STEPS} (the protocol's is "
        f"{C.INTERACTION_STEPS}; shorter for quick checks, 0 skips it)",
    )
    m.add_argument(
        "--allow-mixed-endpoint",
        action="store_true",
        help="resume a run directory whose episodes came from another endpoint, model or sampling",
    )
    m.add_argument(
        "--judge-scores",
        default=None,
        metavar="FILE",
        help="import LLM-judge scores (JSONL) for the run's judge_prompts.jsonl",
    )
    m.add_argument("--out", required=True, help="run directory (transcripts, results.json); resumes if it exists")
    m.set_defaults(fn=cmd_llm_eval)

    judge_client = client_options(0.0, "sampling temperature of the judge (0: its most likely score)")
    j = sub.add_parser(
        "llm-judge",
        parents=cache + [judge_client],
        formatter_class=formatter,
        help="score a run's interaction beliefs with an LLM judge (docs/llm.md)",
    )
    j.add_argument("--run", required=True, metavar="DIR", help="an llm-eval run directory")
    j.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="the judge's replies, JSON Lines; resumed if it exists (default: DIR/judge_scores.jsonl)",
    )
    j.set_defaults(fn=cmd_llm_judge)

    b = sub.add_parser(
        "llm-beliefs",
        parents=cache,
        formatter_class=formatter,
        help="belief correctness over the interaction and belief change after events (paper "
        "Figure 4b, 4c; docs/llm.md)",
    )
    which = b.add_mutually_exclusive_group(required=True)
    which.add_argument("--run", metavar="DIR", help="an llm-eval run directory (or one play participant's folder)")
    which.add_argument(
        "--play-study",
        metavar="DIR",
        help="a normjax play study folder: its complete participants pooled, each scored by llm-judge "
        "--run DIR/<id> (needs --observer)",
    )
    b.add_argument(
        "--observer",
        action="store_true",
        help="also weigh each event by what the ideal observer could learn from it: belief change per bit "
        "(observer_beliefs.json, observer_beliefs.png; docs/llm.md)",
    )
    b.add_argument(
        "--eps",
        type=float,
        default=0.0,
        metavar="E",
        help="with --observer: the observer's sanction-flag noise rate, in [0, 0.5)",
    )
    b.add_argument(
        "--scores",
        default=None,
        metavar="FILE",
        help="judge scores or replies, JSON Lines (default: DIR/judge_scores.jsonl, from llm-judge)",
    )
    b.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="where beliefs.json and the figures go (default: DIR/beliefs; a play study: its folder)",
    )
    b.add_argument(
        "--replies-after",
        type=int,
        default=1,
        metavar="N",
        help="compare the belief before an event with the one after the N-th reply that follows it",
    )
    b.add_argument(
        "--allow-missing",
        action="store_true",
        help="analyse although some beliefs have no usable score (they are listed; see docs/llm.md)",
    )
    b.set_defaults(fn=cmd_llm_beliefs)


def cmd_llm_eval(args) -> int:
    norms = _norm_list(args.norms)  # before any tracing
    distractor = _distractor(args)
    config = client_config(args)
    module = {}
    if args.module_base_url is not None or args.module_model is not None:
        if args.newcomer == "memory":
            print(
                "normjax: error: --module-base-url / --module-model need a normative module "
                "(--newcomer direct_edit, infer_edit, theory_of_mind or contrastive)",
                file=sys.stderr,
            )
            return 2
        module = dict(base_url=args.module_base_url or config.base_url, model=args.module_model or config.model)
    from normjax.llm.client import API_KEY_ENV, EndpointError
    from normjax.llm.evaluate import RunIncomplete, llm_eval
    from normjax.llm.modules import MODULE_KEY_ENV
    from normjax.protocol import format_table

    try:
        result = llm_eval(
            config,
            args.out,
            norms,
            text_only=args.text_only,
            known_norm=args.known_norm,
            seed=args.seed,
            interaction_steps=args.interaction_steps,
            allow_mixed_endpoint=args.allow_mixed_endpoint,
            judge_scores=args.judge_scores,
            newcomer=args.newcomer,
            module_config=dataclasses.replace(config, **module, api_key_env=(MODULE_KEY_ENV, *API_KEY_ENV))
            if module
            else None,
            **distractor,
        )
    except (EndpointError, RunIncomplete) as e:  # a failed endpoint is never a result
        print(f"normjax: error: {e}", file=sys.stderr)
        return 3
    print(format_table(result))
    print(f"llm: {json.dumps(result['llm'])}; wrote {Path(args.out) / 'results.json'}")
    judged = result.get("belief_accuracy")
    if judged and not judged["complete"]:  # an imported curve with gaps is no result: say so, exit 1
        where = (
            f"line {judged['errors'][0]['line']}: {judged['errors'][0]['error']}"
            if judged["errors"]
            else f"{len(judged['missing'])} belief(s) and {len(judged['missing_norms'])} norm(s) without a score"
        )
        print(
            f"normjax: error: the judge scores are incomplete ({len(judged['errors'])} unusable line(s); {where}); "
            "belief_accuracy in results.json is marked complete: false",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_llm_judge(args) -> int:
    """Exit 0: every belief scored; 1: some judge replies unusable; 3: the endpoint failed."""
    from normjax.analysis.judge_run import JudgeIncomplete, judge_run

    config = client_config(args)
    from normjax.llm.client import EndpointError

    try:
        summary = judge_run(args.run, config, args.out)
    except EndpointError as e:
        print(f"normjax: error: {e}", file=sys.stderr)
        return 3
    except JudgeIncomplete as e:
        for err in e.summary["errors"][:10]:
            print(f"normjax: {e.summary['scores']} line {err['line']} ({err['id']}): {err['error']}", file=sys.stderr)
        print(f"normjax: error: {e}", file=sys.stderr)
        return 1
    acc = summary["belief_accuracy"]
    print(
        f"judged {summary['requested']} belief(s) now, {summary['skipped']} already scored; {summary['usable']} of "
        f"{summary['prompts']} usable; final mean score {_mean(acc['final_score'].values())} over "
        f"{len(acc['norms'])} norm(s)"
    )
    where = summary["results"] or "no results.json in the run: not stored"
    print(f"wrote {summary['scores']}; belief_accuracy: {where}")
    return 0


def _mean(values) -> str:
    values = list(values)
    return f"{sum(values) / len(values):.2f}" if values else "n/a"


def _play_participants(study) -> list[tuple[str, str]]:
    """[(id, folder)] of a play study's complete participants (as `normjax play-export` counts them)."""
    from normjax.play.export import participant, participant_dirs

    if not Path(study).is_dir():
        raise ValueError(f"--play-study {study}: not a directory")
    dirs = participant_dirs(study)
    if not dirs:
        raise ValueError(f"--play-study {study}: no play participant in it (folders with a run.json of policy human)")
    done = [(d.name, str(d)) for d in dirs if participant(d)["status"] == "complete"]
    if not done:
        raise ValueError(f"--play-study {study}: none of its {len(dirs)} participant(s) is complete")
    return done


def cmd_llm_beliefs(args) -> int:
    from normjax.analysis.belief_analysis import analyse_beliefs, format_summary

    if args.play_study is not None and not args.observer:
        raise ValueError("--play-study needs --observer (one participant's Figure 4b / 4c: --run DIR/<id>)")
    if args.eps != 0.0 and not args.observer:
        raise ValueError(f"--eps={args.eps} needs --observer")
    if not 0.0 <= args.eps < 0.5:  # before anything is read or written, for a run and a study alike
        raise ValueError(f"--eps={args.eps} is invalid; allowed: 0 <= eps < 0.5")
    if args.play_study is not None:
        from normjax.analysis.observer_alignment import analyse_observer, format_table

        if args.scores is not None:
            raise ValueError("--scores names one run's file; a play study reads each DIR/<id>/judge_scores.jsonl")
        out = Path(args.out) if args.out else Path(args.play_study)
        participants = _play_participants(args.play_study)
        result = analyse_observer(
            participants,
            None,
            out,
            replies_after=args.replies_after,
            allow_missing=args.allow_missing,
            eps=args.eps,
            label=f"play study {Path(args.play_study).name} ({len(participants)} participants)",
        )
        print(format_table(result))
        print(f"wrote {out / 'observer_beliefs.json'} and {', '.join(result['figures'])}")
        _print_programs()
        return 0
    out = Path(args.out) if args.out else Path(args.run) / "beliefs"
    result = analyse_beliefs(
        args.run, args.scores, out, replies_after=args.replies_after, allow_missing=args.allow_missing
    )
    print(format_summary(result))
    print(f"wrote {out / 'beliefs.json'} and {', '.join(result['figures'])}")
    if args.observer:
        from normjax.analysis.observer_alignment import analyse_observer, format_table

        obs = analyse_observer(
            [("", args.run)],
            args.scores,
            out,
            replies_after=args.replies_after,
            allow_missing=args.allow_missing,
            eps=args.eps,
        )
        print(format_table(obs))
        print(f"wrote {out / 'observer_beliefs.json'} and {', '.join(obs['figures'])}")
        _print_programs()
    return 0
