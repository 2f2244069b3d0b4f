"""One tool call: validate the arguments, run the function, shape the result or the error.

Every way a call can fail ends here as an `isError` result with an `error_code`; nothing escapes
to the transport, and unexpected exceptions are logged on the server without reaching the client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from mcp_sections.shared.confinement.secrets.masking import mask_result, mask_text
from mcp_sections.shared.framework.argument_errors import invalid_arguments, model_problems
from mcp_sections.shared.framework.arguments import decode_stringified_json, model_schema
from mcp_sections.shared.framework.resources import publish
from mcp_sections.shared.framework.tools import ToolContext, ToolResult, ToolSpec, UserAnswer
from mcp_sections.shared.ground.errors import ErrorCode, ToolFailure
from mcp_sections.shared.ground.install_hints import install_hint

logger = logging.getLogger("mcp_sections.calls")


async def run_tool(
    spec: ToolSpec,
    arguments: dict[str, Any],
    state: Any,
    ctx: ToolContext | None,
    extra: str | None = None,
    answer: UserAnswer | None = None,
    mask_secrets: bool = False,
) -> CallToolResult:
    """Run `spec` on raw JSON arguments and always return a `CallToolResult`.

    `extra` names the pip extra that provides the section's libraries, for the missing-dependency hint;
    `answer` is the user's answer for a tool declared with `asks_user`; `mask_secrets` masks secret values in
    the result (`shared.confinement.secrets.masking`, for sections that show file contents).
    """
    try:
        params = parse_arguments(spec.input_model, arguments, spec.name)
        result = await spec.invoke(params, state, ctx, answer)
    except ToolFailure as failure:
        return mask_result(failure_result(failure)) if mask_secrets else failure_result(failure)
    except ModuleNotFoundError as exc:
        return failure_result(missing_dependency(spec.name, exc, extra))
    except TimeoutError:
        return failure_result(
            ToolFailure(ErrorCode.TIMEOUT, f"{spec.name} took too long; narrow the request and call again.")
        )
    except Exception:
        logger.exception("tool %s raised an unexpected exception", spec.name)
        return failure_result(
            ToolFailure(
                ErrorCode.EXECUTION_FAILED,
                f"{spec.name} failed with an internal error (details are in the server log). "
                "Check the arguments, or retry; report it if it persists.",
            )
        )
    if mask_secrets:
        return mask_result(success_result(result, mask=lambda text: mask_text(text)[0]))
    return success_result(result)


def parse_arguments(model: type[BaseModel], arguments: dict[str, Any], tool: str | None = None) -> BaseModel:
    """Validate raw arguments; a bad call becomes INVALID_INPUT naming each wrong argument once, in `details.fields`
    too (`shared.framework.argument_errors`: the wording of every path, the gateway's forwarded calls included)."""
    decoded = decode_stringified_json(model_schema(model), arguments)
    try:
        return model.model_validate(decoded)
    except ValidationError as exc:
        raise invalid_arguments(model_problems(model, exc, decoded), tool) from None


def missing_dependency(what: str, exc: ModuleNotFoundError, extra: str | None) -> ToolFailure:
    """DEPENDENCY_ERROR naming the command that installs `extra` the way this copy was installed."""
    install = install_hint(extra) if extra else "install it, then restart the server"
    return ToolFailure(
        ErrorCode.DEPENDENCY_ERROR, f"{what} needs the Python package {exc.name!r}, which is not installed; {install}."
    )


def success_result(result: BaseModel, mask: Callable[[str], str] | None = None) -> CallToolResult:
    """The result of a successful call: its text, its extra content, and a `resource_link` for each part it sent by
    reference (kept in the store first, text through `mask`: `shared.framework.resources`)."""
    text = result.render_text() if hasattr(result, "render_text") else result.model_dump_json()
    extra = result.extra_content() if hasattr(result, "extra_content") else []
    links = publish(result.attachments(), mask) if isinstance(result, ToolResult) else []
    return CallToolResult(
        content=[TextContent(type="text", text=text), *extra, *links],
        structured_content=result.model_dump(mode="json"),
    )


def failure_result(failure: ToolFailure) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=f"[{failure.code.value}] {failure.message}")],
        structured_content=failure.payload(),
        is_error=True,
    )
