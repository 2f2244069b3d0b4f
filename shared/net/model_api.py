"""The one client layer of the model APIs the suite calls: sub-agents' models (`shared.agents.providers`),
media_ops' providers (vision, images, 3D jobs) and remote embeddings (`shared.embeddings.remote`).

A `ModelEndpoint` is one API as the operator configured it; it owns
- the base-URL rule: an OpenAI-compatible base URL is used as given (it includes `/v1`: `https://api.openai.com/v1`,
  `http://localhost:11434/v1`); an Anthropic one may be given with or without `/v1` (`https://api.anthropic.com`
  and `https://api.anthropic.com/v1` reach the same `/v1/messages`);
- the endpoint paths (`CHAT_COMPLETIONS`, `MESSAGES`, `EMBEDDINGS`, `IMAGES`, relative to `api_base`);
- the key headers, from the environment variable *named* in the settings: the key goes in a header only, never in
  a log line, an error or a result;
- the mapping of failures to coded `ModelApiFailure`s (a `ToolFailure`), each message naming the setting to fix:

  | answer                                   | code             | says                                       |
  |------------------------------------------|------------------|--------------------------------------------|
  | no connection                            | DEPENDENCY_ERROR | check that it runs, and the base URL       |
  | no answer in time                        | TIMEOUT          | retry, or raise the timeout setting        |
  | HTTP 401 / 403                           | DEPENDENCY_ERROR | check the key in $VAR (the key setting)    |
  | HTTP 404                                 | DEPENDENCY_ERROR | check the base URL and the model name      |
  | HTTP 408 / 429 / 502 / 503 / 504         | EXECUTION_FAILED | busy or unavailable: retry later           |
  | other HTTP 4xx (the request was refused) | EXECUTION_FAILED | the provider's reason, and the model name  |
  | other HTTP 5xx (the service failed)      | DEPENDENCY_ERROR | the provider's reason                      |
  | not a JSON object                        | DEPENDENCY_ERROR | the base URL is not this API               |

  408, 429 and 5xx are `retryable` (the embedding model retries them with backoff).

A `Service` is any remote service as those messages name it (a model API's is `ModelEndpoint.service`; media_ops'
download URLs and web_ops' search providers make their own). Failing to reach one is coded by it alone: no
connection → `Service.unreachable` (DEPENDENCY_ERROR, what to check), no answer in time → `Service.timed_out`
(TIMEOUT, the timeout setting), whether the transport is httpx2 here or the guarded client, whose `Unreachable` /
`TimedOut` (`shared.net.fetch`) `Service.failed` maps by type.

The transport is pluggable: `HttpxSender` (httpx2, for the endpoints the operator configured; a test passes an
`httpx2` mock transport) or `GuardedSender` (the URL guard's `GuardedHttp`, where media_ops confines its
providers and the URLs they answer with: the guard's refusals go on as they are); `SyncClient` makes blocking
calls over one kept-alive httpx2 client (the embedding model's batches run in worker threads).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol
from urllib.parse import urlsplit, urlunsplit

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.net.fetch import TimedOut, Unreachable

if TYPE_CHECKING:  # pragma: no cover
    import httpx2

    from mcp_sections.shared.net.fetch import GuardedHttp

Api = Literal["openai", "anthropic"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"  # `/v1` may be given too: `api_base` adds it once
ANTHROPIC_VERSION = "2023-06-01"
CHAT_COMPLETIONS = "/chat/completions"
MESSAGES = "/messages"  # Anthropic, under `api_base` (…/v1)
EMBEDDINGS = "/embeddings"
IMAGES = "/images/generations"

BUSY_STATUSES = frozenset({408, 429, 502, 503, 504})
RETRYABLE_STATUSES = BUSY_STATUSES | {500}
MAX_REASON = 300


class ModelApiFailure(ToolFailure):
    """A model API call failed; `status` is the HTTP status (None: no answer), `retryable` a transient failure."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(code, message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True)
