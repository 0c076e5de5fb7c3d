"""Folding ranges: programs, declarations written over several lines, and comment blocks."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from qvr_core.syntax import ast


class FoldKind(StrEnum):
    REGION = "region"
    COMMENT = "comment"


@dataclass(frozen=True)
class FoldingRange:
    start_line: int  # 0-based, inclusive
    end_line: int  # 0-based, inclusive
    kind: FoldKind


def folding_ranges(module: ast.Module, text: str) -> list[FoldingRange]:
    """Ranges that span at least two lines, sorted by start line."""
    ranges = [*_declaration_folds(module), *_comment_folds(module, text)]
    return sorted(ranges, key=lambda r: (r.start_line, r.end_line))


def _declaration_folds(module: ast.Module) -> list[FoldingRange]:
    folds = []
    for decl in module.decls:
        if decl.span.end_line > decl.span.start_line:
            folds.append(FoldingRange(decl.span.start_line, decl.span.end_line, FoldKind.REGION))
        if isinstance(decl, ast.ProgramDecl):
            for step in decl.steps:
                if step.span.end_line > step.span.start_line:
                    folds.append(
                        FoldingRange(step.span.start_line, step.span.end_line, FoldKind.REGION)
                    )
    return folds


def _comment_folds(module: ast.Module, text: str) -> list[FoldingRange]:
    """Runs of two or more comments, each alone on its line, on consecutive lines."""
    folds: list[FoldingRange] = []
    run: list[int] = []
    for comment in module.comments:
        line_start = comment.span.start - comment.span.start_col
        if text[line_start : comment.span.start].strip():
            continue  # a trailing comment after code
        line = comment.span.start_line
        if run and line != run[-1] + 1:
            _close(run, folds)
        run.append(line)
    _close(run, folds)
    return folds


def _close(run: list[int], folds: list[FoldingRange]) -> None:
    if len(run) >= 2:
        folds.append(FoldingRange(run[0], run[-1], FoldKind.COMMENT))
    run.clear()
