"""The sequence and attention constructs over the protocol: hover, completion, signature
help, inlay hints and the diagram command, on small documents and on the example pages.

Constructs: `scanl(cell)`, `scan(cell, init=learned)`, the attention calls
(`multihead(q, k, v)` and, where the registry has them, `causal_multihead` and
`cross_multihead`), tuple sites `sample (a, b) <- f(x)`, position picks `h[0]` and
`h[picks]`, `stack(block, n)` over a sequence block, `param_source=layer_norm` and the
functions `layer_norm`, `relu`, `gelu`, `softmax` in program lets. What the answers
name of a builtin is read from the registry (`qvr_core.builtins`), never restated.
"""

from __future__ import annotations

import html
import re
import shutil
from typing import Any

import pytest
from lsprotocol import types as lsp

from qvr_core.builtins import COMBINATORS, FUNCTIONS, PARAM_SOURCES
from tests.lsp.support import change, diagnostics_for, example, position_of
from tests.lsp_depth.support import doc, errors, opened

pytestmark = pytest.mark.asyncio(loop_scope="session")

#: The attention combinators the registry has (`multihead`, and its causal and cross kin
#: once they are registered).
ATTENTION = sorted(name for name, c in COMBINATORS.items() if c.attention is not None)

# A page of every construct at once: a scanl over a program cell that returns a pair,
# a scan with a learned start, a tuple site, a stack of an attention block over the
# sequence, picks by position and by a data name, the sequence functions.
SEQUENCES = """\
object Token : FinSet 32
object Embedded : Real 8
object Hidden : Real 8
object Head : Real 4
object Heads : Head * Head
object State : Hidden * Hidden

morphism embed : Token -> Embedded [role=embed]
morphism gate : Embedded * Hidden -> Hidden [role=kernel, param_source=linear] ~ Deterministic
morphism w_q : Hidden -> Head [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism w_k : Hidden -> Head [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism w_v : Hidden -> Head [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism w_o : Heads -> Hidden [role=kernel, param_source=linear] ~ Deterministic
morphism norm : Hidden -> Hidden [role=kernel, param_source=layer_norm] ~ Deterministic
morphism head : Hidden -> Token [role=kernel, param_source=linear] ~ Categorical

program cell (x, h_prev, c_prev) : Embedded * Hidden * Hidden -> State
    sample h <- gate(x, h_prev)
    let c = layer_norm(h + c_prev)
    return (h, c)

define states = embed >> scanl(cell)
define summary = embed >> scan(gate, init=learned)
define attend = multihead(w_q, w_k, w_v) >> w_o

program block (x) : Hidden -> Hidden
    sample a <- attend(x)
    let r = gelu(x + a)
    sample y <- norm(r)
    return y

define deep = stack(block, 2)

program lm : Token -> Token
    sample (h, c) <- states
    sample z <- deep(h)
    let first = z[0]
    let scaled = softmax(relu(first))
    sample n <- norm(scaled)
    let picked = z[picks]
    observe next : Token <- head(picked)
    return next

export lm
export summary
"""

# Masked self-attention over the target and cross-attention into a memory.
ATTENDING = """\
object Token : FinSet 16
object Hidden : Real 8
object Head : Real 4
object Heads : Head * Head

morphism embed : Token -> Hidden [role=embed]
morphism q : Hidden -> Head [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism k : Hidden -> Head [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism v : Hidden -> Head [role=kernel, param_source=linear, replicate=2] ~ Deterministic
morphism o : Heads -> Hidden [role=kernel, param_source=linear] ~ Deterministic
morphism out : Hidden -> Token [role=kernel, param_source=linear] ~ Categorical

define masked = causal_multihead(q, k, v) >> o
define crossed = cross_multihead(q, k, v) >> o
define source = embed >> masked

program decode (t, s) : Token * Token -> Token
    sample memory <- source(s)
    sample x <- embed(t)
    sample a <- masked(x)
    sample c <- crossed(a, memory)
    observe next : Token <- out(c)
    return next

export decode
"""


