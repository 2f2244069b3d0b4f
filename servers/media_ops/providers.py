"""The remote services media_ops asks: a vision model (describe), an images API (generate) and a 3D job API.

Each is a small interface over `shared.net.model_api` (base URLs, key headers, coded failures naming the setting to
fix: a provider that cannot be reached is DEPENDENCY_ERROR naming its base_url, one too slow TIMEOUT naming
provider_timeout_seconds, and so are the URLs they answer with) sent through the section's GuardedHttp (the shared
URL guard: the configured endpoint's host is allowed, anything else it points to is checked like any URL). Their
answers are untrusted: JSON shapes are checked, images decoded and size-checked by the caller, 3D files must be GLB.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

import anyio

from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.net.model_api import (
    CHAT_COMPLETIONS,
    IMAGES,
    MESSAGES,
    Api,
    GuardedSender,
    ModelEndpoint,
    Service,
    call_json,
)

if TYPE_CHECKING:
    from mcp_sections.shared.net.fetch import GuardedHttp, HttpResponse

Progress = Callable[[float, float | None, str], Awaitable[None]]
MAX_PROVIDER_JSON = 80_000_000  # base64 images arrive inside JSON
GLB_MAGIC = b"glTF"
SETTINGS = "[sections.media_ops] "
TIMEOUT_SETTING = f"{SETTINGS}provider_timeout_seconds"  # bounds every request to a provider (its GuardedHttp's)


async def download(http: GuardedHttp, url: str, what: str, setting: str, **options: Any) -> HttpResponse:
    """GET a URL a provider answered with (a generated file); failing to reach it is coded as a provider's
    (`shared.net.model_api.Service`): DEPENDENCY_ERROR naming the provider's setting, TIMEOUT its timeout."""
    parts = urlsplit(url)
    where = f"{parts.scheme}://{parts.netloc}"  # not its path and query: a signed URL's token stays out of messages
    fix = f"check that this server can reach it (the provider set in {SETTINGS}{setting} pointed to it)"
    with Service(what, where, fix, TIMEOUT_SETTING).reaching():
        return await http.get(url, **options)


def _unavailable(what: str, setting: str) -> ToolFailure:
    return ToolFailure(
        ErrorCode.DEPENDENCY_ERROR,
        f"{what} needs a provider: set {SETTINGS}{setting} (or MCP_SECTIONS_MEDIA_OPS_"
        f"{setting.upper()}) and restart the server. See config.example.toml.",
    )


def _endpoint(
    api: Api, base_url: str | None, api_key_env: str | None, prefix: str, what: str, *, model: bool = True
) -> ModelEndpoint:
    """A provider's endpoint, its settings named `[sections.media_ops] <prefix>base_url` and so on."""
    return ModelEndpoint(
        api,
        base_url,
        api_key_env,
        f"{SETTINGS}{prefix}",
        what=what,
        timeout_setting=TIMEOUT_SETTING,
        model_setting="model" if model else None,
    )


