"""`qvr.runInference` through the real server: the result carries the attention weights
the worker recorded for the first example (what the run view draws as heatmaps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp_commands.conftest import open_file, without_spare
from tests.lsp_commands.test_run_inference import run
from tests.runs.test_attention_record import attention_source

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = without_spare()  # the spare is not this module's subject (conftest)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("attention")
    (root / "reader.qvr").write_text(attention_source(2))
    return root


async def test_the_run_result_carries_each_attentions_weights(client, workspace):
    uri = open_file(client, workspace / "reader.qvr")
    summary = await run(client, {"uri": uri, "method": "svi", "steps": 3, "batch": 2, "seq_len": 5})
    assert summary["status"] == "completed"
    (attention,) = summary["attention"]
    assert attention["label"] == "attend" and attention["site"] == "reader.h"
    assert attention["kind"] == "self" and attention["example"] == 0
    assert (attention["heads"], attention["queries"], attention["keys"]) == (2, 5, 5)
    assert len(attention["tokens"]) == 5
    weights = attention["weights"]
    assert [len(head) for head in weights] == [5, 5]
    for head in weights:
        for row in head:
            assert len(row) == 5 and all(0 <= w <= 1 for w in row)
            assert sum(row) == pytest.approx(1, abs=5 * 5e-5)  # four decimals each
