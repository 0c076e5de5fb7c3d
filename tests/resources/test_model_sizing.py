"""Model programs sized before anything is allocated (issue #24): plates, enumerated
scopes and their depth, the data and what the method keeps, from the checked `Model`.

A run over the budget is refused in one line naming the step that needs the most (the
checker warns with QVR601 while typing), and the sizing itself stays small: a billion-
entry plate is refused within 1 GB of peak memory. What is counted is held to the
runtime: each scope's body runs as often as the estimate says, and small and medium
programs measure within a small factor of their estimate.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

from qvr_core.check import check
from qvr_core.inference.errors import RunTooLargeError
from qvr_core.plan.runnable import runnability
from qvr_core.runs.sizing import size_model_run
from qvr_core.runtime.errors import QvrRuntimeError
from qvr_core.runtime.model import compile_model, marginal
from qvr_core.runtime.model.enumerate import SummedModel
from qvr_core.sizing.model_resources import (
    GUIDE_DRAWS,
    estimate_model,
    scope_runs,
)
from tests.conformance.shared import corpus

from .hostile_models import (
    BILLION,
    PLATE,
    TEMPLATE_IN_SCOPE,
    WIDE_BINOMIAL,
    WIDE_CATEGORICAL,
    nested,
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "models"
GB = 1 << 30
_BLOCK = re.compile(r"^```qvr\s*\n(.*?)^```", re.M | re.S)


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


# ------------------------------------------------------------------ the repros


def test_a_billion_entry_plate_is_refused_naming_the_site_over_it() -> None:
    module = check(BILLION)
    with pytest.raises(RunTooLargeError) as refused:
        size_model_run(module, "big", method="svi", steps=100, chains=1, budget=GB)
    line = _one_line(str(refused.value))
    assert line.startswith("program big needs about ")
    assert "over the memory budget of 1.07 GB" in line
    assert "observe y (line 5) holds 1,000,000,000 values (N)" in line


def test_nested_scopes_read_by_one_observe_are_refused_under_1gb_before_any_step() -> None:
    module = check(nested(18))
    with pytest.raises(RunTooLargeError) as refused:
        size_model_run(module, "deep", method="svi", steps=100, chains=1, budget=GB)
    line = _one_line(str(refused.value))
    assert "marginalize z17 (line 24)" in line
    assert "its body runs 262,144 times" in line
    # the same depth where each scope's sum reads only the innermost coordinate is cheap
    chain = check(nested(18, read_all=False))
    size_model_run(chain, "deep", method="svi", steps=100, chains=1, budget=GB)


@pytest.mark.parametrize("source", [WIDE_CATEGORICAL, WIDE_BINOMIAL.format(count=10_000_000)])
def test_a_sum_over_ten_million_values_is_refused(source: str) -> None:
    with pytest.raises(RunTooLargeError) as refused:
        size_model_run(check(source), "wide", method="svi", steps=100, chains=1, budget=GB)
    assert "over the memory budget" in _one_line(str(refused.value))


def test_the_sum_over_ten_million_values_is_what_is_blamed_when_nothing_else_is_big() -> None:
    need = estimate_model(check(WIDE_BINOMIAL.format(count=10_000_000)), "wide")
    culprit = need.culprit(GB)
    assert culprit is not None and culprit.label == "marginalize n"
    assert "sums over 10,000,001 values (Binomial)" in culprit.reason


@pytest.mark.parametrize(
    ("source", "line", "blamed"),
    [
        (BILLION, 5, "observe y holds 1,000,000,000 values (N)"),
        (nested(18), 24, "marginalize z17 sums over 2 values (K)"),
        (WIDE_BINOMIAL.format(count=10_000_000), 5, "marginalize n sums over 10,000,001"),
    ],
    ids=["plate", "nested", "wide"],
)
def test_qvr601_warns_while_typing_at_the_step_that_needs_the_most(
    source: str, line: int, blamed: str
) -> None:
    module = check(source, memory_budget=GB)
    found = [d for d in module.diagnostics if d.code == "QVR601"]
    assert len(found) == 1, module.diagnostics
    assert found[0].span.start_line + 1 == line
    assert found[0].message.startswith(blamed)
    assert "for an SVI run, over the memory budget of 1.07 GB" in found[0].message


def test_the_runtime_refuses_a_sum_over_too_many_values_before_making_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second guard at the enumeration itself (a support only the run's arguments size):
    refused at once, never `std::bad_alloc` or hours of enumeration."""
    monkeypatch.setattr(marginal, "enumeration_budget", lambda: GB)
    module = check(WIDE_BINOMIAL.format(count=10_000_000))
    program = compile_model(module, "wide")
    with torch.no_grad():
        values = program.run({}).values  # a draw sums nothing out
    with pytest.raises(QvrRuntimeError, match=r"line 5, marginalize n: .*10,000,001 values"):
        program.log_joint({}, values)


