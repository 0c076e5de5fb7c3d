"""The server's own methods and payloads, named alike in the code, the docs and the VS Code client.

Three sides are read here, each from its own text:

- the code: `qvr_lsp/protocol/contract.py` declares each command's, request's and
  notification's fields (the handlers build those TypedDicts and refuse other
  arguments), and what the server really serves is read from the handler table
  (`qvr_lsp.app.HANDLERS`: its commands, its requests outside the protocol's own
  methods), from the notifications the sources send (every `.notify(NAME, ...)`) and
  from the client commands the code lenses name;
- docs/lsp.md, "The contract": the method names by kind and a table of each payload's
  fields;
- `vscode-extension/src/shared/protocol.ts`: the interfaces the client reads and its
  `ServerCommands`, `ServerNotifications` and `ClientCommands`.

A method or a field added, renamed or dropped on one side only fails here, as
rust-analyzer's tidy test holds its documented LSP extensions to the code; the tests
at the end show each kind of drift, on each side, is found."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import pytest
from lsprotocol.types import METHOD_TO_TYPES

from qvr_lsp.analysis.handlers import Command, Entry, Request
from qvr_lsp.analysis.kinds import WORKSPACE
from qvr_lsp.app import HANDLERS
from qvr_lsp.features.diagrams import diagram_arguments
from qvr_lsp.features.exports import export_arguments
from qvr_lsp.protocol import contract
from qvr_lsp.protocol.command_errors import CommandError
from qvr_lsp.runs.inference_request import InferenceRequest

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


@dataclasses.dataclass(frozen=True)
class Served:
    """What the server's code serves and sends of its own, read from the code itself."""

    commands: frozenset[str]
    requests: frozenset[str]
    notifications: frozenset[str]
    #: client commands the server asks the client to run (its code lenses')
    client_commands: frozenset[str]


def served(table: tuple[Entry, ...] = HANDLERS, package: Path = ROOT / "qvr_lsp") -> Served:
    """The handler table's commands and its requests outside the protocol's own methods,
    the notifications the sources send and the `qvr.client.*` commands they name."""
    commands = frozenset(e.name for e in table if isinstance(e, Command))
    requests = frozenset(
        e.method for e in table if isinstance(e, Request) and e.method not in METHOD_TO_TYPES
    )
    notifications: set[str] = set()
    client_commands: set[str] = set()
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            text = node.value if isinstance(node, ast.Constant) else None
            if isinstance(text, str) and re.fullmatch(r"qvr\.client\.\w+", text):
                client_commands.add(text)
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("notify", "send_notification")
                and node.args
            ):
                continue
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                notifications.add(name.value)
                continue
            assert isinstance(name, ast.Name), (
                f"{path}: a notification named by {ast.unparse(name)}"
            )
            module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
            notifications.add(getattr(importlib.import_module(module), name.id))
    return Served(commands, requests, frozenset(notifications), frozenset(client_commands))


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


def differences(
    docs: str,
    client: str,
    code: Served | None = None,
    declared_payloads: dict[str, tuple[str, ...]] = contract.PAYLOADS,
) -> list[str]:
    """What docs/lsp.md, protocol.ts and what the code serves (`served()`) say otherwise
    than qvr_lsp/protocol/contract.py."""
    found: list[str] = []
    code = code or served()
    for kind, in_code, declared_names in (
        ("commands", code.commands, contract.COMMANDS),
        ("requests", code.requests, contract.REQUESTS),
        ("notifications", code.notifications, contract.NOTIFICATIONS),
    ):
        if in_code != set(declared_names):
            found.append(f"the server's {kind} {sorted(in_code)}, contract.py {declared_names}")
    if not code.client_commands <= constants(client, "ClientCommands"):
        missing = sorted(code.client_commands - constants(client, "ClientCommands"))
        found.append(f"the lenses name client commands protocol.ts lacks: {missing}")
    payloads, kinds = documented(docs)
    if set(payloads) != set(declared_payloads):
        found.append(f"docs/lsp.md lists {sorted(payloads)}, the code {sorted(declared_payloads)}")
    for payload, fields in declared_payloads.items():
        if payload in payloads and payloads[payload] != fields:
            found.append(f"{payload}: docs/lsp.md {payloads[payload]}, the code {fields}")
        interface = IN_CLIENT.get(payload)
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
    before = set(differences(docs, client))
    old, new = change
    if side == "client":
        assert old in client
        client = client.replace(old, new, 1)
    else:
        assert old in docs
        docs = docs.replace(old, new, 1)
    assert set(differences(docs, client)) - before  # found, whatever else differs today


async def _nothing(*_: object) -> None:
    """A handler that the mutated tables below name; never called."""


def _code_changed(change: str, tmp_path: Path) -> tuple[Served, dict[str, tuple[str, ...]]]:
    """What the code side would say after `change`, made to that side only."""
    payloads = dict(contract.PAYLOADS)
    code = served()
    if change == "a command added to the table":
        code = served((*HANDLERS, Command("qvr.profile", _nothing)))
    elif change == "a command dropped from the table":
        kept = tuple(e for e in HANDLERS if getattr(e, "name", "") != contract.EXPORT_PROGRAM)
        code = served(kept)
    elif change == "a request of its own added to the table":
        code = served((*HANDLERS, Request("qvr/memory", WORKSPACE, _nothing)))
    elif change == "a notification sent under another name":
        package = tmp_path / "qvr_lsp"
        package.mkdir()
        (package / "progress.py").write_text(
            'def send(server):\n    server.protocol.notify("qvr/runProgress", {})\n',
            encoding="utf-8",
        )
        code = dataclasses.replace(code, notifications=served(package=package).notifications)
    elif change == "a lens naming a client command the client lacks":
        code = dataclasses.replace(code, client_commands=code.client_commands | {"qvr.client.fit"})
    elif change == "a result field renamed in the code":
        fields = payloads["qvr.diagram result"]
        payloads["qvr.diagram result"] = tuple("graph" if f == "text" else f for f in fields)
    elif change == "an optional argument made required in the code":
        fields = payloads["qvr.exportProgram arguments"]
        payloads["qvr.exportProgram arguments"] = tuple(f.rstrip("?") for f in fields)
    return code, payloads


CODE_CHANGES = [
    "a command added to the table",
    "a command dropped from the table",
    "a request of its own added to the table",
    "a notification sent under another name",
    "a lens naming a client command the client lacks",
    "a result field renamed in the code",
    "an optional argument made required in the code",
]


@pytest.mark.parametrize("change", CODE_CHANGES)
def test_a_change_to_the_code_alone_is_found(change: str, tmp_path: Path) -> None:
    docs, client = DOCS.read_text(encoding="utf-8"), PROTOCOL_TS.read_text("utf-8")
    before = set(differences(docs, client))
    code, payloads = _code_changed(change, tmp_path)
    assert set(differences(docs, client, code, payloads)) - before


def test_the_code_is_read_from_what_the_server_serves() -> None:
    """The reader of the code finds what the server registers and sends, not only what
    contract.py declares: every command, the status request, the progress notification
    and the lenses' client commands."""
    code = served()
    assert code.commands == {"qvr.diagram", "qvr.runInference", "qvr.exportProgram"}
    assert code.requests == {"qvr/serverStatus"}
    assert code.notifications == {"qvr/inferenceProgress"}
    assert {"qvr.client.runInference", "qvr.client.showDiagram"} <= code.client_commands


def test_the_server_answers_with_the_declared_payload_types() -> None:
    from qvr_lsp.features import exports, status
    from qvr_lsp.runs import run_progress

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
