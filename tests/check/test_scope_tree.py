"""The checked model's scope tree and summed plan (check/model.py): built once, read by the
runtime, the exports and sizing, so each reader sees the same scopes and the same sums."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.check.model import Model, Node, summed_plan, walk
from qvr_core.runtime.model.enumerate import summed_trees
from qvr_core.runtime.model.program import compile_model
from qvr_core.sizing.model_resources import scope_runs
from tests.fuzz.generators import corpus_files

TWO_SUMS = """\
object Item : FinSet 5

program p : Item -> Item
    sample pi <- Beta(1.0, 1.0)
    sample z1 : Item <- Bernoulli(pi)
    sample mu <- Normal(0.0, 1.0)
    let m = mu + z1
    sample tau <- HalfNormal(1.0)
    sample z2 : Item <- Bernoulli(pi)
    let s = 1.0 + z2
    observe y : Item <- Normal(m, tau)
    observe w : Item <- Normal(mu, s)
    return mu

export p
"""

CHAIN = """\
object Item : FinSet 5

program p : Item -> Item
    sample pi <- Beta(1.0, 1.0)
    sample z1 : Item <- Bernoulli(pi)
    let q = 0.2 + 0.6 * z1
    sample z2 : Item <- Bernoulli(q)
    sample mu <- Normal(0.0, 1.0)
    let m = mu + z2
    observe y : Item <- Normal(m, 1.0)
    return mu

export p
"""

POSTERIORDB = Path(__file__).resolve().parents[2] / "examples" / "posteriordb"


def _model(text: str) -> Model:
    module = check(text)
    assert module.diagnostics == (), [d.message for d in module.diagnostics]
    return module.models["p"]


def _shape(nodes: tuple[Node, ...]) -> list[object]:
    """A tree as names, a scope as (name, its body), a summed one marked with `+`."""
    return [
        (("+" if n.summed else "") + n.step.name, _shape(n.body)) if n.scope else n.step.name
        for n in nodes
    ]


def test_each_summable_site_becomes_a_scope_over_its_readers_the_rest_moving_before_it() -> None:
    m = _model(TWO_SUMS)
    assert _shape(m.tree) == ["pi", "z1", "mu", "m", "tau", "z2", "s", "y", "w"]
    assert _shape(m.summed) == ["pi", "mu", "tau", ("+z1", ["m", "y"]), ("+z2", ["s", "w"])]
    z1, z2 = m.summed[3], m.summed[4]
    assert z1.outside == {"pi", "mu", "tau"}  # its sum depends on these and on nothing else
    assert z2.outside == {"pi", "mu"}
    assert z1.binds == {"z1", "m", "y"}


def test_sites_that_read_each_other_nest_as_a_chain_of_sums() -> None:
    m = _model(CHAIN)
    assert _shape(m.summed) == ["pi", "mu", ("+z1", ["q", ("+z2", ["m", "y"])])]
    assert m.summed[2].outside == {"pi", "mu"}


def test_a_marginalize_keeps_its_body_and_reads_only_what_its_scope_does() -> None:
    hmm = check((POSTERIORDB.parent / "models" / "hmm.qvr").read_text()).models["hmm"]
    (s0,) = [n for n in hmm.tree if n.scope]
    assert _shape((s0,)) == [("s0", ["o0", ("s1", ["o1", ("s2", ["o2", ("s3", ["o3"])])])])]
    assert s0.outside == {"start", "emit", "trans"}
    assert summed_plan(hmm.tree, lambda _: False) == hmm.tree
    assert hmm.summed == hmm.tree  # nothing is summable outside the scopes


def _models() -> list[tuple[str, Model]]:
    out = []
    for path in [*corpus_files(), *sorted(POSTERIORDB.glob("*.qvr"))]:
        module = check(path.read_text())
        if any(d.severity == "error" for d in module.diagnostics):
            continue
        out += [(f"{path.name}:{name}", m) for name, m in module.models.items()]
    return out


MODELS = _models()


@pytest.mark.parametrize(("name", "model"), MODELS, ids=[n for n, _ in MODELS])
def test_every_step_sits_once_in_the_tree_under_the_scopes_it_names(
    name: str, model: Model
) -> None:
    assert [n.step for n in walk(model.tree)] == list(model.steps)
    for tree in (model.tree, model.summed):
        assert sorted(id(n.step) for n in walk(tree)) == sorted(id(s) for s in model.steps)
        for node in walk(tree):
            assert node.outside.isdisjoint(node.binds)
            for inner in node.body:
                assert inner.outside - node.binds <= node.outside
            if node.step.scope or not node.scope:
                continue
            if not node.summed:  # a marginalize's body names it as its innermost scope
                assert all(i.step.scope[-1:] == (node.step.name,) for i in node.body)


def test_the_runtime_runs_the_model_s_own_tree_and_summed_plan() -> None:
    module = check(TWO_SUMS)
    program = compile_model(module, "p")
    assert program.top.nodes is module.models["p"].tree
    (top, _), problems = summed_trees(program)
    assert top.nodes is module.models["p"].summed and problems == {}


def _chain(n: int) -> str:
    """An HMM written state by state: each discrete state reads the one before."""
    lines = [
        "object One : FinSet 1",
        "",
        "program p : One -> One",
        "    sample s0 <- Bernoulli(0.5)",
    ]
    for i in range(1, n):
        lines += [f"    let p{i} = 0.2 + 0.6 * s{i - 1}", f"    sample s{i} <- Bernoulli(p{i})"]
    lines += [f"    let m = s{n - 1} * 1.0", "    observe y <- Normal(m, 1.0)", "    return m"]
    return "\n".join([*lines, "", "export p", ""])


def test_a_chain_of_thousands_of_states_is_planned_and_walked_without_recursion() -> None:
    """The summed plan nests a chain of discrete states as deep as it is long; planning,
    walking and sizing it recurse nowhere (the checker hit Python's recursion limit at
    1,200 states, a QVR000, when the plan was built recursively)."""
    n = 1500
    checked = check(_chain(n))
    assert [d.code for d in checked.diagnostics if d.is_error] == []
    model = checked.models["p"]
    assert sum(1 for node in walk(model.summed) if node.summed) == n
    assert scope_runs(checked, "p")[f"s{n - 1}"] == 4  # the forward algorithm: 2 x 2 a state