class Service:
    """A remote service as failure messages name it: `what` at `where` (no credentials), what to check when it cannot
    be reached (`fix`: "check that it runs and [sections.x] base_url"), the setting bounding its answers' time."""

    what: str
    where: str
    fix: str
    timeout_setting: str | None = None

    def unreachable(self, reason: str) -> ModelApiFailure:
        said = f"cannot reach {self.what} at {self.where} ({reason}); {self.fix}."
        return ModelApiFailure(ErrorCode.DEPENDENCY_ERROR, said, retryable=True)

    def timed_out(self, seconds: float) -> ModelApiFailure:
        fix = f"retry, or raise {self.timeout_setting}" if self.timeout_setting else "retry later"
        return ModelApiFailure(
            ErrorCode.TIMEOUT,
            f"{self.what} at {self.where} did not answer in time ({seconds:g} s); {fix}.",
            retryable=True,
        )

    def failed(self, failure: Unreachable | TimedOut) -> ModelApiFailure:
        """The guarded client's failure to reach the service, as the service's: DEPENDENCY_ERROR or TIMEOUT."""
        if isinstance(failure, TimedOut):
            return self.timed_out(failure.seconds)
        return self.unreachable(failure.reason)

    @contextlib.contextmanager
    def reaching(self) -> Iterator[None]:
        """Requests through `GuardedHttp` inside are the service's: its `Unreachable` / `TimedOut` become `failed`;
        any other failure (the URL guard's refusals) goes on as it is."""
        try:
            yield
        except (Unreachable, TimedOut) as failure:
            raise self.failed(failure) from None


class Answer(NamedTuple):
    """What an endpoint answered: status, headers and body as read."""

    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass(frozen=True)
class ModelEndpoint:
    """One model API as configured. `settings` is how messages name its settings: the key names are appended to it
    (`"[gateway.model] "` → `[gateway.model] base_url`; `"[sections.media_ops] vision_"` → `… vision_base_url`)."""

    api: Api
    base_url: str | None
    api_key_env: str | None
    settings: str
    what: str = "the model endpoint"
    timeout_seconds: float = 60.0
    timeout_setting: str | None = None
    key_required: bool = True  # False: an unset key variable sends no key (a local endpoint needs none)
    model_setting: str | None = "model"  # the key naming the model, when the API has one

    @property
    def api_base(self) -> str:
        """The base the endpoint paths go under: as given for OpenAI-compatible APIs; `…/v1` for Anthropic."""
        if self.api == "anthropic":
            root = (self.base_url or ANTHROPIC_BASE_URL).rstrip("/").removesuffix("/v1").rstrip("/")
            return f"{root}/v1"
        return (self.base_url or OPENAI_BASE_URL).rstrip("/")

    def url(self, path: str) -> str:
        return self.api_base + path

    @property
    def shown_base(self) -> str:
        """`api_base` as messages show it: without user:password@."""
        parts = urlsplit(self.api_base)
        if "@" not in parts.netloc:
            return self.api_base
        return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))

    def setting(self, name: str) -> str:
        return f"{self.settings}{name}"

    def _and_model(self) -> str:
        return f" and {self.setting(self.model_setting)}" if self.model_setting else ""

    def api_key(self) -> str | None:
        """The key from the variable named in the settings (None: none configured, or an optional one unset)."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env, "").strip()
        if not key and self.key_required:
            raise ModelApiFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"the key variable {self.api_key_env} is not set in this server's environment; set it where the "
                f"server is started (or change {self.setting('api_key_env')}), then restart it.",
            )
        return key or None

    def headers(self) -> dict[str, str]:
        """JSON request headers with the key: `x-api-key` and the API version for Anthropic, else a bearer token."""
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = self.api_key()
        if self.api == "anthropic":
            headers["anthropic-version"] = ANTHROPIC_VERSION
            if key:
                headers["x-api-key"] = key
        elif key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    # ---- failures ---------------------------------------------------------------------------------------------
    @property
    def service(self) -> Service:
        """This endpoint as failures to reach it name it: its base URL and its base_url and timeout settings."""
        fix = f"check that it runs and {self.setting('base_url')}"
        return Service(self.what, self.shown_base, fix, self.timeout_setting)

    def timed_out(self) -> ModelApiFailure:
        return self.service.timed_out(self.timeout_seconds)

    def unreachable(self, exc: Exception) -> ModelApiFailure:
        return self.service.unreachable(type(exc).__name__)

    def read(self, answer: Answer) -> dict[str, Any]:
        """The JSON object answered, or the coded failure the status or body means."""
        status = answer.status
        if status >= 400:
            raise self._refused(answer)
        try:
            data = json.loads(answer.body)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise ModelApiFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"{self.what} answered something that is not a JSON object; check {self.setting('base_url')} "
                f"(it must be the API's base URL, now {self.shown_base}).",
                status=status,
            )
        return data

    def _refused(self, answer: Answer) -> ModelApiFailure:
        status = answer.status
        retry_after = _seconds(answer.headers.get("retry-after"))
        if status in (401, 403):
            if self.api_key_env:
                fix = f"check the key in ${self.api_key_env} ({self.setting('api_key_env')})"
            else:
                fix = f"set {self.setting('api_key_env')} to the NAME of the variable holding its key"
            return ModelApiFailure(
                ErrorCode.DEPENDENCY_ERROR, f"{self.what} refused the key (HTTP {status}); {fix}.", status=status
            )
        reason = self._reason(answer)
        if status in BUSY_STATUSES:
            return ModelApiFailure(
                ErrorCode.EXECUTION_FAILED,
                f"{self.what} is unavailable (HTTP {status}: {reason}); retry later.",
                status=status,
                retryable=True,
                retry_after=retry_after,
            )
        if status == 404:
            return ModelApiFailure(
                ErrorCode.DEPENDENCY_ERROR,
                f"{self.what} answered HTTP 404: {reason}; check {self.setting('base_url')} (now {self.shown_base})"
                f"{self._and_model()}.",
                status=status,
            )
        if status < 500:
            return ModelApiFailure(
                ErrorCode.EXECUTION_FAILED,
                f"{self.what} refused the request (HTTP {status}): {reason}; check the request{self._and_model()}.",
                status=status,
            )
        return ModelApiFailure(
            ErrorCode.DEPENDENCY_ERROR,
            f"{self.what} failed (HTTP {status}): {reason}; retry, or check the service{self._and_model()}.",
            status=status,
            retryable=status in RETRYABLE_STATUSES,
            retry_after=retry_after,
        )

    def _reason(self, answer: Answer) -> str:
        """The provider's own error message, short, with the key masked should the provider echo it."""
        text = answer.body.decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error", data)
            message = error.get("message") if isinstance(error, dict) else error
            text = str(message if message is not None else error)
        text = " ".join(text.split())[:MAX_REASON] or "no reason given"
        key = os.environ.get(self.api_key_env, "").strip() if self.api_key_env else ""
        return text.replace(key, "***") if key else text


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