# ------------------------------------------------------------------ in a process


SIZING = r"""
import resource, sys
from qvr_core.check import check
from qvr_core.inference.errors import RunTooLargeError
from qvr_core.runs.sizing import size_model_run
module = check(sys.stdin.read())
try:
    size_model_run(module, module.default_export, method="svi", steps=100, chains=4,
                   budget=1 << 30)
except RunTooLargeError as e:
    print(e)
"""


#: Runs a command and reports it with the peak memory of that command alone.
WRAPPER = r"""
import json, resource, subprocess, sys
done = subprocess.run(json.loads(sys.argv[1]), input=sys.stdin.read(), capture_output=True,
                      text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"rc": done.returncode, "out": done.stdout, "err": done.stderr,
                  "peak": peak}))
"""


def _measured(command: list[str], stdin: str = "", limit: int | None = None) -> dict[str, Any]:
    """`command` run in a fresh process (under an address-space limit, if given): its exit
    status, output and peak resident memory."""

    def preexec() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, json.dumps(command)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=preexec,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
        cwd=ROOT,
        check=True,
    )
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def _child(code: str, stdin: str, limit: int | None = None) -> tuple[str, int]:
    """Python `code` in a fresh process: its output and peak resident memory."""
    r = _measured([sys.executable, "-c", code], stdin, limit)
    assert r["rc"] == 0, r["err"]
    return r["out"], r["peak"]


@pytest.mark.parametrize(
    "source", [BILLION, nested(18), WIDE_CATEGORICAL], ids=["plate", "nested", "wide"]
)
def test_sizing_a_program_too_large_stays_within_1gb_of_peak_memory(source: str) -> None:
    out, peak = _child(SIZING, source, limit=1 << 30)
    assert "over the memory budget" in _one_line(out)
    assert peak < GB


@pytest.mark.parametrize(
    ("source", "blamed"),
    [
        (BILLION, "observe y (line 5) holds 1,000,000,000 values (N)"),
        (nested(18), "marginalize z17 (line 24)"),
        (WIDE_BINOMIAL.format(count=10_000_000), "marginalize n (line 5)"),
        (WIDE_CATEGORICAL, "holds 10,000,000 values (K)"),
    ],
    ids=["plate", "nested", "binomial", "categorical"],
)
def test_qvr_run_refuses_a_model_too_large_in_one_line(
    tmp_path: Path, source: str, blamed: str
) -> None:
    path = tmp_path / "m.qvr"
    path.write_text(source)
    command = [sys.executable, "-m", "qvr_cli", "run", str(path), "--memory-budget", "1GB"]
    r = _measured(command, limit=2500 << 20)  # torch maps about 1.2 GB of address space
    assert r["rc"] == 1, r["err"]
    line = _one_line(r["err"])
    assert line.startswith("qvr run: error: program ") and "over the memory budget" in line
    assert blamed in line
    assert r["peak"] < GB


