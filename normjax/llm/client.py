"""An async client for OpenAI-compatible chat endpoints (vLLM, llama.cpp server, ...).

    client = ChatClient(ClientConfig(base_url="http://127.0.0.1:8000/v1", model="Qwen/Qwen3-VL-8B-Instruct"))
    async with client:
        result = await client.chat(messages)      # ChatResult; never raises

One request is ``POST {base_url}/chat/completions`` with ``model``,
``messages``, ``temperature`` and ``max_tokens`` (paper §4.1 / appendix: 0.7
and 4048).  For endpoints that want other fields (hosted reasoning models),
``token_param="max_completion_tokens"`` renames the token limit,
``send_temperature=False`` leaves the temperature out, and ``extra_body``
adds fields to every request.  Messages are OpenAI chat messages;
`user_message` builds one with text and PNG images as content parts (base64
``data:image/png`` URLs).

Failing loudly, so that a broken endpoint never becomes a result:

* `preflight()` sends one minimal chat completion (the run's own request
  fields) before any episode; HTTP 400 / 401 / 403 / 404, or any failure
  after the retries, raises `EndpointError` naming the URL, the model and the
  status (with the models the server lists, when it lists any);
* every request's final outcome enters a window of the last ``error_window``
  requests; `check_error_rate()` raises `EndpointError` once more than
  ``max_error_rate`` of them failed, or at once after an HTTP 401, 403 or
  404 (the agent calls it after each step).

Robustness, so that a run never crashes because of its endpoint:

* at most ``concurrency`` requests are in flight (an `asyncio.Semaphore`,
  held only while a request is on the wire, not during back-off);
* every attempt is bounded by ``timeout`` seconds in total (connect, send,
  wait, read), enforced with `asyncio.wait_for` on top of httpx's own timeouts;
* HTTP 429 and 5xx, timeouts, connection errors and malformed response
  bodies are retried up to ``max_retries`` times with exponential back-off
  (``backoff * 2**attempt`` seconds, capped at ``max_backoff``, with +-25%
  jitter); a ``Retry-After`` header in seconds is a minimum wait (not capped;
  its jitter only adds, up to 25%); other HTTP errors (400, 401, 404, ...)
  are not retried;
* after the retries `chat` returns a `ChatResult` with ``error`` set and no
  text, and ``attempt_errors`` lists why each attempt failed; the caller
  records them and the newcomer waits.

Token accounting reads ``usage.prompt_tokens`` / ``usage.completion_tokens``
of successful responses (0 when a server does not report usage).

The API key comes only from the environment: ``NORMJAX_LLM_API_KEY``, else
``OPENAI_API_KEY`` (``api_key_env``: a normative module's client reads
``NORMJAX_MODULE_API_KEY`` first); without one no Authorization header is sent (local
servers need none).  It is never a command-line argument and never written to
transcripts.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import dataclasses
import os
import random
import time

try:
    import httpx
except ImportError as e:  # pragma: no cover - exercised by a subprocess test
    raise ImportError('normjax.llm.client needs httpx, an optional dependency: pip install "normjax[llm]"') from e

from normjax.cli_names import TOKEN_PARAMS

API_KEY_ENV = ("NORMJAX_LLM_API_KEY", "OPENAI_API_KEY")
# Fields the client writes itself; extra_body may not replace them.
OWN_FIELDS = ("model", "messages", "temperature") + TOKEN_PARAMS
# Statuses that no retry or later request can fix: one stops the run at once.
FATAL_STATUSES = (401, 403, 404)
PREFLIGHT_PROMPT = "This is a connection check. Reply with the word OK."


class EndpointError(RuntimeError):
    """The endpoint cannot serve the run (preflight failed, or too many requests fail)."""


@dataclasses.dataclass(frozen=True)
class ClientConfig:
    """Endpoint and request settings (validated on construction)."""

    base_url: str
    model: str
    temperature: float = 0.7
    max_tokens: int = 4048
    concurrency: int = 64
    timeout: float = 120.0
    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 30.0
    token_param: str = "max_tokens"  # or "max_completion_tokens" (OpenAI reasoning models)
    send_temperature: bool = True
    extra_body: dict = dataclasses.field(default_factory=dict)
    max_error_rate: float = 0.2  # stop once more than this share of the last error_window requests failed
    error_window: int = 100
    api_key_env: tuple = API_KEY_ENV  # the environment variables the API key is read from, first set wins

    def __post_init__(self):
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ValueError("model must be a non-empty name")
        if self.concurrency < 1 or self.max_tokens < 1:
            raise ValueError(f"concurrency and max_tokens must be >= 1, got {self.concurrency}, {self.max_tokens}")
        if self.timeout <= 0 or self.max_retries < 0 or self.backoff < 0 or self.max_backoff < 0:
            raise ValueError("timeout must be > 0, and max_retries, backoff and max_backoff >= 0")
        if not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.token_param not in TOKEN_PARAMS:
            raise ValueError(f"token_param {self.token_param!r} is invalid; allowed: {', '.join(TOKEN_PARAMS)}")
        if not isinstance(self.extra_body, dict):
            raise ValueError(f"extra_body must be a JSON object, got {type(self.extra_body).__name__}")
        clash = sorted(set(self.extra_body) & set(OWN_FIELDS))
        if clash:
            raise ValueError(
                f"extra_body may not set {', '.join(clash)} (use the client's own options); it may set any other field"
            )
        if not 0.0 <= self.max_error_rate <= 1.0 or self.error_window < 1:
            raise ValueError(
                f"max_error_rate must be in [0, 1] and error_window >= 1, got "
                f"{self.max_error_rate}, {self.error_window}"
            )

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def payload(self, messages: list[dict], max_tokens: int | None = None) -> dict:
        """The request body: model, messages, sampling fields and extra_body."""
        body = {"model": self.model, "messages": messages}
        if self.send_temperature:
            body["temperature"] = self.temperature
        body[self.token_param] = self.max_tokens if max_tokens is None else max_tokens
        return {**body, **self.extra_body}


@dataclasses.dataclass
class ChatResult:
    """One chat call after retries: the reply text, or an error."""

    text: str | None = None
    error: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    retries: int = 0  # attempts beyond the first
    latency_s: float = 0.0  # wall time of the whole call, back-off included
    finish_reason: str | None = None
    attempt_errors: list = dataclasses.field(default_factory=list)  # why each failed attempt failed
    status: int | None = None  # HTTP status of the last attempt (None: no response)


def png_data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def user_message(text: str, images: list[bytes] | tuple = ()) -> dict:
    """A user message: plain text, or text followed by PNG images as content parts."""
    if not images:
        return {"role": "user", "content": text}
    parts = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": png_data_url(p)}} for p in images]
    return {"role": "user", "content": parts}


def api_key(names=API_KEY_ENV) -> str | None:
    """The API key from the environment (NORMJAX_LLM_API_KEY, then OPENAI_API_KEY, by default)."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _Fatal(Exception):
    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _read_completion(response) -> ChatResult:
    """ChatResult from a response (raises _Retryable / _Fatal on errors)."""
    status = response.status_code
    if status == 429 or status >= 500:
        raise _Retryable(f"HTTP {status}: {response.text[:200]}", _retry_after(response))
    if status >= 400:
        raise _Fatal(f"HTTP {status}: {response.text[:300]}", status)
    try:
        body = response.json()
        choice = body["choices"][0]
        content = choice["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as e:
        raise _Retryable(f"malformed response body ({type(e).__name__}): {response.text[:200]}") from None
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is not None and not isinstance(content, str):
        raise _Retryable(f"malformed message content of type {type(content).__name__}")
    usage = body.get("usage") or {}

    def count(name):
        v = usage.get(name, 0) if isinstance(usage, dict) else 0
        return int(v) if isinstance(v, (int, float)) else 0

    return ChatResult(
        text=content or "",
        tokens_in=count("prompt_tokens"),
        tokens_out=count("completion_tokens"),
        finish_reason=choice.get("finish_reason") if isinstance(choice, dict) else None,
    )


class ChatClient:
    """Async chat client; use as `async with ChatClient(cfg) as c: await c.chat(msgs)`."""

    def __init__(self, config: ClientConfig, transport=None):
        self.config = config
        self._transport = transport  # tests may inject an httpx transport
        self._client: httpx.AsyncClient | None = None
        self._sem: asyncio.Semaphore | None = None
        self.stats = {"requests": 0, "attempts": 0, "retries": 0, "errors": 0, "tokens_in": 0, "tokens_out": 0}
        self.recent = collections.deque(maxlen=config.error_window)  # True per failed request
        self._last_error = "none"
        self._fatal: str | None = None  # the first 401 / 403 / 404 answer

    async def __aenter__(self) -> ChatClient:
        c = self.config
        headers = {"Content-Type": "application/json"}
        key = api_key(c.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=c.concurrency, max_keepalive_connections=c.concurrency)
        self._client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(c.timeout), limits=limits, transport=self._transport
        )
        self._sem = asyncio.Semaphore(c.concurrency)
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        c = self.config
        delay = min(c.max_backoff, c.backoff * (2**attempt)) * random.uniform(0.75, 1.25)
        if retry_after is not None:  # the server's minimum: jitter only adds to it
            delay = max(delay, retry_after * random.uniform(1.0, 1.25))
        return delay

    async def _attempt(self, payload: dict) -> ChatResult:
        async with self._sem:
            self.stats["attempts"] += 1
            try:
                response = await asyncio.wait_for(
                    self._client.post(self.config.url, json=payload), timeout=self.config.timeout
                )
            except (TimeoutError, httpx.TimeoutException):
                raise _Retryable(f"timeout after {self.config.timeout:g}s") from None
            except httpx.TransportError as e:  # connection refused / reset, protocol errors
                raise _Retryable(f"connection error: {type(e).__name__}: {e}") from None
        return _read_completion(response)

    async def chat(self, messages: list[dict], **overrides) -> ChatResult:
        """One chat completion with retries; returns a ChatResult and never raises.

        `overrides` replace request fields (e.g. ``temperature=0``).
        """
        if self._client is None:
            raise RuntimeError("use ChatClient inside 'async with'")
        result = await self._call({**self.config.payload(messages), **overrides})
        self.recent.append(result.error is not None)
        return result

    async def _call(self, payload: dict) -> ChatResult:
        c = self.config
        t0 = time.perf_counter()
        self.stats["requests"] += 1
        result, failed, status = None, [], None
        for attempt in range(c.max_retries + 1):
            try:
                result = await self._attempt(payload)
                result.retries, status = attempt, 200
                break
            except _Fatal as e:
                failed.append(str(e))
                result, status = ChatResult(error=str(e), retries=attempt), e.status
                break
            except _Retryable as e:
                failed.append(str(e))
                if attempt == c.max_retries:
                    result = ChatResult(error=f"{e} (gave up after {attempt + 1} attempts)", retries=attempt)
                    break
                self.stats["retries"] += 1
                await asyncio.sleep(self._delay(attempt, e.retry_after))
            except Exception as e:
                failed.append(f"client failure: {type(e).__name__}: {e}")
                result = ChatResult(error=failed[-1], retries=attempt)
                break
        result.latency_s = time.perf_counter() - t0
        result.attempt_errors, result.status = failed, status
        if result.error is not None:
            self.stats["errors"] += 1
            self._last_error = result.error
            if status in FATAL_STATUSES:
                self._fatal = result.error
        self.stats["tokens_in"] += result.tokens_in
        self.stats["tokens_out"] += result.tokens_out
        return result

    def check_error_rate(self) -> None:
        """Raise `EndpointError` if more than ``max_error_rate`` of the last ``error_window`` requests failed."""
        c = self.config
        if self._fatal is not None:
            raise EndpointError(
                f"a request to {c.url} with model {c.model!r} failed with {self._fatal[:200]}; the run "
                "stopped (finished episodes are kept and a rerun resumes)"
            )
        failed = sum(self.recent)
        if failed > c.max_error_rate * c.error_window:
            raise EndpointError(
                f"{failed} of the last {len(self.recent)} requests to {c.url} (model {c.model!r}) failed, more than "
                f"{c.max_error_rate:.0%} of {c.error_window}; the run stopped (finished episodes are kept and a rerun "
                f"resumes). Last error: {self._last_error}"
            )

    async def preflight(self) -> None:
        """One minimal chat completion before any episode; raises `EndpointError` if it fails."""
        if self._client is None:
            raise RuntimeError("use ChatClient inside 'async with'")
        c = self.config
        res = await self._call(
            c.payload([{"role": "user", "content": PREFLIGHT_PROMPT}], max_tokens=min(c.max_tokens, 16))
        )
        if res.error is None:
            return
        hint = {
            401: f"check the API key ({' or '.join(c.api_key_env)})",
            403: "the API key may not use this model",
            404: "check --base-url (most servers need the /v1 suffix) and --model",
            400: "the server refused the request fields (see --max-tokens-field, --no-temperature, --extra-body)",
        }.get(res.status, "check that the server runs and is reachable at this URL")
        listed = await self._listed_models()
        models = f"; the server lists the models: {', '.join(listed[:20])}" if listed else ""
        status = f"HTTP {res.status}" if res.status else "no response"
        raise EndpointError(
            f"preflight request to {c.url} with model {c.model!r} failed ({status}): "
            f"{res.error}{models}. {hint[0].upper() + hint[1:]}."
        )

    async def _listed_models(self) -> list[str]:
        """The model ids of ``GET {base_url}/models`` (empty if the server lists none)."""
        try:
            response = await asyncio.wait_for(
                self._client.get(self.config.base_url.rstrip("/") + "/models"), timeout=self.config.timeout
            )
            data = response.json().get("data", []) if response.status_code == 200 else []
            return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
        except Exception:
            return []


__all__ = [
    "API_KEY_ENV",
    "ChatClient",
    "ChatResult",
    "ClientConfig",
    "EndpointError",
    "FATAL_STATUSES",
    "TOKEN_PARAMS",
    "api_key",
    "png_data_url",
    "user_message",
]
