"""SVG through Graphviz's `dot`, with a time limit and a clear message when it is missing."""

from __future__ import annotations

import shutil
import subprocess

DEFAULT_TIMEOUT = 20.0


class SvgRenderError(RuntimeError):
    """Graphviz is missing, failed or took too long; the message says which and what to do."""


def render_svg(dot_text: str, *, timeout: float = DEFAULT_TIMEOUT, dot: str = "dot") -> str:
    """Render DOT text with `dot -Tsvg`."""
    exe = shutil.which(dot)
    if exe is None:
        raise SvgRenderError(
            f"SVG needs Graphviz, but '{dot}' is not on PATH: install Graphviz "
            "(apt-get install graphviz, brew install graphviz, winget install graphviz) "
            "or ask for the mermaid or dot format instead"
        )
    try:
        proc = subprocess.run(
            [exe, "-Tsvg"],
            input=dot_text.encode("utf-8"),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise SvgRenderError(f"Graphviz took longer than {timeout:g} s to draw the graph") from exc
    except OSError as exc:
        raise SvgRenderError(f"could not run Graphviz ({exe}): {exc}") from exc
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip()
        raise SvgRenderError(f"Graphviz failed (exit {proc.returncode}): {detail}")
    return proc.stdout.decode("utf-8")