def test_the_model_sizing_does_not_import_torch() -> None:
    code = (
        "import sys\nfrom qvr_core.check import check\n"
        "from qvr_core.sizing.model_resources import estimate_model\n"
        f"estimate_model(check({BILLION!r}), 'big')\nassert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ------------------------------------------------------------------ against the runtime


def _runtime_runs(
    source: str, name: str, monkeypatch: pytest.MonkeyPatch, *, summed: bool = False
) -> Counter[str]:
    """How many values each scope's sum went through in one log joint, by its name; with
    `summed`, the log joint NUTS and SVI evaluate, the discrete latents summed out."""
    counted: Counter[str] = Counter()
    real = marginal.support_values

    def counting(dist: torch.distributions.Distribution, where: str) -> torch.Tensor:
        values = real(dist, where)
        counted[where.rsplit(" ", 1)[-1]] += int(values.shape[0])
        return values

    monkeypatch.setattr(marginal, "support_values", counting)
    program = compile_model(check(source), name)
    with torch.no_grad():
        values = program.run({}).values
    if summed:
        model = SummedModel(program, program.observed_names)
        model.log_joint({}, {n: values[n] for n in model.site_names})
    else:
        program.log_joint({}, values)
    return counted


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ((MODELS / "hmm.qvr").read_text(), "hmm"),
        ((MODELS / "gaussian_mixture.qvr").read_text(), "gaussian_mixture"),
        (nested(6), "deep"),
        (nested(6, read_all=False), "deep"),
        (nested(3, values=3, points=4), "deep"),
        (TEMPLATE_IN_SCOPE, "outer"),
    ],
    ids=["hmm", "mixture", "nested", "chain", "three-values", "template"],
)
def test_each_scope_runs_its_body_as_often_as_the_estimate_counts(
    source: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = Counter(
        {k.rsplit("$", 1)[-1]: v for k, v in scope_runs(check(source), name).items()}
    )
    assert _runtime_runs(source, name, monkeypatch) == expected


def test_the_hmm_is_summed_as_the_forward_algorithm_sums_it() -> None:
    assert scope_runs(check((MODELS / "hmm.qvr").read_text()), "hmm") == {
        "s0": 2,
        "s1": 4,
        "s2": 4,
        "s3": 4,
    }


MEASURE = r"""
import json, resource, sys
import torch
from qvr_core.check import check
from qvr_core.sizing.model_resources import estimate_model
from qvr_core.runs.run import run_inference
source, kwargs = json.loads(sys.stdin.read())
torch.set_num_threads(1)
module = check(source)
name = module.default_export
need = estimate_model(module, name, method=kwargs.get("method", "svi"), steps=kwargs["steps"],
                      chains=kwargs.get("chains", 1))
with open("/proc/self/statm") as f:
    base = int(f.read().split()[1]) * resource.getpagesize()
run_inference(source, memory_budget=1 << 50, **kwargs)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"estimate": need.total, "measured": peak - base}))
"""


@pytest.mark.parametrize(
    ("source", "kwargs"),
    [
        (
            (MODELS / "eight_schools_noncentered.qvr").read_text(),
            {"steps": 100, "data": str(MODELS / "eight_schools.json")},
        ),
        ((MODELS / "hmm.qvr").read_text(), {"steps": 20}),
        (PLATE.format(size=100_000), {"steps": 3}),
        # 6 iterations: the later ones each build a depth-10 tree of 100,000 coordinates
        # (about 4 s each) and hold no more memory than the first
        (PLATE.format(size=100_000), {"steps": 6, "method": "nuts", "chains": 1}),
        (nested(5, points=50_000), {"steps": 2}),
    ],
    ids=["eight-schools", "hmm", "plate-svi", "plate-nuts", "nested"],
)
def test_the_estimate_is_within_a_small_factor_of_a_measured_run(
    source: str, kwargs: dict[str, Any]
) -> None:
    out, _ = _child(MEASURE, json.dumps([source, kwargs]))
    r = json.loads(out.strip().splitlines()[-1])
    assert 0.5 <= r["estimate"] / r["measured"] <= 2.5, r


@pytest.mark.parametrize("name", ["eight_schools_noncentered", "hmm", "gaussian_mixture"])
def test_a_small_model_is_estimated_small_for_every_method(name: str) -> None:
    module = check((MODELS / f"{name}.qvr").read_text())
    program = module.default_export
    assert program is not None
    for method in ("svi", "nuts", "prior"):
        need = estimate_model(module, program, method=method, steps=100, chains=4)
        assert need.total < 200 << 20, (method, need)


# ------------------------------------------------------------------ what runs today


def _sources() -> list[tuple[str, str]]:
    out = [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(MODELS.glob("*.qvr"))]
    for page in sorted((ROOT / "docs" / "gallery").glob("*.md")):
        out += [(f"{page.name}#{i}", b) for i, b in enumerate(_BLOCK.findall(page.read_text()))]
    return out + [(c.name, c.text()) for c in corpus()]


def test_every_model_program_that_runs_is_admitted_and_not_warned_about() -> None:
    """Every runnable model program of the examples, the gallery and the shared corpus fits
    in well under a gigabyte for every method (4 NUTS chains), and draws no QVR601."""
    sized = 0
    for where, text in _sources():
        module = check(text, memory_budget=GB)
        if not module.ok:
            continue
        assert not [d for d in module.diagnostics if d.code == "QVR601"], where
        for name in module.models:
            if not runnability(module, name).ok:
                continue
            for method in ("svi", "nuts", "prior"):
                need = estimate_model(module, name, method=method, steps=100, chains=4)
                assert need.total < GB, (where, name, need.refusal(GB))
            sized += 1
    assert sized >= 3


# ------------------------------------------------------------------ what is counted


def test_svi_keeps_the_guide_draws_the_summary_is_computed_from() -> None:
    from qvr_core.runs.methods import GUIDE_DRAWS as RUN_GUIDE_DRAWS

    assert GUIDE_DRAWS == RUN_GUIDE_DRAWS
    module = check(PLATE.format(size=1_000_000))
    svi = estimate_model(module, "big", method="svi")
    assert svi.parameters == 1_000_001  # theta and mu
    assert svi.parameter_bytes > GUIDE_DRAWS * 4 * 1_000_000


def test_nuts_chains_each_hold_their_draws() -> None:
    module = check(PLATE.format(size=100_000))
    one = estimate_model(module, "big", method="nuts", steps=100, chains=1)
    four = estimate_model(module, "big", method="nuts", steps=100, chains=4)
    assert four.parameter_bytes == 4 * one.parameter_bytes
    assert "nuts in 4 chains (100,001 latent values)" in four.refusal(1 << 20)
    longer = estimate_model(module, "big", method="nuts", steps=1000, chains=1)
    assert longer.parameter_bytes > 5 * one.parameter_bytes


def test_prior_sampling_sums_nothing_out() -> None:
    module = check(nested(18))
    assert estimate_model(module, "deep", method="prior").total < 200 << 20
    assert estimate_model(module, "deep", method="svi").total > 4 * GB


def test_the_data_read_is_counted() -> None:
    module = check((MODELS / "eight_schools_noncentered.qvr").read_text())
    data = {"y": torch.zeros(8), "sigma": torch.zeros(8)}
    without = size_model_run(
        module, "eight_schools", method="svi", steps=100, chains=1, budget=GB
    ).need
    big = {"y": torch.zeros(8), "sigma": torch.zeros(8), "extra": torch.zeros(1_000_000)}
    more = size_model_run(
        module, "eight_schools", method="svi", steps=100, chains=1, budget=GB, data=big
    ).need
    small = size_model_run(
        module, "eight_schools", method="svi", steps=100, chains=1, budget=GB, data=data
    ).need
    assert small.data_bytes >= without.data_bytes
    assert more.data_bytes >= small.data_bytes + 2 * 4_000_000


#: Three coins read together and a categorical read alone: discrete latents without data,
#: which NUTS and SVI sum out as scopes over their readers (`Model.summed`).
SUMMED = """\
object One : FinSet 1
object K : FinSet 3

program p : One -> One
    sample mu <- Normal(0.0, 1.0)
    sample x0 <- Bernoulli(0.5)
    sample x1 <- Bernoulli(0.5)
    sample x2 <- Bernoulli(0.5)
    sample w <- Dirichlet(1.0) [over=K]
    sample centre : K <- Normal(0.0, 1.0)
    sample k : K <- Categorical(w)
    let s = x0 + x1 + x2 + mu
    observe y <- Normal(s, 1.0)
    observe v <- Normal(centre[k], 1.0)
    return mu

export p
"""


def test_a_summed_latent_runs_its_readers_as_often_as_the_estimate_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The estimate walks the plan NUTS and SVI evaluate (each discrete latent a scope over
    its readers), so it counts the sums the runtime makes: 2 x 2 x 2 runs of the coins'
    readers and 3 of the categorical's; `--method prior` draws them and sums nothing."""
    checked = check(SUMMED)
    counted = _runtime_runs(SUMMED, "p", monkeypatch, summed=True)
    assert counted == Counter(scope_runs(checked, "p"))
    # the coins nest (2, then 2 x 2, then 2 x 2 x 2 runs), the categorical sums alone
    assert sorted(counted.values()) == [2, 3, 4, 8] and counted["k"] == 3
    prior = estimate_model(checked, "p", method="prior", steps=10)
    nuts = estimate_model(checked, "p", method="nuts", steps=10)
    assert nuts.activation_bytes > prior.activation_bytes