# ---- transports ---------------------------------------------------------------------------------------------------
class Sender(Protocol):
    """Sends one request and returns what was answered; failures of the transport itself are coded."""

    async def send(
        self, endpoint: ModelEndpoint, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> Answer: ...


class HttpxSender:
    """httpx2 straight to an endpoint the operator configured; `transport` replaces the network (tests)."""

    def __init__(self, transport: httpx2.AsyncBaseTransport | None = None) -> None:
        self.transport = transport

    async def send(
        self, endpoint: ModelEndpoint, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> Answer:
        import httpx2

        try:
            async with httpx2.AsyncClient(timeout=endpoint.timeout_seconds, transport=self.transport) as client:
                response = await client.request(method, url, headers=headers, content=content)
        except httpx2.TimeoutException:
            raise endpoint.timed_out() from None
        except httpx2.HTTPError as exc:
            raise endpoint.unreachable(exc) from None
        return Answer(response.status_code, response.headers, response.content)


class GuardedSender:
    """Through the URL guard's `GuardedHttp`, reading at most `max_bytes`; failing to reach the endpoint is coded by
    `Service.failed` (DEPENDENCY_ERROR naming its base_url setting, TIMEOUT its timeout setting)."""

    def __init__(self, http: GuardedHttp, max_bytes: int) -> None:
        self.http = http
        self.max_bytes = max_bytes

    async def send(
        self, endpoint: ModelEndpoint, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> Answer:
        with endpoint.service.reaching():
            response = await self.http.request(method, url, headers=headers, content=content, max_bytes=self.max_bytes)
        return Answer(response.status, response.headers, response.body)


async def call_json(
    endpoint: ModelEndpoint, sender: Sender, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`method` `endpoint.url(path)` with a JSON body (or none); the JSON object answered, else a coded failure."""
    content = json.dumps(body).encode() if body is not None else None
    answer = await sender.send(endpoint, method, endpoint.url(path), endpoint.headers(), content)
    return endpoint.read(answer)


class SyncClient:
    """Blocking JSON calls to one endpoint over one kept-alive httpx2 client; `transport` replaces the network."""

    def __init__(self, endpoint: ModelEndpoint, transport: Any = None) -> None:
        import httpx2

        self.endpoint = endpoint
        self._client = httpx2.Client(headers=endpoint.headers(), timeout=endpoint.timeout_seconds, transport=transport)

    def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx2

        try:
            response = self._client.post(self.endpoint.url(path), content=json.dumps(body).encode())
        except httpx2.TimeoutException:
            raise self.endpoint.timed_out() from None
        except httpx2.HTTPError as exc:
            raise self.endpoint.unreachable(exc) from None
        return self.endpoint.read(Answer(response.status_code, response.headers, response.content))

    def close(self) -> None:
        self._client.close()