async def clean(client, text: str, label: str) -> str:
    """Open `text`; its URI once the server has checked it (and found no error)."""
    uri, published = await opened(client, text, label)
    assert errors(published) == []
    return uri


async def hover(client, uri: str, text: str, needle: str, occurrence: int = 0, delta: int = 1):
    """The hover's Markdown at `needle` (plus `delta`) and the text its range covers."""
    result = await client.text_document_hover_async(
        lsp.HoverParams(doc(uri), position_of(text, needle, occurrence, delta))
    )
    assert result is not None, f"no hover at {needle!r}"
    assert isinstance(result.contents, lsp.MarkupContent)
    assert result.contents.kind == lsp.MarkupKind.Markdown
    assert result.range is not None
    return result.contents.value, covered(text, result.range)


def covered(text: str, rng: lsp.Range) -> str:
    lines = text.split("\n")
    assert rng.start.line == rng.end.line  # every construct here sits on one line
    return lines[rng.start.line][rng.start.character : rng.end.character]


# ---------------------------------------------------------------------------- hover


async def test_hover_on_multihead_says_heads_key_size_and_its_type(client):
    uri = await clean(client, SEQUENCES, "hover-multihead")
    value, span = await hover(client, uri, SEQUENCES, "multihead(")
    assert span == "multihead"
    # the [A] -> [V * V] of two heads, with this page's objects
    assert "```qvr\nmultihead : [Hidden] -> [Head * Head]\n```" in value
    assert "*2 heads, d_k = " in value and "4" in value.split("d_k = ", 1)[1].split("*")[0]
    assert "`[Head * Head] = [R^(4+4)]` (4 + 4 = 8)" in value
    assert f"`multihead(query, key, value){COMBINATORS['multihead'].result}`" in value
    assert COMBINATORS["multihead"].doc in value


async def test_hover_on_the_bert_pages_attention(client):
    text = example("bert_mlm.qvr")
    uri = await clean(client, text, "hover-bert-attention")
    value, _ = await hover(client, uri, text, "multihead(w_q")
    assert "multihead : [Hidden] -> [Head * Head]" in value
    assert "2 heads, d_k = " in value and "16" in value.split("d_k = ", 1)[1].split("*")[0]
    value, span = await hover(client, uri, text, "stack(encoder_block")
    assert span == "stack(encoder_block, 2)"
    assert "stack(encoder_block, 2) : [Hidden] -> [Hidden]" in value
    assert COMBINATORS["stack"].doc in value


@pytest.mark.skipif(
    not {"causal_multihead", "cross_multihead"} <= set(COMBINATORS),
    reason="the registry has no causal or cross attention yet",
)
async def test_hover_on_causal_and_cross_attention(client):
    uri = await clean(client, ATTENDING, "hover-causal-cross")
    value, _ = await hover(client, uri, ATTENDING, "causal_multihead(")
    assert "causal_multihead : [Hidden] -> [Head * Head]" in value
    assert "2 heads, d_k = " in value and "0..t" in value
    assert COMBINATORS["causal_multihead"].doc in value
    value, _ = await hover(client, uri, ATTENDING, "cross_multihead(")
    assert "cross_multihead : [Hidden * Hidden] -> [Head * Head]" in value
    assert "2 heads, d_k = " in value and "memory" in value
    assert COMBINATORS["cross_multihead"].doc in value


async def test_hover_on_scanl_shows_a_sequence_to_sequence_type(client):
    uri = await clean(client, SEQUENCES, "hover-scanl")
    value, span = await hover(client, uri, SEQUENCES, "scanl(")
    assert span == "scanl(cell)"
    assert "```qvr\nscanl(cell) : [Embedded] -> [State]\n```" in value
    assert "`[State] = [R^(8+8)]` (8 + 8 = 16)" in value
    assert f"scanl(c, reverse=false, init=zeros){COMBINATORS['scanl'].result}" in value
    assert COMBINATORS["scanl"].result == " : [A] -> [H]"
    value, span = await hover(client, uri, SEQUENCES, "scan(gate")
    assert span == "scan(gate, init=learned)"
    assert "scan(gate, init=learned) : [Embedded] -> Hidden" in value  # the last state only


