"""What the incremental checker keeps from one check to the next, on files of many blocks.

After an edit most declarations keep their frames, and the passes over the whole
module take what they can from the last check too: the table of top-level names
(`_Plan.collected`), the names each let and program uses (`UsesMemo`), the
exports that need not move, the order of typing when one declaration is typed
again, a did-you-mean asked again. Each edit here is of a kind that must undo
some of that (a name added, renamed, declared twice, a second name, a doc
comment, a cycle, an alias), and every version must check exactly as from
scratch (`same_as_from_scratch`: every table, in order).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qvr_core.check import check
from qvr_core.check.context import _close, suggest
from qvr_core.check.incremental import IncrementalChecker
from tests.check.test_incremental import same_as_from_scratch

HEAD = (
    "object Token : FinSet 16\nobject Hidden : Real 4\nobject Pair : Hidden * Hidden\n"
    "morphism pairwise : Pair -> Token [role=kernel] ~ Categorical\n\n"
)


def block(i: int) -> str:
    """One block of the editor benchmark's generated file (bench/generated.py)."""
    return (
        f"#! Block {i}.\n"
        f"morphism embed_{i} : Token -> Hidden [role=embed]\n"
        f"morphism cell_{i} : Hidden * Hidden -> Hidden [role=kernel, scale=0.1] ~ Normal\n"
        f"morphism head_{i} : Hidden -> Token [role=kernel] ~ Categorical\n"
        f"let backbone_{i} = embed_{i} >> scan(cell_{i})\n"
        f"program lm_{i} : Token -> Token\n"
        f"    sample h <- backbone_{i}\n"
        f"    observe next_token : Token <- head_{i}(h)\n"
        f"    return next_token\n"
        f"export lm_{i}\n\n"
    )


#: Declarations an edit inserts: new names, names declared twice, a second name, a
#: replicated morphism, lets using lets (a cycle too), an alias and what uses it.
INSERTED = [
    "morphism extra : Token -> Token [role=kernel]\n",
    "morphism head_0 : Hidden -> Token [role=kernel] ~ Categorical\n",
    "morphism twin, head_1 : Hidden -> Token [role=kernel] ~ Categorical\n",
    "morphism rep : Hidden -> Hidden [role=kernel, replicate=2] ~ Normal\n",
    "let backbone_0 = embed_1 >> scan(cell_1)\n",
    "let chain_a = chain_b\n",
    "let chain_b = backbone_1\n",
    "let chain_b = chain_a\n",
    "object Pair : Hidden * Token\n",
    "morphism pairwise : Pair -> Token [role=kernel] ~ Categorical\n",
    "export embed_0 >> head_0\n",
    "let lm_1 = backbone_2\n",
    "export chain_a\n",
    "export lm_0\n",
    "#! a doc comment\n",
    "\n",
]


@st.composite
def edit_sequences(draw: st.DrawFn) -> list[str]:
    text = HEAD + "".join(block(i) for i in range(draw(st.integers(3, 8))))
    versions = [text]
    for _ in range(draw(st.integers(1, 6))):
        lines = text.split("\n")
        kind = draw(st.integers(0, 7))
        if kind == 0:  # the benchmark's edit: a name in a program made undefined, or back
            i = draw(st.integers(0, len(lines) - 1))
            lines[i] = (
                lines[i].replace("(h)", "X(h)", 1)
                if "X(h)" not in lines[i]
                else (lines[i].replace("X(h)", "(h)", 1))
            )
        elif kind == 1:  # a declaration inserted at the start of a line
            at = draw(st.integers(0, len(lines)))
            lines[at:at] = draw(st.sampled_from(INSERTED)).rstrip("\n").split("\n")
        elif kind == 2:  # a line removed
            del lines[draw(st.integers(0, len(lines) - 1))]
        elif kind == 3:  # a declared name renamed where it is declared (its uses stay)
            names = [
                w for line in lines for w in line.split()[1:2] if w.rstrip(",:").isidentifier()
            ]
            if names:
                old = draw(st.sampled_from(names)).rstrip(",:")
                at = next(i for i, line in enumerate(lines) if f" {old}" in line)
                lines[at] = lines[at].replace(f" {old}", f" {old}_renamed", 1)
        elif kind == 4:  # a doc comment changed: the declaration's text, not its meaning
            docs = [i for i, line in enumerate(lines) if line.startswith("#!")]
            if docs:
                i = draw(st.sampled_from(docs))
                lines[i] += " More."
        elif kind == 5:  # a name used made another (the use of a let, say)
            i = draw(st.integers(0, len(lines) - 1))
            lines[i] = lines[i].replace("backbone_", "backbone_1", 1)
        elif kind == 6:  # an object's size: what its aliases mean, and what uses them
            sizes = ("Real 4", "Real 6") if "Real 4" in text else ("Real 6", "Real 4")
            lines = "\n".join(lines).replace(*sizes, 1).split("\n")
        else:  # a block copied elsewhere: every name in it declared twice
            start = draw(st.integers(0, max(0, len(lines) - 11)))
            at = draw(st.integers(0, len(lines)))
            lines[at:at] = lines[start : start + 11]
        text = "\n".join(lines)
        versions.append(text)
    return versions


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edit_sequences(), st.booleans())
def test_every_version_of_a_file_of_blocks_checks_as_from_scratch(
    versions: list[str], strict: bool
) -> None:
    checker = IncrementalChecker(safe=False)
    for text in versions:
        same_as_from_scratch(checker.check(text, strict=strict), text, strict)


