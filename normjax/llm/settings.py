"""The `ClientConfig` fields of the endpoint options, validated before any request.

`llm-eval`, `llm-judge` and `finetune-eval` share these options (`normjax.cli._client_options`);
this module imports nothing optional, so a malformed `--extra-body` is refused before the
HTTP client (the `llm` extra) is needed or anything is traced.
"""

from __future__ import annotations

import json


def json_object(text: str | None, option: str) -> dict:
    """A JSON object given on the command line ({} when absent)."""
    if text is None:
        return {}
    try:
        value = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{option} {text!r} is not valid JSON ({e}); allowed: a JSON object") from None
    if not isinstance(value, dict):
        raise ValueError(f"{option} {text!r} is a JSON {type(value).__name__}; allowed: a JSON object")
    return value


def client_settings(args) -> dict:
    """The ClientConfig fields (all but base_url and model) of the parsed endpoint options."""
    return dict(
        concurrency=args.concurrency,
        timeout=args.timeout,
        max_retries=args.max_retries,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        token_param=args.max_tokens_field,
        send_temperature=not args.no_temperature,
        extra_body=json_object(args.extra_body, "--extra-body"),
        max_error_rate=args.max_error_rate,
        error_window=args.error_window,
    )


def client_config(args):
    """The `normjax.llm.client.ClientConfig` of the parsed endpoint options (`--base-url`,
    `--model` and the request settings): built once, the same for every command that sends
    requests.  The options are checked (`client_settings`) before the client is imported."""
    settings = client_settings(args)
    from normjax.llm.client import ClientConfig

    return ClientConfig(base_url=args.base_url, model=args.model, **settings)
