"""The parser: every construct, exact spans, recovery, layout, limits and error wording."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from qvr_core.syntax import ast, parse
from qvr_core.syntax.parser import MAX_DEPTH, MAX_TREE_DEPTH
from qvr_core.text.span import Span
from tests.syntax.helpers import assert_consistent, source

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def parse_clean(text: str) -> ast.Module:
    result = parse(text)
    assert result.diagnostics == ()
    assert_consistent(text, result)
    return result.module


def only_decl(text: str) -> ast.Decl:
    module = parse_clean(text)
    assert len(module.decls) == 1
    return module.decls[0]


def messages(text: str) -> list[str]:
    result = parse(text)
    assert_consistent(text, result)
    return [d.message for d in result.diagnostics]


def one_error(text: str) -> tuple[str, str]:
    """The only diagnostic of `text`: its message and the text it covers."""
    result = parse(text)
    assert_consistent(text, result)
    assert len(result.diagnostics) == 1, result.diagnostics
    d = result.diagnostics[0]
    return d.message, source(text, d.span)


# ------------------------------------------------------------------ objects


def test_name_then_name_is_a_missing_star_not_a_size() -> None:
    message, covered = one_error("object Pair : Hidden Other")
    assert message == "expected '*' or end of line after 'Hidden', found name 'Other'"
    assert covered == "Other"


def test_sized_object_has_exact_spans() -> None:
    text = "object Token : FinSet 256"
    decl = only_decl(text)
    assert isinstance(decl, ast.ObjectDecl)
    assert decl.name == ast.Name("Token", Span(7, 12, 0, 7, 0, 12))
    body = decl.body
    assert isinstance(body, ast.SizedObject)
    assert body.constructor.text == "FinSet"
    assert body.size == 256
    assert source(text, body.size_span) == "256"
    assert source(text, body.span) == "FinSet 256"
    assert decl.span == Span(0, len(text), 0, 0, 0, len(text))
    assert decl.doc is None


def test_product_object_is_a_typeref() -> None:
    text = "object State : Hidden * Hidden * Cell"
    decl = only_decl(text)
    assert isinstance(decl.body, ast.TypeRef)
    assert [f.text for f in decl.body.factors] == ["Hidden", "Hidden", "Cell"]
    assert source(text, decl.body.span) == "Hidden * Hidden * Cell"


def test_single_name_object_is_an_alias() -> None:
    decl = only_decl("object Alias : Hidden")
    assert isinstance(decl.body, ast.TypeRef)
    assert [f.text for f in decl.body.factors] == ["Hidden"]


def test_missing_size_keeps_the_object() -> None:
    text = "object Token : FinSet\nobject B : Real 3"
    result = parse(text)
    assert [d.name.text for d in result.module.decls] == ["Token", "B"]
    body = result.module.decls[0].body
    assert isinstance(body, ast.SizedObject)
    assert (body.size, body.size_span) == (None, None)
    assert len(result.diagnostics) == 1
    assert result.diagnostics[0].message.startswith("missing size: FinSet takes a positive integer")
    assert source(text, result.diagnostics[0].span) == "FinSet"


def test_a_size_given_by_a_name_is_a_constructor_application() -> None:
    # quivers' grammar takes `FinSet N` with N an identifier (a size parameter)
    result = parse("object Token : FinSet n")
    assert not result.diagnostics
    body = result.module.decls[0].body
    assert isinstance(body, ast.ObjCtor)
    assert [a.raw for a in body.args] == ["n"]


@pytest.mark.parametrize("size", ["0", "2.5", "-3", "1e3"])
def test_bad_size_is_reported_and_kept_as_none(size: str) -> None:
    text = f"object Token : FinSet {size}"
    result = parse(text)
    body = result.module.decls[0].body
    assert isinstance(body, ast.SizedObject)
    assert body.size is None
    assert source(text, body.size_span) == size
    (d,) = result.diagnostics
    assert d.message == f"the size of object Token must be a positive integer, found '{size}'"
    assert source(text, d.span) == size


def test_huge_size_is_too_large_not_a_crash() -> None:
    text = "object Token : FinSet " + "9" * 5000
    message, covered = one_error(text)
    assert message.startswith("the size of object Token is too large (5000 digits;")
    assert covered == "9" * 5000


# ---------------------------------------------------------------- morphisms


def test_morphism_with_options_and_family() -> None:
    text = "morphism cell : Embedded * Hidden -> Hidden [role=kernel, scale=0.1] ~ Normal"
    decl = only_decl(text)
    assert isinstance(decl, ast.MorphismDecl)
    assert decl.name.text == "cell"
    assert [f.text for f in decl.dom.factors] == ["Embedded", "Hidden"]
    assert source(text, decl.dom.span) == "Embedded * Hidden"
    assert [f.text for f in decl.cod.factors] == ["Hidden"]
    assert source(text, decl.options_span) == "[role=kernel, scale=0.1]"
    role, scale = decl.options
    assert (role.key.text, role.value.kind, role.value.value) == ("role", "name", "kernel")
    assert source(text, role.span) == "role=kernel"
    assert (scale.value.kind, scale.value.raw, scale.value.value) == ("float", "0.1", 0.1)
    assert source(text, scale.value.span) == "0.1"
    assert decl.family is not None and decl.family.text == "Normal"
    assert source(text, decl.family.span) == "Normal"
    assert decl.span == Span(0, len(text), 0, 0, 0, len(text))


def test_morphism_without_options_or_family() -> None:
    text = "morphism trans : State3 -> State3"
    decl = only_decl(text)
    assert isinstance(decl, ast.MorphismDecl)
    assert (decl.options, decl.options_span, decl.family) == ((), None, None)
    assert source(text, decl.span) == text


@pytest.mark.parametrize(
    ("written", "kind", "value"),
    [
        ("linear", "name", "linear"),
        ("true", "bool", True),
        ("false", "bool", False),
        ("4", "int", 4),
        ("-4", "int", -4),
        ("0.1", "float", 0.1),
        ("1e-3", "float", 1e-3),
        ("-2.5", "float", -2.5),
        (".5", "float", 0.5),
    ],
)
def test_option_values(written: str, kind: str, value: object) -> None:
    text = f"morphism m : A -> B [k={written}]"
    decl = only_decl(text)
    (option,) = decl.options
    assert (option.value.kind, option.value.raw, option.value.value) == (kind, written, value)
    assert type(option.value.value) is type(value)
    assert source(text, option.value.span) == written


def test_option_block_may_span_lines_with_comments() -> None:
    text = (
        "morphism head : Latent -> HeadOut [\n"
        "    role=kernel,   # the kind of morphism\n"
        "    replicate=4,\n"
        "    scale=0.1,\n"
        "] ~ Normal\n"
        "object After : Real 2\n"
    )
    module = parse_clean(text)
    decl, after = module.decls
    assert [o.key.text for o in decl.options] == ["role", "replicate", "scale"]
    assert decl.options_span is not None
    assert (decl.options_span.start_line, decl.options_span.end_line) == (0, 4)
    assert source(text, decl.span).endswith("] ~ Normal")
    assert after.name.text == "After"
    assert [c.text for c in module.comments] == ["# the kind of morphism"]


def test_empty_options_block() -> None:
    decl = only_decl("morphism m : A -> B []")
    assert decl.options == ()
    assert decl.options_span is not None


# -------------------------------------------------------------------- lets


def let_expr(expr: str) -> tuple[str, ast.Expr]:
    text = f"let x = {expr}"
    decl = only_decl(text)
    assert isinstance(decl, ast.LetDecl)
    assert source(text, decl.span) == text
    return text, decl.expr


def test_compose_is_left_associative() -> None:
    text, expr = let_expr("a >> b >> c")
    assert isinstance(expr, ast.Compose) and isinstance(expr.left, ast.Compose)
    assert source(text, expr.left.span) == "a >> b"
    assert source(text, expr.right.span) == "c"
    assert source(text, expr.span) == "a >> b >> c"


def test_tensor_binds_tighter_than_compose() -> None:
    text, expr = let_expr("a >> b @ c @ d")
    assert isinstance(expr, ast.Compose)
    assert isinstance(expr.right, ast.Tensor) and isinstance(expr.right.left, ast.Tensor)
    assert source(text, expr.right.span) == "b @ c @ d"
    assert source(text, expr.right.left.span) == "b @ c"


def test_parentheses_leave_no_node() -> None:
    text, expr = let_expr("(a >> b) @ (c)")
    assert isinstance(expr, ast.Tensor)
    assert isinstance(expr.left, ast.Compose)
    assert source(text, expr.left.span) == "a >> b"
    assert isinstance(expr.right, ast.NameRef)
    assert source(text, expr.right.span) == "c"
    assert source(text, expr.span) == "(a >> b) @ (c)"


def test_calls_with_positional_literal_and_keyword_arguments() -> None:
    text, expr = let_expr("fan(p, q) >> stack(b, 3) >> scan(cell, reverse=true) >> identity(T)")
    calls = []
    while isinstance(expr, ast.Compose):
        calls.append(expr.right)
        expr = expr.left
    calls.append(expr)
    identity, scan, stack, fan = calls
    assert isinstance(fan, ast.Call) and fan.callee.text == "fan"
    assert [a.name.text for a in fan.args] == ["p", "q"]
    assert source(text, fan.span) == "fan(p, q)"
    assert isinstance(stack.args[1], ast.Literal)
    assert (stack.args[1].kind, stack.args[1].value) == ("int", 3)
    (reverse,) = scan.kwargs
    assert (reverse.key.text, reverse.value.kind, reverse.value.value) == ("reverse", "bool", True)
    assert source(text, reverse.span) == "reverse=true"
    assert [a.name.text for a in identity.args] == ["T"]


def test_call_without_arguments() -> None:
    _, expr = let_expr("f()")
    assert isinstance(expr, ast.Call)
    assert (expr.args, expr.kwargs) == ((), ())


def test_positional_after_keyword_is_an_error() -> None:
    message, covered = one_error("let x = scan(reverse=true, c)")
    assert message == "positional argument after a keyword argument: put it before 'reverse='"
    assert covered == "c"


# ---------------------------------------------------------------- programs

PROGRAM = """\
program cell (x, state) : Embedded * State -> State
    let (h_prev, c_prev) = state
    sample i_pre <- gate_i(x, h_prev)

    # a comment inside the body
    observe y : Token * Token <- head(x) >> other
    let c = -f * c_prev + min(i, 1 - f) / 2.5
    return (h, c)