def test_the_second_name_of_a_morphism_is_known_to_change() -> None:
    """`morphism f, g`: renaming g makes its users undefined, though nothing in them
    changed (the second name is part of what the declaration declares)."""
    text = (
        "object A : Real 2\nmorphism f, g : A -> A [role=kernel] ~ Normal\n"
        "let x = g\nexport x\nlet y = f\nexport y\n"
    )
    checker = IncrementalChecker(safe=False)
    assert checker.check(text).ok
    renamed = text.replace("f, g", "f, h")
    module = checker.check(renamed)
    assert [d.message.split(":")[0] for d in module.errors] == ["undefined name 'g'"]
    same_as_from_scratch(module, renamed)


def test_a_cycle_typed_again_is_reported_where_a_check_from_scratch_reports_it() -> None:
    """Two lets typed again in one check are typed in the order of their uses, which
    decides where their cycle is reported, however many others keep their frames."""
    text = HEAD + "".join(block(i) for i in range(4))
    a_then_b = "let chain_a = chain_b\nlet chain_b = chain_a\n"
    b_then_a = "let chain_b = chain_a\nlet chain_a = chain_b\n"
    # the walk starts at the first, goes to the second, and types it first
    from_a = "'chain_b' is defined in terms of itself: chain_b -> chain_a -> chain_b"
    from_b = "'chain_a' is defined in terms of itself: chain_a -> chain_b -> chain_a"
    checker = IncrementalChecker(safe=False)
    checker.check(text)
    for version, cycles in (
        (text + a_then_b + "export chain_a\n", [from_a]),
        (text + "let chain_a = chain_b\nlet chain_b = backbone_1\nexport chain_a\n", []),
        (text + a_then_b + "export chain_a\n", [from_a]),
        (b_then_a + text + "export chain_b\n", [from_b]),
    ):
        module = checker.check(version)
        assert [d.message for d in module.diagnostics if d.code == "QVR105"] == cycles
        same_as_from_scratch(module, version)


def test_the_benchmark_edit_back_and_forth() -> None:
    """A program's name made undefined and back, again and again: the kept table of
    names, the kept did-you-mean and the skipped ordering give what a check from
    scratch gives each time."""
    text = HEAD + "".join(block(i) for i in range(12))
    broken = text.replace("head_7(h)", "head_7X(h)")
    checker = IncrementalChecker(safe=False)
    for version in (text, broken, text, broken, broken + "\n", text):
        module = checker.check(version)
        same_as_from_scratch(module, version)
    assert "did you mean 'head_7'" in check(broken).errors[0].message


def test_a_remembered_suggestion_is_the_one_for_those_names() -> None:
    assert suggest("celll", ["cell", "head"]) == _close("celll", ("cell", "head")) == ["cell"]
    assert suggest("celll", ["head"]) == _close("celll", ("head",)) == []
    assert suggest("celll", ("cello", "cell")) == _close("celll", ("cello", "cell"))


def test_a_declaration_checked_again_as_a_duplicate_does_not_keep_its_old_frame() -> None:
    """Found by the property above in a fresh clone's CI: `f` declared a second time
    above it (and `A` with another size) is checked again as one of two, which records
    no frame; its frame from when it was alone (A of size 2) was kept, and reused once
    the other `f` went, though `A` is now the first one, of size 3."""
    alone = "object A : Real 2\n\n#! The map.\nmorphism f : A -> A [role=kernel] ~ Normal\n"
    above = "object A : Real 3\n\n#! Another map.\nmorphism f : A -> A [role=kernel] ~ Normal\n"
    checker = IncrementalChecker(safe=False)
    for text in (alone, above + alone, "object A : Real 3\n\n#! Another map.\n" + alone):
        module = checker.check(text)
        same_as_from_scratch(module, text)
    assert module.morphisms["f"].type.cod.factors[0].size == 3  # type: ignore[union-attr]