async def test_hover_on_scanl_in_the_rlstm_page(client):
    text = example("rlstm_lm.qvr")
    uri = await clean(client, text, "hover-rlstm-scanl")
    value, _ = await hover(client, uri, text, "scanl(")
    assert "scanl(rlstm_cell) : [Embedded] -> [State]" in value


async def test_hover_on_tuple_site_names_shows_each_part(client):
    uri = await clean(client, SEQUENCES, "hover-tuple")
    value, span = await hover(client, uri, SEQUENCES, "sample (h, c)", delta=len("sample (h"))
    assert span == "h"
    assert "```qvr\nsample h : [Hidden]\n```" in value
    assert "part 1 of 2 of the tuple site (h, c) : [State]" in value
    value, span = await hover(client, uri, SEQUENCES, "sample (h, c)", delta=len("sample (h, c"))
    assert span == "c"
    assert "```qvr\nsample c : [Hidden]\n```" in value
    assert "part 2 of 2 of the tuple site (h, c) : [State]" in value
    assert "in program lm" in value


async def test_hover_on_the_mogrifier_pages_tuple_site(client):
    text = example("mogrifier_rlstm_lm.qvr")
    uri = await clean(client, text, "hover-mogrifier-tuple")
    value, _ = await hover(client, uri, text, "(x_mod, h_mod)", delta=2)
    assert "sample x_mod : Embedded" in value
    assert "part 1 of 2 of the tuple site (x_mod, h_mod) : Embedded * Hidden" in value
    value, _ = await hover(client, uri, text, "(x_mod, h_mod)", delta=len("(x_mod, h"))
    assert "sample h_mod : Hidden" in value


async def test_hover_on_position_picks(client):
    uri = await clean(client, SEQUENCES, "hover-picks")
    value, span = await hover(client, uri, SEQUENCES, "z[0]", delta=2)
    assert span == "z[0]"
    assert "```qvr\nz[0] : Hidden\n```" in value  # one position: the element
    value, span = await hover(client, uri, SEQUENCES, "let picked", delta=len("let p"))
    assert span == "picked"
    assert "```qvr\nlocal picked : [Hidden]\n```" in value  # picks: a sequence again
    value, span = await hover(client, uri, SEQUENCES, "z[picks]", delta=len("z[p"))
    assert span == "picks"
    assert "data picks" in value and "positions to pick" in value


async def test_hover_on_the_bert_pages_picks(client):
    text = example("bert_mlm.qvr")
    uri = await clean(client, text, "hover-bert-picks")
    value, _ = await hover(client, uri, text, "h[0]", delta=2)
    assert "h[0] : Hidden" in value
    value, _ = await hover(client, uri, text, "let picked", delta=len("let p"))
    assert "local picked : [Hidden]" in value
    value, _ = await hover(client, uri, text, "let cls", delta=len("let c"))
    assert "local cls : Hidden" in value


async def test_hover_on_layer_norm_as_param_source_and_as_function(client):
    uri = await clean(client, SEQUENCES, "hover-layer-norm")
    value, span = await hover(client, uri, SEQUENCES, "param_source=layer_norm", delta=14)
    assert span == "layer_norm"
    assert "```qvr\nparam_source=layer_norm\n```" in value
    assert PARAM_SOURCES["layer_norm"].doc[1:] in value  # capitalised
    assert "*QVR param source*" in value
    value, span = await hover(client, uri, SEQUENCES, "param_source=linear", delta=14)
    assert span == "linear" and PARAM_SOURCES["linear"].doc[1:] in value
    value, span = await hover(client, uri, SEQUENCES, "layer_norm(h")
    assert span == "layer_norm(h + c_prev)"
    assert "layer_norm(h + c_prev) : Hidden" in value
    assert f"`layer_norm(x)`: {FUNCTIONS['layer_norm'].doc}" in value