export cell
"""


def test_program_header_params_and_spans() -> None:
    module = parse_clean(PROGRAM)
    program, export = module.decls
    assert isinstance(program, ast.ProgramDecl)
    assert [p.text for p in program.params] == ["x", "state"]
    assert [f.text for f in program.dom.factors] == ["Embedded", "State"]
    assert [f.text for f in program.cod.factors] == ["State"]
    assert source(PROGRAM, program.header_span) == PROGRAM.splitlines()[0]
    assert source(PROGRAM, program.span).startswith("program cell")
    assert source(PROGRAM, program.span).endswith("return (h, c)")
    assert isinstance(export, ast.ExportDecl) and export.name.text == "cell"
    assert source(PROGRAM, export.span) == "export cell"


def test_program_steps() -> None:
    program = parse_clean(PROGRAM).decls[0]
    destructure, sample, observe, let, ret = program.steps
    assert isinstance(destructure, ast.DestructureStep)
    assert [t.text for t in destructure.targets] == ["h_prev", "c_prev"]
    assert isinstance(destructure.value, ast.Var)

    assert isinstance(sample, ast.SampleStep) and sample.target.text == "i_pre"
    assert isinstance(sample.source, ast.Call)
    assert all(isinstance(a, ast.NameRef) for a in sample.source.args)
    assert source(PROGRAM, sample.span) == "sample i_pre <- gate_i(x, h_prev)"

    assert isinstance(observe, ast.ObserveStep)
    assert [f.text for f in observe.declared.factors] == ["Token", "Token"]
    assert isinstance(observe.source, ast.Compose)

    assert isinstance(let, ast.LetStep)
    total = let.value
    assert isinstance(total, ast.Binary) and total.op == "+"
    product, quotient = total.left, total.right
    assert isinstance(product, ast.Binary) and product.op == "*"
    assert isinstance(product.left, ast.Unary)
    assert source(PROGRAM, product.left.span) == "-f"
    assert isinstance(quotient, ast.Binary) and quotient.op == "/"
    apply = quotient.left
    assert isinstance(apply, ast.Apply) and apply.func.text == "min"
    assert isinstance(apply.args[1], ast.Binary)
    number = quotient.right
    assert isinstance(number, ast.Number) and (number.value, number.raw) == (2.5, "2.5")

    assert isinstance(ret, ast.ReturnStep)
    assert [v.text for v in ret.values] == ["h", "c"]


def test_program_without_params_and_single_return() -> None:
    text = "program p : A -> B\n    sample h <- f\n    return h\n"
    program = only_decl(text)
    assert program.params is None
    assert [type(s).__name__ for s in program.steps] == ["SampleStep", "ReturnStep"]
    assert program.steps[1].values[0].text == "h"


def test_empty_params_are_an_empty_tuple() -> None:
    program = only_decl("program p () : A -> B\n    return x")
    assert program.params == ()


def test_body_ends_at_the_next_column_zero_line() -> None:
    text = "program p : A -> B\n    return x\n# trailing comment\n\nobject C : Real 1\n"
    program, obj = parse_clean(text).decls
    assert len(program.steps) == 1
    assert program.span.end_line == 1
    assert obj.name.text == "C"


def test_arithmetic_precedence_and_unary_minus() -> None:
    text = "program p : A -> B\n    let y = 1 - -x * 2 + 3\n    return y"
    let = only_decl(text).steps[0]
    # ((1 - ((-x) * 2)) + 3)
    assert let.value.op == "+"
    left = let.value.left
    assert left.op == "-" and isinstance(left.left, ast.Number)
    assert left.right.op == "*" and isinstance(left.right.left, ast.Unary)
    assert source(text, left.right.span) == "-x * 2"


# ---------------------------------------------------------------- examples


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.qvr")), ids=lambda p: p.name)
def test_examples_parse_without_diagnostics(path: Path) -> None:
    module = parse_clean(path.read_text(encoding="utf-8"))
    assert any(isinstance(d, ast.ProgramDecl) for d in module.decls)
    assert any(isinstance(d, ast.ExportDecl) for d in module.decls)


def test_vanilla_example_structure() -> None:
    module = parse_clean((EXAMPLES / "vanilla_rnn_lm.qvr").read_text(encoding="utf-8"))
    kinds = [type(d).__name__ for d in module.decls]
    assert kinds == ["ObjectDecl"] * 3 + ["MorphismDecl"] * 3 + [
        "LetDecl",
        "ProgramDecl",
        "ExportDecl",
    ]
    program = module.decls[7]
    assert [type(s).__name__ for s in program.steps] == ["SampleStep", "ObserveStep", "ReturnStep"]


# ---------------------------------------------------------------- recovery


def test_three_errors_three_diagnostics_and_the_rest_survives() -> None:
    text = (
        "object Token : FinSet 256\n"
        "object Hidden Real 64\n"  # error 1
        "morphism cell : Token * Hidden [role=kernel] ~ Normal\n"  # error 2
        "morphism head : Token -> Token [role=kernel] ~ Categorical\n"
        "let backbone = head >>\n"  # error 3
        "let other = head >> head\n"
        "export other\n"
    )
    result = parse(text)
    assert_consistent(text, result)
    assert [d.span.start_line for d in result.diagnostics] == [1, 2, 4]
    assert [d.name.text for d in result.module.decls] == ["Token", "head", "other", "other"]


def test_a_bad_step_costs_only_that_step() -> None:
    text = (
        "program p : A -> B\n"
        "    sample h <- backbone\n"
        "    observe y : Token lm_head(h)\n"
        "    let z = h +\n"
        "    return y\n"
    )
    result = parse(text)
    assert_consistent(text, result)
    assert [d.span.start_line for d in result.diagnostics] == [2, 3]
    (program,) = result.module.decls
    assert [type(s).__name__ for s in program.steps] == ["SampleStep", "ReturnStep"]
    assert program.span.end_line == 4  # the bad lines still belong to the program


def test_bad_header_still_reports_body_errors() -> None:
    text = "program p : A ->\n    sample h <-\n    return h\nobject C : Real 1\n"
    result = parse(text)
    assert [d.span.start_line for d in result.diagnostics] == [0, 1]
    assert [d.name.text for d in result.module.decls] == ["C"]


def test_unclosed_bracket_does_not_swallow_the_next_declaration() -> None:
    text = "morphism m : A -> B [role=kernel,\n    scale=0.1\nobject C : Real 3\n"
    result = parse(text)
    assert_consistent(text, result)
    (d,) = result.diagnostics
    assert d.message == "unexpected end of line: expected ',' or ']' after '0.1'"
    assert source(text, d.span) == "0.1"
    (related,) = d.related
    assert source(text, related.span) == "["
    assert [x.name.text for x in result.module.decls] == ["C"]


def test_unclosed_call_in_a_step_keeps_the_next_step() -> None:
    text = "program p : A -> B\n    sample h <- f(a,\n    return h\n"
    result = parse(text)
    assert len(result.diagnostics) == 1
    assert [type(s).__name__ for s in result.module.decls[0].steps] == ["ReturnStep"]


def test_garbage_head_keeps_its_indented_lines_quiet() -> None:
    text = "progam p : A -> B\n    sample h <- f\n    return h\n"
    message, covered = one_error(text)
    assert message.startswith("expected a declaration ('object', 'morphism', 'let', 'program'")
    assert covered == "progam"


# -------------------------------------------------------- error wording


@pytest.mark.parametrize(
    ("text", "message", "covered"),
    [
        (
            "morphism cell : Embedded * Hidden [role=kernel] ~ Normal",
            "expected '->' after the domain of morphism cell, found '['",
            "[",
        ),
        ("let x = a >>", "unexpected end of line: expected an expression after '>>'", ">>"),
        ("let x = a >> >> b", "expected an expression after '>>', found '>>'", ">>"),
        (
            "morphism m : A -> B [role=kernel scale=0.1]",
            "expected ',' or ']' after 'kernel', found name 'scale'",
            "scale",
        ),
        # quivers 0.15 on declares several objects at once (`object A, B : ...`)
        (
            "object A FinSet 3",
            "expected ':' or ',' after 'object A', found name 'FinSet'",
            "FinSet",
        ),
        # and exports any morphism expression
        ("export", "unexpected end of line: expected an expression after 'export'", "export"),
        ("let = 3", "expected a name after 'let', found '='", "="),
        (  # a program's header may end in an option block
            "program p : A -> B ~",
            "expected '[' or end of line after the codomain of program p, found '~'",
            "~",
        ),
        (
            "object A : FinSet 3 4",
            "expected end of line after the size of object A, found number 4",
            "4",
        ),
        (
            "morphism m : A -> B [k=]",
            "expected a value (a name, a number, true or false) after '=', found ']'",
            "]",
        ),
        (
            "sample x <- f",
            "'sample' step outside a program body: indent it under its program",
            "sample",
        ),
        (
            "program p : A -> B\n    object X : Real 3",
            "'object' declaration inside a program body: declarations start at column 0",
            "object",
        ),
        (
            "program p : A -> B\n    let y = ",
            "unexpected end of line: expected an expression after '='",
            "=",
        ),
    ],
)
def test_error_messages_say_what_was_found_and_expected(
    text: str, message: str, covered: str
) -> None:
    assert one_error(text) == (message, covered)


def test_indented_line_outside_a_program_body() -> None:
    text = "let x = a >>\n    b\n    c\nobject C : Real 1"
    result = parse(text)
    assert [d.message.split(" (")[0] for d in result.diagnostics] == [
        "unexpected end of line: expected an expression after '>>'",
        "indented line outside a program body",
    ]
    assert source(text, result.diagnostics[1].span) == "b\n    c"
    assert [d.name.text for d in result.module.decls] == ["C"]


def test_steps_must_line_up() -> None:
    text = "program p : A -> B\n  sample h <- f\n    return h"
    message, covered = one_error(text)
    assert message.startswith("inconsistent indentation")
    assert covered == "return"
    assert len(parse(text).module.decls[0].steps) == 2


def test_stray_characters_are_reported_and_skipped() -> None:
    text = "object A : Real 3 $$\nobject B\x00 : Real 4"
    result = parse(text)
    assert_consistent(text, result)
    assert [(d.message, source(text, d.span)) for d in result.diagnostics] == [
        ("unexpected characters '$'", "$$"),
        ("unexpected character U+0000", "\x00"),
    ]
    assert [d.name.text for d in result.module.decls] == ["A", "B"]


def test_non_ascii_name_is_one_reported_name() -> None:
    text = "object Größe : Real 3"
    message, covered = one_error(text)
    assert message.startswith("non-ASCII name 'Größe': names use the letters A-Z")
    assert covered == "Größe"
    assert parse(text).module.decls[0].name.text == "Größe"


# ------------------------------------------------------------------ layout


def test_tab_is_an_error_and_parsing_continues() -> None:
    text = "program p : A -> B\n\tsample h <- f\n\treturn h\nobject C : Real\t3\n"
    result = parse(text)
    assert_consistent(text, result)
    tabs = [d for d in result.diagnostics if "tab" in d.message]
    assert [d.message for d in tabs] == ["tab character: QVR indents with spaces"] * 3
    assert [source(text, d.span) for d in tabs] == ["\t"] * 3
    program, obj = result.module.decls
    assert len(program.steps) == 2
    assert obj.body.size == 3


def test_tabs_in_comments_are_fine() -> None:
    parse_clean("object A : Real 3  #\tnote\twith tabs")


def test_crlf_line_endings() -> None:
    lf = (EXAMPLES / "vanilla_rnn_lm.qvr").read_text(encoding="utf-8")
    crlf = lf.replace("\n", "\r\n")
    module = parse_clean(crlf)
    plain = parse_clean(lf)
    assert [d.name.text for d in module.decls] == [d.name.text for d in plain.decls]
    for a, b in zip(module.decls, plain.decls, strict=True):
        assert (a.span.start_line, a.span.start_col, a.span.end_line, a.span.end_col) == (
            b.span.start_line,
            b.span.start_col,
            b.span.end_line,
            b.span.end_col,
        )
        assert a.span.start == b.span.start + b.span.start_line  # one \r per earlier line
    text = "# note\r\nobject A : Real 3\r\n"
    assert [c.text for c in parse_clean(text).comments] == ["# note"]


def test_doc_comments_attach_to_the_next_declaration() -> None:
    text = (
        "#! Ignored: a later run replaces it.\n"
        "\n"
        "#! The token set.\n"
        "#!   Indented second line.\n"
        "#!No space.\n"
        "\n"
        "object Token : FinSet 256\n"
        "object Plain : Real 2  #! a trailing comment is not a doc comment\n"
        "object Next : Real 2\n"
        "# ordinary comment\n"
        "#! Program docs.\n"
        "program p : A -> B\n"
        "    #! inside a body: just a comment\n"
        "    return x\n"
        "morphism m : A -> B\n"
    )
    module = parse_clean(text)
    docs = {d.name.text: d.doc for d in module.decls}
    assert docs == {
        "Token": "The token set.\n  Indented second line.\nNo space.",
        "Plain": None,
        "Next": None,
        "p": "Program docs.",
        "m": None,
    }
    assert len(module.comments) == 8
    assert module.comments[0].text == "#! Ignored: a later run replaces it."


def test_non_ascii_comments_do_not_shift_spans() -> None:
    text = "# ünïcødé ✓ 🎉 comment\nobject A : Real 3  # 日本語 𝔘\nobject B : Real 4  # after\n"
    module = parse_clean(text)
    b = module.decls[-1]
    assert b.name.span == Span(text.index("B :"), text.index("B :") + 1, 2, 7, 2, 8)
    assert [c.span.start_col for c in module.comments] == [0, 19, 19]
    assert module.comments[1].text == "# 日本語 𝔘"


def test_module_span_covers_the_whole_text() -> None:
    text = "object A : Real 3\n\n# end\n"
    assert parse(text).module.span == Span(0, len(text), 0, 0, 3, 0)
    assert parse("").module == ast.Module((), (), Span(0, 0, 0, 0, 0, 0))


# ------------------------------------------------------------------ limits


def test_ten_thousand_nested_parentheses() -> None:
    text = "let x = " + "(" * 10_000 + "a" + ")" * 10_000
    decl = only_decl(text)
    assert isinstance(decl.expr, ast.NameRef)
    assert source(text, decl.expr.span) == "a"
    unclosed = "let x = " + "(" * 10_000 + "a"
    assert len(parse(unclosed).diagnostics) == 1


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    text = "let x = " + "f(" * 10_000 + "a" + ")" * 10_000
    message, _ = one_error(text)
    assert message.startswith("expression nested too deeply")
    terms = MAX_TREE_DEPTH + 1
    chain = "program p : A -> B\n    let y = " + " + ".join(["a"] * terms) + "\n    return y"
    result = parse(chain)
    assert [d.message.split(" (")[0] for d in result.diagnostics] == ["expression too long"]
    assert len(result.module.decls[0].steps) == 1


@pytest.mark.parametrize(
    "line",
    [
        "let x = " + " >> ".join(["a"] * 65),
        "let x = " + " @ ".join(["a"] * 65),
        "let x = " + " >> ".join(["a @ b @ c"] * 65),
        "let x = " + " >> ".join(["a"] * MAX_TREE_DEPTH),
        "program p : A -> B\n    let y = " + " - ".join(["a + b * c / d"] * 40),
    ],
    ids=["compose-65", "tensor-65", "chains-in-a-chain", "compose-longest", "arith"],
)
def test_a_flat_chain_is_one_level_of_nesting_however_long(line: str) -> None:
    result = parse(line)
    assert result.diagnostics == ()


def test_nesting_counts_brackets_and_changes_of_operator_not_terms() -> None:
    right_nested = "let x = " + "a >> (" * MAX_DEPTH + "a" + ")" * MAX_DEPTH
    message, _ = one_error(right_nested)
    assert message.startswith("expression nested too deeply")
    alternating = "let x = " + "a >> (a @ (" * (MAX_DEPTH // 2) + "a" + "))" * (MAX_DEPTH // 2)
    message, _ = one_error(alternating)
    assert message.startswith("expression nested too deeply")
    too_long = "let x = " + " >> ".join(["a"] * (MAX_TREE_DEPTH + 1))
    message, _ = one_error(too_long)
    assert message.startswith(f"expression too long (more than {MAX_TREE_DEPTH} terms in a row)")


def test_nesting_up_to_the_limit_is_accepted() -> None:
    depth = MAX_DEPTH - 1  # calls around a name: MAX_DEPTH levels in all
    text = "let x = " + "f(" * depth + "a" + ")" * depth
    expr = only_decl(text).expr
    levels = 0
    while isinstance(expr, ast.Call):
        expr, levels = expr.args[0], levels + 1
    assert levels == depth


def test_megabyte_inputs() -> None:
    example = (EXAMPLES / "bidirectional_rnn_lm.qvr").read_text(encoding="utf-8")
    text = (example * (1_000_000 // len(example) + 1))[:1_000_000]
    started = time.perf_counter()
    result = parse(text)
    assert time.perf_counter() - started < 30
    assert len(result.module.decls) > 10_000

    one_line = "let x = " + " >> ".join(["a"] * 25_000)
    assert len(parse(one_line).diagnostics) == 1  # nested too deeply


def test_stray_characters_are_reported_in_bounded_numbers() -> None:
    garbage = "object A : Real 3\n" + "$(" * 50_000
    result = parse(garbage)
    assert_consistent(garbage, result)
    assert len(result.diagnostics) == 21  # 19 runs, "N more", the line's parse error
    more = [d for d in result.diagnostics if "more runs" in d.message]
    assert [d.message for d in more] == ["49981 more runs of unexpected characters on this line"]
    assert more[0].span.end == len(garbage) - 1
    assert [d.name.text for d in result.module.decls] == ["A"]


def test_parse_is_thread_safe() -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(EXAMPLES.glob("*.qvr"))] * 8
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(parse, texts))
    assert results == [parse(t) for t in texts]


def test_never_raises_on_hostile_text() -> None:
    for text in ["\x00" * 100, "\r\r\n\r", "\t\t\t", "((((", "]]]]", "#!", "\ufeff", "\u2028x"]:
        assert_consistent(text, parse(text))


def test_the_grammar_cache_is_rebuilt_when_broken_and_skipped_when_unwritable(
    tmp_path, monkeypatch
) -> None:
    from qvr_core.syntax import parser as parser_module

    text = "object A : Real 2\nmorphism f : A -> A [role=kernel] ~ Normal\n"
    expected = parser_module.parse(text)
    for cache_home in (tmp_path / "broken", tmp_path / "file-not-folder"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
        if cache_home.name == "broken":
            (cache_home / "qvr").mkdir(parents=True)
            (cache_home / "qvr" / parser_module._cache_path().rsplit("/", 1)[1]).write_text("junk")
        else:
            cache_home.write_text("a file where a folder should be")
        parser_module._tables.cache_clear()
        try:
            assert parser_module.parse(text) == expected
        finally:
            parser_module._tables.cache_clear()


@pytest.mark.parametrize(
    ("size", "ok"),
    [("9223372036854775807", True), ("9223372036854775808", False), ("1" + "0" * 30, False)],
)
def test_an_object_size_fits_a_tensor_axis(size: str, ok: bool) -> None:
    """Sizes index tensors' axes (int64): a larger one is refused where it is written,
    not by torch when a run expands a draw over it (issue 24's fuzzer)."""
    text = f"object Region : FinSet {size}"
    result = parse(text)
    if ok:
        assert result.diagnostics == ()
        return
    message, covered = one_error(text)
    assert message.startswith(f"the size of object Region is too large ({len(size)} digits")
    assert covered == size
