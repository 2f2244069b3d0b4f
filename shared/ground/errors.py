"""Error codes, the one exception a tool raises to fail a call on purpose, and the base of the suite's own errors."""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Codes carried by every tool error (`structuredContent.error_code`)."""

    INVALID_INPUT = "INVALID_INPUT"
    NOT_FOUND = "NOT_FOUND"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    TIMEOUT = "TIMEOUT"
    EXECUTION_FAILED = "EXECUTION_FAILED"
    VALIDATION_FAILED = "VALIDATION_FAILED"
    DEPENDENCY_ERROR = "DEPENDENCY_ERROR"
    DATABASE_ERROR = "DATABASE_ERROR"
    MAX_LIMIT_EXCEEDED = "MAX_LIMIT_EXCEEDED"


class SuiteError(Exception):
    """Base of the suite's internal errors (never a tool result): the message tells the operator what to fix."""


class ConfigError(SuiteError):
    """The configuration (a file, a variable, a flag, the own state) cannot be used; the message says which and how
    to fix it. The CLI prints it and exits with status 2."""


class ToolFailure(Exception):
    """A failure the caller can act on: becomes an `isError` result with a code and a fix-it message.

    `message` must say what was wrong and how to change the call; it reaches the model verbatim,
    so it never carries secrets, tracebacks or paths outside the configured roots.
    """

    def __init__(self, code: ErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def payload(self) -> dict[str, Any]:
        """The structured error body, in the seed's `{success, error, error_code}` shape."""
        body: dict[str, Any] = {"success": False, "error_code": self.code.value, "error": self.message}
        if self.details:
            body["details"] = self.details
        return body


def invalid_input(message: str, **details: Any) -> ToolFailure:
    return ToolFailure(ErrorCode.INVALID_INPUT, message, **details)


def not_found(message: str, **details: Any) -> ToolFailure:
    return ToolFailure(ErrorCode.NOT_FOUND, message, **details)


def permission_denied(message: str, **details: Any) -> ToolFailure:
    return ToolFailure(ErrorCode.PERMISSION_DENIED, message, **details)


def validation_failed(message: str, **details: Any) -> ToolFailure:
    return ToolFailure(ErrorCode.VALIDATION_FAILED, message, **details)


def limit_exceeded(message: str, **details: Any) -> ToolFailure:
    return ToolFailure(ErrorCode.MAX_LIMIT_EXCEEDED, message, **details)