@pytest.mark.parametrize(
    ("needle", "typed"),
    [
        ("gelu(", "gelu(x + a) : [Hidden]"),
        ("softmax(", "softmax(relu(first)) : Hidden"),
        ("relu(first", "relu(first) : Hidden"),
    ],
)
async def test_hover_on_sequence_functions_in_lets(client, needle, typed):
    uri = await clean(client, SEQUENCES, "hover-functions")
    value, _ = await hover(client, uri, SEQUENCES, needle)
    name = needle.split("(")[0]
    assert typed in value
    assert f"`{name}(x)`: {FUNCTIONS[name].doc}" in value


# ------------------------------------------------------------------------ completion


async def completion(client, text: str, label: str) -> dict[str, lsp.CompletionItem]:
    """The completion items at the end of `text`, by label."""
    uri, _ = await opened(client, text, label)
    lines = text.split("\n")
    result = await client.text_document_completion_async(
        lsp.CompletionParams(doc(uri), lsp.Position(len(lines) - 1, len(lines[-1])))
    )
    assert isinstance(result, lsp.CompletionList)
    return {item.label: item for item in result.items}


@pytest.mark.parametrize(
    "tail",
    [
        "define x = ",
        "define x = embed >> ",
        "define x = fan(attend, ",
        "let x = embed >> ",
    ],
)
async def test_completion_in_a_define_offers_the_sequence_combinators(client, tail):
    items = await completion(client, SEQUENCES + tail, "completion-define")
    assert set(COMBINATORS) <= set(items)  # scanl, multihead and every other one
    scanl, multihead = items["scanl"], items["multihead"]
    assert scanl.detail == "combinator: scanl(c, reverse=false, init=zeros) : [A] -> [H]"
    assert multihead.detail == (
        f"combinator: multihead(query, key, value){COMBINATORS['multihead'].result}"
    )
    assert scanl.kind == multihead.kind == lsp.CompletionItemKind.Operator
    assert {"embed", "gate", "w_q", "attend", "cell", "block"} <= set(items)
    assert "Token" not in items and "x" not in items


async def test_completion_inside_an_attention_call_offers_the_head_groups(client):
    items = await completion(client, SEQUENCES + "define y = multihead(w_q, ", "completion-heads")
    assert {"w_q", "w_k", "w_v"} <= set(items)
    assert items["w_k"].detail.startswith("morphism w_k : Hidden -> Head")


async def test_completion_of_param_source_offers_the_registrys_sources(client):
    tail = "morphism f : Hidden -> Hidden [role=kernel, param_source="
    items = await completion(client, SEQUENCES + tail, "completion-param-source")
    assert set(items) == set(PARAM_SOURCES) >= {"layer_norm", "linear", "mlp"}
    for name, item in items.items():
        assert item.detail == "param source"
        assert item.documentation is not None
        docs = item.documentation
        text = docs.value if isinstance(docs, lsp.MarkupContent) else docs
        assert PARAM_SOURCES[name].doc[1:] in text


async def test_completion_in_a_program_let_offers_the_sequence_functions(client):
    tail = "\nprogram p (x) : Hidden -> Hidden\n    let y = "
    items = await completion(client, SEQUENCES + tail, "completion-functions")
    assert {"layer_norm", "relu", "gelu", "softmax", "x"} <= set(items)
    assert items["layer_norm"].detail == "builtin function: layer_norm(x)"


# -------------------------------------------------------------------- signature help


async def signature(client, base: str, typed: str, label: str) -> lsp.SignatureHelp:
    uri, _ = await opened(client, base, label)
    text = base + typed
    change(client, uri, 2, None, text)
    await diagnostics_for(client, uri, 2)
    lines = text.split("\n")
    help_ = await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(doc(uri), lsp.Position(len(lines) - 1, len(lines[-1])))
    )
    assert help_ is not None, f"no signature help after {typed!r}"
    return help_


