"""The server's own payloads, named alike in the code, the docs and the VS Code client.

`qvr_lsp/contract.py` declares each command's, request's and notification's fields
(the handlers build those TypedDicts and refuse other arguments), docs/lsp.md lists
them in "The contract", and `vscode-extension/src/shared/protocol.ts` declares the
interfaces the client reads. A field added, renamed or dropped on one side only
fails here, as rust-analyzer's tidy test holds its documented LSP extensions to the
code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qvr_lsp import contract
from qvr_lsp.command_errors import CommandError
from qvr_lsp.diagrams import diagram_arguments
from qvr_lsp.exports import export_arguments
from qvr_lsp.inference_request import InferenceRequest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "lsp.md"
PROTOCOL_TS = ROOT / "vscode-extension" / "src" / "shared" / "protocol.ts"

#: The protocol.ts declaration of each payload: an interface, or a branch of a union
#: type (`ExportResult#0`); None where the VS Code client does not read the payload.
IN_CLIENT: dict[str, str | None] = {
    "qvr.diagram arguments": "DiagramParams",
    "qvr.diagram result": "DiagramResult",
    "diagram node": "DiagramNode",
    "qvr.runInference arguments": "InferenceParams",
    "qvr/inferenceProgress params": "InferenceProgress",
    "qvr.exportProgram arguments": "ExportParams",
    "qvr.exportProgram result (exported)": "ExportResult#0",
    "qvr.exportProgram result (refused)": "ExportResult#1",
    "export diagnostic": "ExportDiagnostic",
    "qvr/serverStatus result": None,  # for bug reports and tests
    "document status": None,
}


# ------------------------------------------------------------------ readers


def documented(text: str) -> tuple[dict[str, tuple[str, ...]], dict[str, set[str]]]:
    """docs/lsp.md's "The contract": each payload's fields, and the method names by kind."""
    section = text.split("\n## The contract\n", 1)[1].split("\n## ", 1)[0]
    payloads: dict[str, tuple[str, ...]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[1].startswith("`"):
            continue
        payloads[cells[0].replace("`", "")] = tuple(re.findall(r"`([^`]+)`", cells[1]))
    kinds: dict[str, set[str]] = {}
    for kind in ("Commands", "Request", "Notification"):
        found = re.search(rf"{kind}:\s+((?:`[^`]+`(?:,\s+)?)+)\.", section)
        kinds[kind] = set(re.findall(r"`([^`]+)`", found.group(1))) if found else set()
    return payloads, kinds


def declared(text: str, name: str) -> frozenset[str]:
    """The field names of protocol.ts's interface `name` (`Union#i`: the i-th object of
    a union type)."""
    if "#" in name:
        alias, index = name.split("#")
        body = re.search(rf"export type {alias} =(.*?);\n\n", text, re.S)
        assert body is not None, f"protocol.ts declares no type {alias}"
        branch = re.findall(r"\{([^{}]*)\}", body.group(1))[int(index)]
        return frozenset(re.findall(r"(\w+)\??:", branch))
    body = re.search(rf"export interface {name} \{{\n(.*?)\n\}}", text, re.S)
    assert body is not None, f"protocol.ts declares no interface {name}"
    fields = (
        re.match(r"\s+(\w+)\??:", line)
        for line in body.group(1).splitlines()
        if not line.strip().startswith(("/*", "*"))
    )
    return frozenset(m.group(1) for m in fields if m)


def constants(text: str, name: str) -> set[str]:
    """The string values of protocol.ts's `export const name = {...}`."""
    body = re.search(rf"export const {name} = \{{(.*?)\}} as const;", text, re.S)
    assert body is not None, f"protocol.ts declares no {name}"
    return set(re.findall(r':\s*"([^"]+)"', body.group(1)))


