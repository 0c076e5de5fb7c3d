"""A program step's option written as a flag (`[over]`): its key with no value.

Every quivers grammar from 0.11 on parses a bare key in a step's option block, and
quivers' compiler (0.25.2, `dsl/compiler/programs.py` and `dsl/parser/program_steps.py`)
gives it one meaning: the key is checked against the set its step kind reads (a `sample`
reads `over` and `iid_over`, an `observe` also `via`, a `marginalize` `over` and
`reduction`; any other key is refused, with the close ones), and then only values are
decoded (a name or a list of names for the axes and `via`, a name for `reduction`), so a
flag decodes to nothing and the step compiles exactly as if the option were not written:
no axes, no `via`, the exact `logsumexp` reduction.

qvr types it so. A flag whose key the step reads is dropped from the step's options, so
the resolved model, and with it the runtime and the exports, is the model without it;
because a dropped option is most likely a value left out, the checker says so
(QVR315, a warning, with a fix that removes it) instead of ignoring it silently. A flag
whose key the step does not read is what the valued option would be there (QVR303 for an
unknown key, QVR306 where the key belongs to another kind of step), and `constraint`,
qvr's own option that quivers does not have, needs its value (QVR304, with each value as a
fix).
"""

from __future__ import annotations

from qvr_core.builtins.constraints import STEP_CONSTRAINTS
from qvr_core.check.context import Context
from qvr_core.check.model import CONSTRAINT_OPTION
from qvr_core.syntax import ast
from qvr_core.text import rules
from qvr_core.text.diagnostics import Fix, TextEdit
from qvr_core.text.span import Span

#: The step kinds a key applies to, where it does not apply to all three: the kinds whose
#: valued option `ModelChecker._options` reads without a QVR306. A flag elsewhere is sent
#: to that same check, so both forms say the same where a key does not belong.
_ONLY_ON: dict[str, tuple[str, ...]] = {
    "via": ("observe",),
    "reduction": ("marginalize",),
    CONSTRAINT_OPTION: ("sample",),
}


def flag_applies(key: str, kind: str) -> bool:
    """Whether a step of `kind` reads option `key` (a key of `STEP_OPTIONS`), so that its
    flag is typed here; otherwise the valued option's check reports where it belongs."""
    return kind in _ONLY_ON.get(key, (kind,))


def flag_option(ctx: Context, option: ast.Option, options: tuple[ast.Option, ...]) -> None:
    """Report a flag of a key the step reads (`flag_applies`); the caller drops it, so
    the step is checked, run and exported as if it were not written, as quivers compiles
    it. `options` is the step's whole block, for the fix that removes the flag."""
    key = option.key.text
    if key == CONSTRAINT_OPTION:
        ctx.report(
            rules.INVALID_OPTION_VALUE,
            "constraint names the set a latent's value lies in: give it one of "
            f"{', '.join(STEP_CONSTRAINTS)}",
            option.span,
            fixes=tuple(
                Fix(f"Change to constraint={word}", (TextEdit(option.span, f"constraint={word}"),))
                for word in STEP_CONSTRAINTS
            ),
        )
        return
    ctx.report(
        rules.OPTION_WITHOUT_VALUE,
        f"[{key}] gives {key}= no value, so the step runs as if it were not written (as "
        f"quivers compiles it): write {key}=... or remove it",
        option.span,
        fixes=(Fix(f"Remove [{key}]", (TextEdit(_removal(ctx, option, options), ""),)),),
    )


def _removal(ctx: Context, option: ast.Option, options: tuple[ast.Option, ...]) -> Span:
    """The text to delete so that the block stays well formed: the whole ` [key]` when it
    is the only option, else the option with the comma that joins it to a neighbour."""
    text = ctx.text
    at = next(i for i, o in enumerate(options) if o is option)
    if len(options) > 1:
        if at > 0:
            return ctx.lines.span(options[at - 1].span.end, option.span.end)
        return ctx.lines.span(option.span.start, options[1].span.start)
    start = option.span.start
    while start > 0 and text[start - 1] in " \t":
        start -= 1
    end = option.span.end
    while end < len(text) and text[end] in " \t,":
        end += 1
    if start > 0 and text[start - 1] == "[" and end < len(text) and text[end] == "]":
        start -= 1
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        return ctx.lines.span(start, end + 1)
    return option.span