def parameters(help_: lsp.SignatureHelp) -> list[str]:
    sig = help_.signatures[help_.active_signature or 0]
    names = []
    for p in sig.parameters or []:
        if isinstance(p.label, str):
            names.append(p.label)
        else:
            start, end = p.label
            names.append(sig.label[start:end])
    return names


def active(help_: lsp.SignatureHelp) -> str:
    assert help_.active_parameter is not None
    return parameters(help_)[help_.active_parameter]


@pytest.mark.parametrize(
    ("typed", "param"),
    [
        ("define y = multihead(", "query"),
        ("define y = multihead(w_q, ", "key"),
        ("define y = multihead(w_q, w_k, ", "value"),
        ("define y = embed >> multihead(w_q,\n    w_k, ", "value"),
    ],
)
async def test_signature_help_in_multihead_marks_the_active_parameter(client, typed, param):
    help_ = await signature(client, SEQUENCES, typed, "signature-multihead")
    [sig] = help_.signatures
    assert sig.label == f"multihead(query, key, value){COMBINATORS['multihead'].result}"
    assert parameters(help_) == ["query", "key", "value"]
    assert active(help_) == param
    docs = [p.documentation for p in sig.parameters or []]
    assert docs == [p.doc for p in COMBINATORS["multihead"].params]


@pytest.mark.parametrize("name", ATTENTION)
async def test_signature_help_in_every_attention_call(client, name):
    help_ = await signature(client, SEQUENCES, f"define y = {name}(w_q, w_k, ", "signature-att")
    assert help_.signatures[0].label.startswith(f"{name}(query, key, value) : ")
    assert parameters(help_) == ["query", "key", "value"]
    assert active(help_) == "value"


@pytest.mark.parametrize(
    ("typed", "label", "param"),
    [
        ("define y = embed >> scanl(", "scanl(c, reverse=false, init=zeros) : [A] -> [H]", "c"),
        (
            "define y = embed >> scan(gate, init=",
            "scan(c, reverse=false, init=zeros) : [A] -> H",
            "init=zeros",
        ),
        ("define y = stack(block, ", "stack(b, n) : A -> A", "n"),
    ],
)
async def test_signature_help_in_scanl_scan_and_stack(client, typed, label, param):
    help_ = await signature(client, SEQUENCES, typed, "signature-scan")
    assert help_.signatures[0].label == label
    assert active(help_) == param


async def test_signature_help_for_a_sequence_function_in_a_program_let(client):
    typed = "\nprogram p (x) : Hidden -> Hidden\n    let y = layer_norm("
    help_ = await signature(client, SEQUENCES, typed, "signature-function")
    assert help_.signatures[0].label == "layer_norm(x)"
    assert help_.signatures[0].documentation == FUNCTIONS["layer_norm"].doc


# ----------------------------------------------------------------------- inlay hints


async def type_hints(client, text: str, label: str) -> dict[tuple[int, int], str]:
    uri = await clean(client, text, label)
    whole = lsp.Range(lsp.Position(0, 0), lsp.Position(text.count("\n") + 1, 0))
    found = await client.text_document_inlay_hint_async(lsp.InlayHintParams(doc(uri), whole))
    return {
        (h.position.line, h.position.character): str(h.label)
        for h in found or []
        if h.kind == lsp.InlayHintKind.Type
    }


def after(text: str, needle: str, upto: str) -> tuple[int, int]:
    """The position just after `upto`, the start of `needle`."""
    p = position_of(text, needle, delta=len(upto))
    return p.line, p.character


