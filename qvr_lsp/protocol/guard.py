"""The guard every handler wears: a failure is logged and answered with an empty result.

A bug in one feature must cost one answer, never the server or the user's
diagnostics (the rust-analyzer rule). pygls would already turn an exception
in a request into an error response, but it shows a message box for
notifications and says nothing useful in the log; the guard logs the
traceback with the method's name and returns what the client can use.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar

log = logging.getLogger("qvr_lsp")

F = TypeVar("F", bound=Callable[..., Any])


def guarded(empty: Callable[[], Any] | None = None) -> Callable[[F], F]:
    """Wrap a sync or async handler; on an exception log it and return `empty()` (or None).

    `empty` is a factory (`list`, `lambda: CompletionList(False, [])`) so a
    mutable default is never shared between answers.
    """

    def decorate(handler: F) -> F:
        name = getattr(handler, "__qualname__", repr(handler))

        def fallback(exc: BaseException) -> Any:
            log.error("%s failed: %s", name, exc, exc_info=exc)
            try:
                return empty() if empty is not None else None
            except Exception:  # a broken factory must not escape either
                log.exception("empty answer of %s failed", name)
                return None

        if asyncio.iscoroutinefunction(handler):

            @functools.wraps(handler)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await handler(*args, **kwargs)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    return fallback(exc)

            return async_wrapper  # type: ignore[return-value]  # wraps handler: same signature

        @functools.wraps(handler)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            except Exception as exc:
                return fallback(exc)

        return wrapper  # type: ignore[return-value]  # wraps handler: same signature

    return decorate