def differences(docs: str, client: str) -> list[str]:
    """What docs/lsp.md and protocol.ts say otherwise than qvr_lsp/contract.py."""
    found: list[str] = []
    payloads, kinds = documented(docs)
    if set(payloads) != set(contract.PAYLOADS):
        found.append(f"docs/lsp.md lists {sorted(payloads)}, the code {sorted(contract.PAYLOADS)}")
    for payload, fields in contract.PAYLOADS.items():
        if payload in payloads and payloads[payload] != fields:
            found.append(f"{payload}: docs/lsp.md {payloads[payload]}, the code {fields}")
        interface = IN_CLIENT[payload]
        if interface is not None:
            names = contract.names(fields)
            got = declared(client, interface)
            if got != names:
                found.append(
                    f"{payload}: protocol.ts {interface} {sorted(got)}, the code {sorted(names)}"
                )
    for kind, names_in_code in (
        ("Commands", contract.COMMANDS),
        ("Request", contract.REQUESTS),
        ("Notification", contract.NOTIFICATIONS),
    ):
        if kinds[kind] != set(names_in_code):
            found.append(f"docs/lsp.md {kind}: {sorted(kinds[kind])}, the code {names_in_code}")
    if constants(client, "ServerCommands") != set(contract.COMMANDS):
        found.append("protocol.ts ServerCommands differ from the code's commands")
    if constants(client, "ServerNotifications") != set(contract.NOTIFICATIONS):
        found.append("protocol.ts ServerNotifications differ from the code's notifications")
    return found


# ------------------------------------------------------------------ the contract


def test_the_code_the_docs_and_the_client_name_the_same_payloads() -> None:
    assert set(IN_CLIENT) == set(contract.PAYLOADS)
    assert differences(DOCS.read_text(encoding="utf-8"), PROTOCOL_TS.read_text("utf-8")) == []


@pytest.mark.parametrize(
    "side, change",
    [
        ("client", ("  errors: string[];\n}", "  errorList: string[];\n}")),  # DiagramNode
        ("client", ("  workerPid?: number | null;\n", "")),
        ("client", ('  exportProgram: "qvr.exportProgram",\n} as const;', "} as const;")),
        ("docs", ("`label`, `kind`, `type`", "`label`, `type`")),
        ("docs", ("`program?`, `target?` |", "`program?`, `target` |")),
        ("docs", ("Request:\n`qvr/serverStatus`.", "Request:\n`qvr/status`.")),
    ],
)
def test_a_payload_changed_on_one_side_only_is_found(side: str, change: tuple[str, str]) -> None:
    docs, client = DOCS.read_text(encoding="utf-8"), PROTOCOL_TS.read_text("utf-8")
    old, new = change
    if side == "client":
        assert old in client
        client = client.replace(old, new, 1)
    else:
        assert old in docs
        docs = docs.replace(old, new, 1)
    assert differences(docs, client) != []


def test_the_server_answers_with_the_declared_payload_types() -> None:
    from qvr_lsp import exports, run_progress
    from qvr_lsp.features import status

    assert run_progress.NOTIFICATION == contract.INFERENCE_PROGRESS
    assert exports.COMMAND == contract.EXPORT_PROGRAM
    assert status.METHOD == contract.SERVER_STATUS
    assert contract.fields(contract.InferenceProgress)[-1] == "live?"


# ------------------------------------------------------------------ arguments outside it


@pytest.mark.parametrize(
    "read, arguments",
    [
        (diagram_arguments, {"uri": "file:///a.qvr", "fromat": "dot"}),
        (export_arguments, {"uri": "file:///a.qvr", "targte": "stan"}),
        (InferenceRequest.from_arguments, {"uri": "file:///a.qvr", "step": 10}),
    ],
)
def test_an_argument_the_contract_does_not_name_is_refused(read: object, arguments: dict) -> None:  # type: ignore[type-arg]
    assert callable(read)
    with pytest.raises(CommandError, match="unknown argument"):
        read((arguments,))