async def test_inlay_hints_type_each_name_of_a_tuple_site_and_the_picks(client):
    hints = await type_hints(client, SEQUENCES, "inlay-sequences")
    assert hints[after(SEQUENCES, "sample (h, c)", "sample (h")] == ": [Hidden]"
    assert hints[after(SEQUENCES, "sample (h, c)", "sample (h, c")] == ": [Hidden]"
    assert hints[after(SEQUENCES, "let first", "let first")] == ": Hidden"
    assert hints[after(SEQUENCES, "let picked", "let picked")] == ": [Hidden]"
    assert hints[after(SEQUENCES, "define states", "define states")] == ": [Token] -> [State]"
    assert hints[after(SEQUENCES, "define summary", "define summary")] == ": [Token] -> Hidden"
    assert hints[after(SEQUENCES, "define attend", "define attend")] == ": [Hidden] -> [Hidden]"
    assert hints[after(SEQUENCES, "let r = gelu", "let r")] == ": [Hidden]"


async def test_inlay_hints_on_the_bert_pages_picks(client):
    text = example("bert_mlm.qvr")
    hints = await type_hints(client, text, "inlay-bert")
    assert hints[after(text, "let picked = h[pred_positions]", "let picked")] == ": [Hidden]"
    assert hints[after(text, "let cls = h[0]", "let cls")] == ": Hidden"
    assert hints[after(text, "define self_attention", "define self_attention")] == (
        ": [Hidden] -> [Hidden]"
    )


async def test_inlay_hints_on_the_rlstm_pages_tuple_site(client):
    text = example("rlstm_lm.qvr")
    hints = await type_hints(client, text, "inlay-rlstm-tuple")
    assert hints[after(text, "sample (h, _c)", "sample (h")] == ": [Hidden]"
    assert hints[after(text, "sample (h, _c)", "sample (h, _c")] == ": [Hidden]"


# --------------------------------------------------------------------------- diagram


def plain(value: Any) -> Any:
    """A command's answer as plain dicts and lists (pygls hands objects over)."""
    if hasattr(value, "_asdict"):
        value = value._asdict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


async def diagram(client, uri: str, fmt: str) -> dict[str, Any]:
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="qvr.diagram", arguments=[{"uri": uri, "format": fmt}])
    )
    answer = plain(result)
    assert answer["format"] == fmt
    return answer


def attention_nodes(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in answer["nodes"] if n["label"].split("(")[0] in ATTENTION]


def mermaid_box(text: str, box_id: str) -> tuple[str, list[str]]:
    """A Mermaid `subgraph` block's title and member lines."""
    lines = text.splitlines()
    [start] = [i for i, line in enumerate(lines) if line.strip().startswith(f"subgraph {box_id}[")]
    title = lines[start].split("[", 1)[1].rstrip("]").strip('"')
    members = []
    for line in lines[start + 1 :]:
        if line.strip() == "end":
            break
        members.append(line.strip())
    return title, members