@dataclass(frozen=True)
class VisionModel:
    """describe_image's model: OpenAI-compatible chat completions or Anthropic messages, with the image inline."""

    provider: Api
    model: str
    base_url: str | None
    api_key_env: str | None

    @property
    def endpoint(self) -> ModelEndpoint:
        return _endpoint(self.provider, self.base_url, self.api_key_env, "vision_", "the vision model")

    async def describe(self, http: GuardedHttp, prompt: str, image_b64: str, mime: str, max_tokens: int) -> str:
        sender = GuardedSender(http, MAX_PROVIDER_JSON)
        if self.provider == "anthropic":
            body = self._asking(
                max_tokens,
                {"type": "image", "source": {"type": "base64", "media_type": mime, "data": image_b64}},
                {"type": "text", "text": prompt},
            )
            data = await call_json(self.endpoint, sender, "POST", MESSAGES, body)
            parts = data.get("content")
            texts = [p.get("text") for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
        else:
            body = self._asking(
                max_tokens,
                {"type": "text", "text": prompt},
                {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{image_b64}"}},
            )
            data = await call_json(self.endpoint, sender, "POST", CHAT_COMPLETIONS, body)
            choices = data.get("choices")
            message = choices[0].get("message", {}) if isinstance(choices, list) and choices else {}
            texts = [message.get("content")] if isinstance(message, dict) else []
        text = "\n".join(t for t in texts if isinstance(t, str)).strip()
        if not text:
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the vision model returned no text.")
        return text

    def _asking(self, max_tokens: int, *content: dict[str, Any]) -> dict[str, Any]:
        """The request body of one user message made of `content` parts (both APIs take this shape)."""
        return {"model": self.model, "max_tokens": max_tokens, "messages": [{"role": "user", "content": list(content)}]}


@dataclass(frozen=True)
class ImageGenerator:
    """An OpenAI-compatible images API: `POST {base}/images/generations` answering b64_json or URLs."""

    base_url: str
    model: str
    api_key_env: str | None

    async def generate(self, http: GuardedHttp, prompt: str, size: str, n: int, max_download: int) -> list[bytes]:
        endpoint = _endpoint("openai", self.base_url, self.api_key_env, "image_", "the images API")
        url = endpoint.url(IMAGES)
        body = {"model": self.model, "prompt": prompt, "n": n, "size": size, "response_format": "b64_json"}
        data = await call_json(endpoint, GuardedSender(http, MAX_PROVIDER_JSON), "POST", IMAGES, body)
        items = data.get("data")
        if not isinstance(items, list) or not items:
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the images API returned no images.")
        images: list[bytes] = []
        for item in items[:n]:
            if isinstance(item, dict) and isinstance(item.get("b64_json"), str):
                try:
                    images.append(base64.b64decode(item["b64_json"], validate=True))
                except ValueError:
                    raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the images API returned invalid base64.") from None
            elif isinstance(item, dict) and isinstance(item.get("url"), str):
                location = urljoin(url, item["url"])  # checked by the guard
                response = await download(http, location, "a generated image", "image_base_url", max_bytes=max_download)
                if response.status != 200 or response.truncated:
                    raise ToolFailure(
                        ErrorCode.EXECUTION_FAILED, f"downloading a generated image failed ({response.status})."
                    )
                images.append(response.body)
            else:
                raise ToolFailure(
                    ErrorCode.EXECUTION_FAILED, "the images API returned an item without b64_json or url."
                )
        return images


@dataclass(frozen=True)
class MeshJobs:
    """A hosted image/text-to-3D job API (TRELLIS / Hunyuan3D style): submit, poll, download a GLB.

    `POST {base}/jobs` with {"prompt"} or {"image": data URI} → {"id"}; `GET {base}/jobs/{id}` →
    {"status": queued|running|succeeded|failed|canceled, "progress"?: 0..1, "result_url"?, "error"?};
    `DELETE {base}/jobs/{id}` cancels."""

    base_url: str
    api_key_env: str | None
    poll_seconds: float
    timeout_seconds: float

    async def run(
        self, http: GuardedHttp, request: dict[str, Any], max_download: int, progress: Progress | None
    ) -> bytes:
        endpoint = _endpoint("openai", self.base_url, self.api_key_env, "mesh_", "the 3D service", model=False)
        sender = GuardedSender(http, MAX_PROVIDER_JSON)
        headers = endpoint.headers()
        base = endpoint.api_base
        submitted = await call_json(endpoint, sender, "POST", "/jobs", request)
        job = submitted.get("id")
        if not isinstance(job, str) or not job.replace("-", "").replace("_", "").isalnum() or len(job) > 200:
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the 3D service returned no usable job id.")
        finished = False
        try:
            with anyio.fail_after(self.timeout_seconds):
                state = await self._ended(endpoint, sender, job, progress)
                finished = True
        except TimeoutError:
            raise ToolFailure(
                ErrorCode.TIMEOUT,
                f"the 3D job {job} did not finish within {self.timeout_seconds:g} s; it was cancelled "
                "([sections.media_ops] mesh_job_timeout_seconds).",
            ) from None
        finally:
            if not finished:  # timed out or the client cancelled the call: stop the job at the provider
                with anyio.CancelScope(shield=True), anyio.move_on_after(10), contextlib.suppress(ToolFailure):
                    await http.request("DELETE", f"{base}/jobs/{job}", headers=headers)
        status = state.get("status")
        if status != "succeeded":
            reason = str(state.get("error") or status)[:300]
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"the 3D job {job} {status}: {reason}")
        location = state.get("result_url")
        if not isinstance(location, str):
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the 3D job succeeded without a result_url.")
        response = await download(
            http,
            urljoin(f"{base}/", location),
            "the 3D result",
            "mesh_base_url",
            headers=headers,
            max_bytes=max_download,
        )
        if response.status != 200 or response.truncated:
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, f"downloading the 3D result failed (HTTP {response.status}).")
        if not response.body.startswith(GLB_MAGIC):
            raise ToolFailure(ErrorCode.EXECUTION_FAILED, "the 3D result is not a binary glTF (GLB) file.")
        return response.body

    async def _ended(
        self, endpoint: ModelEndpoint, sender: GuardedSender, job: str, progress: Progress | None
    ) -> dict[str, Any]:
        """The job's state once it ended (succeeded, failed or canceled), polled every `poll_seconds`."""
        while True:
            state = await call_json(endpoint, sender, "GET", f"/jobs/{job}")
            status = state.get("status")
            fraction = state.get("progress")
            if progress is not None and isinstance(fraction, int | float):
                await progress(float(min(max(fraction, 0.0), 1.0)), 1.0, f"3D job {job}: {status}")
            if status in ("succeeded", "failed", "canceled"):
                return state
            await anyio.sleep(self.poll_seconds)


def vision_model(settings: Any) -> VisionModel | None:
    if not settings.vision_provider or not settings.vision_model:
        return None
    return VisionModel(
        settings.vision_provider, settings.vision_model, settings.vision_base_url, settings.vision_api_key_env
    )


def image_generator(settings: Any) -> ImageGenerator:
    if not settings.image_base_url:
        raise _unavailable("generating images", "image_base_url")
    return ImageGenerator(settings.image_base_url, settings.image_model, settings.image_api_key_env)


def mesh_jobs(settings: Any) -> MeshJobs:
    if not settings.mesh_base_url:
        raise _unavailable("generating 3D assets", "mesh_base_url")
    return MeshJobs(
        settings.mesh_base_url,
        settings.mesh_api_key_env,
        settings.poll_interval_seconds,
        settings.mesh_job_timeout_seconds,
    )
