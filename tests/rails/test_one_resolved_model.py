"""One resolved model (issue 48): the checker decides, every reader reads.

For every runnable model program of the examples, the posteriordb examples, the test
models and the shared corpus, what the runtime evaluates, the summed plan NUTS and SVI
sum, the plan the Stan export writes, each site's support and the boxes of the diagram are
the checked model's own (`Model.tree`, `Model.summed`, `Site.support`), not a copy rebuilt
from the flat steps; the plan every exporter lowers holds that model, and the memory
estimate opens exactly the summed plan's scopes. `test_no_module_but_the_checker_plans_a_sum`
and tests/rails/test_one_scope_tree.py hold every module to it; that the exported programs
score what qvr scores is tests/export/test_every_model_scores.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from qvr_core.check import check
from qvr_core.check.model import Model, Node, Site, walk
from qvr_core.check.module import CheckedModule
from qvr_core.export.plan import Plan, make_plan
from qvr_core.graph.build import build_graph, graph_clusters
from qvr_core.graph.nodes import ClusterKind
from qvr_core.runtime.distributions import torch_constraint
from qvr_core.runtime.model.enumerate import summed_trees
from qvr_core.runtime.model.program import ModelProgram, compile_model
from qvr_core.sizing.model_resources import MAX_TEMPLATE_DEPTH, scope_runs
from tests.conformance.shared import corpus
from tests.conftest import ROOT
from tests.resolved_models import runnable_models

MODELS = runnable_models()


def _shape(nodes: tuple[Node, ...]) -> tuple[object, ...]:
    return tuple((n.step.name, n.summed, _shape(n.body)) for n in nodes)


@pytest.mark.parametrize(
    ("path", "program", "text"), MODELS, ids=[f"{f}::{p}" for f, p, _ in MODELS]
)
def test_every_reader_reads_the_checked_model(path: str, program: str, text: str) -> None:
    checked = check(text)
    model = checked.models[program]
    compiled = compile_model(checked, program)
    _runtime(checked, model, compiled)
    _supports(compiled)
    # the Stan export writes the model's summed plan when the data gives no discrete site
    assert model.summed_with_data(()) is model.summed
    _exports(checked, program, model)
    _sizing(checked, program)
    _diagram(checked, program, model)


def _runtime(checked: CheckedModule, model: Model, compiled: ModelProgram) -> None:
    """The runtime evaluates the checked trees themselves, the program's and each
    template's; what NUTS and SVI evaluate is the checked summed plan."""
    assert compiled.top.nodes is model.tree
    for name, template in compiled.templates.items():
        assert template.nodes is checked.models[name].tree
    (top, templates), _ = summed_trees(compiled)
    assert top.nodes is model.summed
    for name, template in templates.items():
        assert template.nodes is checked.models[name].summed


def _supports(compiled: ModelProgram) -> None:
    """What inference moves a site in is its family's support from the registry, and the
    name the summary gives it is that support's."""
    for name in compiled.site_names:
        support = compiled.site(name).support
        assert support is not None
        assert compiled.site_support(name) == support.label
        try:
            expected = torch_constraint(support)
        except ValueError:  # bounded by an argument: known once a run binds it
            continue
        assert compiled.site_constraint(name) is expected or repr(
            compiled.site_constraint(name)
        ) == repr(expected)


def _exports(checked: CheckedModule, program: str, model: Model) -> None:
    """Every exporter lowers the plan `make_plan` gives it, and that plan holds the checked
    model itself (its tree, summed plan, sites and supports), not a rebuilt one."""
    plan = make_plan(checked, program, "<source>")
    if isinstance(plan, Plan):
        assert plan.model is model


def _sizing(checked: CheckedModule, program: str) -> None:
    """The memory estimate opens a scope for each scope of the summed plan NUTS and SVI
    evaluate (a template's under its call, `v$z`), and for nothing else."""
    expected: set[str] = set()

    def scopes(nodes: tuple[Node, ...], prefix: str, depth: int) -> None:
        for node in nodes:
            step = node.step
            callee = step.callee if isinstance(step, Site) else None
            if node.scope and callee is None:
                expected.add(prefix + step.name)
            scopes(node.body, prefix, depth)
            if callee is not None and depth < MAX_TEMPLATE_DEPTH:
                scopes(checked.models[callee].summed, f"{prefix}{step.name}$", depth + 1)

    scopes(checked.models[program].summed, "", 0)
    assert set(scope_runs(checked, program)) == expected


def _diagram(checked: CheckedModule, program: str, model: Model) -> None:
    """A box per `marginalize` of the tree, inside the boxes of the ones around it."""
    clusters = graph_clusters(build_graph(checked, program))
    by_id = {c.id: c for c in clusters}
    marginal = {c.name: c for c in clusters if c.kind is ClusterKind.MARGINAL}

    def around(cluster_id: str | None) -> tuple[str, ...]:
        names: list[str] = []
        while cluster_id is not None:
            c = by_id[cluster_id]
            if c.kind is ClusterKind.MARGINAL:
                names.insert(0, c.name)
            cluster_id = c.parent
        return tuple(names)

    def check_scopes(nodes: tuple[Node, ...], outer: tuple[str, ...]) -> None:
        for node in nodes:
            if node.scope:
                assert around(marginal[node.step.name].parent) == outer
                check_scopes(node.body, (*outer, node.step.name))

    check_scopes(model.tree, ())
    assert len(marginal) == sum(1 for n in walk(model.tree) if n.scope)


def _calls(path: Path, names: frozenset[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT).as_posix()}:{n.lineno} {n.func.id}"
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
    ]


def test_no_module_but_the_checker_plans_a_sum() -> None:
    """`scope_tree` and `summed_plan` are called in check/model.py alone: a reader that
    called one would be building its own copy of the plan."""
    home = ROOT / "qvr_core" / "check" / "model.py"
    found = [
        call
        for path in sorted((ROOT / "qvr_core").rglob("*.py"))
        if path != home
        for call in _calls(path, frozenset({"scope_tree", "summed_plan"}))
    ]
    assert found == []


def test_the_programs_cover_sums_templates_and_bounds() -> None:
    """The set is the one the claim needs: programs with a `marginalize`, a summed
    discrete site, a template call and a support bounded by an argument (each in
    tests/models/resolved.qvr, with or without the shared corpus)."""
    kinds = set()
    for _, program, text in MODELS:
        model = check(text).models[program]
        nodes = list(walk(model.summed))
        kinds |= {"marginalize" for n in nodes if n.scope and not n.summed}
        kinds |= {"summed" for n in nodes if n.summed}
        kinds |= {"template" for s in model.sites if s.callee is not None}
        kinds |= {
            "bounded"
            for s in model.sites
            if s.support is not None and isinstance(s.support.low, str)
        }
    assert kinds == {"marginalize", "summed", "template", "bounded"}
    assert len(MODELS) >= (100 if corpus() else 20)  # the corpus adds some 85