def dot_cluster(text: str, cluster_id: str) -> str:
    """The body of a DOT `subgraph "cluster_..."`, nested clusters included."""
    start = text.index(f'subgraph "cluster_{cluster_id}" {{')
    depth = 0
    for end in range(text.index("{", start), len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[start : end + 1]
    raise AssertionError(f"cluster_{cluster_id} is not closed")


async def test_bert_diagram_draws_the_attention_inside_its_stack(client):
    text = example("bert_mlm.qvr")
    uri = await clean(client, text, "diagram-bert")
    answer = await diagram(client, uri, "mermaid")
    [attention] = attention_nodes(answer)
    # labelled as attention, with its heads and key size (the hover's facts)
    assert attention["label"].startswith(
        "multihead(w_q, w_k, w_v): self-attention, 2 heads, d_k = "
    )
    assert (attention["kind"], attention["type"]) == ("combinator", "[Hidden] -> [Head * Head]")
    assert attention["dims"] == "[R^32] -> [R^(16+16)]"
    assert covered(text, lsp.Range(**_range(attention["range"]))) == "multihead(w_q, w_k, w_v)"
    # inside the box of the stack that repeats its block
    title, members = mermaid_box(answer["text"], "stack_encoder_block")
    assert title == "stack(encoder_block, 2) : [Hidden] -#gt; [Hidden]"
    assert attention["id"] in members
    block = {n["id"] for n in answer["nodes"] if n["id"].startswith("encoder_block.")}
    assert set(members) == block
    # where the block is used, the stack is one node of the flow
    [stack] = [n for n in answer["nodes"] if n["label"] == "stack(encoder_block, 2)"]
    assert stack["kind"] == "combinator"
    assert f'{stack["id"]}[["stack(encoder_block, 2)"]] --> bert_mlm.h((' in answer["text"]


def _range(rng: dict[str, Any]) -> dict[str, lsp.Position]:
    return {
        side: lsp.Position(rng[side]["line"], rng[side]["character"]) for side in ("start", "end")
    }


async def test_bert_diagram_as_dot_nests_attention_in_the_stack(client):
    text = example("bert_mlm.qvr")
    uri = await clean(client, text, "diagram-bert-dot")
    answer = await diagram(client, uri, "dot")
    stack = dot_cluster(answer["text"], "stack_encoder_block")
    assert 'label="stack(encoder_block, 2) : [Hidden] -> [Hidden]\\n[R^32] -> [R^32]";' in stack
    assert 'subgraph "cluster_encoder_block" {' in stack
    attention = dot_cluster(stack, "encoder_block.a.self_attention")
    assert re.search(
        r'"encoder_block\.a\.self_attention\.multihead_w_q" \[label="multihead\(w_q, w_k, w_v\): '
        r"self-attention, 2 heads, d_k = [^\"]*16\\n\[Hidden\] -> \[Head \* Head\]",
        attention,
    )


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
async def test_bert_diagram_as_svg_shows_the_stack_and_the_heads(client):
    text = example("bert_mlm.qvr")
    uri = await clean(client, text, "diagram-bert-svg")
    svg = (await diagram(client, uri, "svg"))["text"]
    assert "</svg>" in svg
    [box] = [g for g in svg.split("<g id=") if "<title>cluster_stack_encoder_block</title>" in g]
    assert "stack(encoder_block, 2) : [Hidden] -> [Hidden]" in html.unescape(box)
    [node] = [
        g
        for g in svg.split("<g id=")
        if "<title>encoder_block.a.self_attention.multihead_w_q</title>" in g
    ]
    assert "multihead(w_q, w_k, w_v): self-attention, 2 heads, d_k = " in html.unescape(node)


async def test_diagram_of_a_small_page_draws_its_stacked_attention_block(client):
    uri = await clean(client, SEQUENCES, "diagram-small")
    answer = await diagram(client, uri, "mermaid")
    [attention] = attention_nodes(answer)
    assert attention["id"] == "block.a.attend.multihead_w_q"
    assert attention["label"].startswith("multihead(w_q, w_k, w_v): self-attention, 2 heads")
    title, members = mermaid_box(answer["text"], "stack_block")
    assert title.startswith("stack(block, 2)")
    assert attention["id"] in members
    scanl = [n for n in answer["nodes"] if n["label"] == "scanl(cell)"]
    assert [n["type"] for n in scanl] == ["[Embedded] -> [State]"]
    [site] = [n for n in answer["nodes"] if n["label"] == "(h, c)"]
    assert site["type"] == "[State]" and site["kind"] == "sample"
    picked = {n["label"]: n["type"] for n in answer["nodes"] if n["kind"] == "value"}
    assert picked["first"] == "Hidden" and picked["picked"] == "[Hidden]"


@pytest.mark.skipif(
    not {"causal_multihead", "cross_multihead"} <= set(COMBINATORS),
    reason="the registry has no causal or cross attention yet",
)
async def test_diagram_labels_causal_and_cross_attention(client):
    uri = await clean(client, ATTENDING, "diagram-causal-cross")
    answer = await diagram(client, uri, "mermaid")
    labels = sorted(n["label"] for n in attention_nodes(answer))
    assert any(
        label.startswith("causal_multihead(q, k, v): causal self-attention, 2 heads")
        for label in labels
    )
    assert any(
        label.startswith("cross_multihead(q, k, v): cross-attention, 2 heads") for label in labels
    )
