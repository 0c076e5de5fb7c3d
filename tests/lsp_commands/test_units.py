"""The server side of the commands at library level: arguments, data paths, thinning."""

from __future__ import annotations

from pathlib import Path

import pytest

from qvr_lsp.features.diagrams import diagram_arguments
from qvr_lsp.protocol.command_errors import CommandError
from qvr_lsp.runs.datapaths import DataPathError, resolve_data_path, workspace_roots
from qvr_lsp.runs.inference_request import InferenceRequest
from qvr_lsp.runs.inference_runs import RunLimits
from qvr_lsp.runs.run_progress import thin


def test_request_defaults_and_code_lens_form() -> None:
    request = InferenceRequest.from_arguments(("file:///w/m.qvr", "prog"))
    run = request.run
    assert (request.uri, run.program, run.method) == ("file:///w/m.qvr", "prog", "svi")
    assert (run.steps, run.lr, run.seed, run.batch, run.seq_len) == (
        100,
        0.01,
        0,
        4,
        8,
    )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"method": "hmc"}, "method must be one of svi, nuts, prior"),
        ({"steps": 0}, "steps must be a whole number from 1"),
        ({"steps": True}, "steps must be a whole number"),
        ({"lr": -1}, "lr must be a positive finite number"),
        ({"lr": float("nan")}, "lr must be a positive finite number"),
        ({"batch": "4"}, "batch must be a whole number"),
        ({"colour": "red"}, "unknown argument(s) colour"),
        ({"mass_matrix": "full"}, "mass_matrix must be one of diag, dense, fisher, low-rank, auto"),
        ({"uri": ""}, "uri must be a non-empty string"),
    ],
)
def test_request_refuses_bad_arguments(fields: dict, message: str) -> None:
    with pytest.raises(CommandError) as info:
        InferenceRequest.from_arguments(({"uri": "file:///w/m.qvr", **fields},))
    assert message in info.value.message and info.value.kind == "invalid"


def test_request_takes_the_mass_matrix() -> None:
    request = InferenceRequest.from_arguments(
        ({"uri": "file:///w/m.qvr", "method": "nuts", "mass_matrix": "dense"},)
    )
    assert request.run.mass_matrix == "dense"
    assert request.job_arguments(None)["mass_matrix"] == "dense"


def test_limits_let_a_request_ask_for_less_never_more() -> None:
    limits = RunLimits(timeout_seconds=60, memory_mb=2048)
    ask = InferenceRequest(uri="u", timeout=5, memory_mb=99999)
    assert limits.for_request(ask) == RunLimits(5, 2048)


def test_limits_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QVR_INFERENCE_TIMEOUT_SECONDS", "30")
    monkeypatch.setenv("QVR_INFERENCE_MEMORY_MB", "nonsense")
    assert RunLimits.from_environment() == RunLimits(30.0, 4096)


def test_data_paths_stay_inside_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "d").mkdir(parents=True)
    (root / "d" / "a.npz").write_bytes(b"")
    roots = workspace_roots([root.as_uri()], (root / "m.qvr").as_uri())
    assert resolve_data_path("d/a.npz", roots) == (root / "d" / "a.npz").resolve()
    assert resolve_data_path(str(root / "d" / "a.npz"), roots).name == "a.npz"
    for bad in ("../x.csv", "d/../../x.csv", "/etc/passwd"):
        with pytest.raises(DataPathError, match="outside the workspace"):
            resolve_data_path(bad, roots)


def test_without_workspace_folders_the_documents_folder_is_the_root(tmp_path: Path) -> None:
    assert workspace_roots([], (tmp_path / "m.qvr").as_uri()) == [tmp_path.resolve()]


def test_diagram_arguments_both_forms() -> None:
    assert diagram_arguments(({"uri": "u", "format": "dot"},)) == ("u", None, "dot")
    assert diagram_arguments(("u", "prog")) == ("u", "prog", "mermaid")
    with pytest.raises(CommandError, match="format must be one of"):
        diagram_arguments(({"uri": "u", "format": "png"},))


def test_thin_keeps_first_and_last_and_spacing() -> None:
    points = [[i, float(i)] for i in range(1, 10001)]
    thinned = thin(points, 2000)
    assert len(thinned) == 2000
    assert thinned[0] == [1, 1.0] and thinned[-1] == [10000, 10000.0]
    assert thin(points[:5], 2000) == points[:5]


def test_worker_classifies_failures_by_what_the_user_can_do() -> None:
    from qvr_lsp.runs import worker

    class NonFiniteLossError(Exception):
        pass

    class InferenceError(Exception):
        pass

    assert worker._kind(NonFiniteLossError("the loss became nan at step 2")) == "nan"
    assert worker._kind(InferenceError("bad data")) == "inference"
    assert worker._kind(RuntimeError("DefaultCPUAllocator: can't allocate memory")) == "memory"
    assert worker._kind(ImportError("libtorch_cpu.so: failed to map segment")) == "memory"
    assert worker._kind(ValueError("boom")) == "error"
    assert worker._message(InferenceError("bad data")) == "bad data"
    assert worker._message(ValueError("boom")) == "ValueError: boom"


def test_worker_events_are_strict_json() -> None:
    from qvr_lsp.runs import worker

    assert worker._finite({"a": [1.0, float("nan")], "b": float("inf")}) == {
        "a": [1.0, None],
        "b": None,
    }


def test_memory_budget_setting_forms() -> None:
    from qvr_lsp.protocol.settings import Settings

    s = Settings().updated({"qvr": {"run": {"memoryBudget": "2GB"}}})
    assert s.memory_budget == 2 << 30 and s.strict is False
    assert s.updated({"qvr": {"run.memoryBudget": 512}}).memory_budget == 512 << 20
    assert s.updated({"qvr": {"run": {"memoryBudget": "lots"}}}) == s  # ignored, logged
    assert s.updated({"qvr": {"run": {"memoryBudget": None}}}).memory_budget is None
    assert s.updated({"qvr": {"strict": True}}).memory_budget == 2 << 30
