// The client side of notebooks' `%%qvr` cells (src/server/notebookCells.ts) against a
// stand-in language client: which cells reach the server, which features a cell gets, and
// the cells' diagnostics, pulled after the server has the cells' text.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CELL_SCHEME, type CellClient, type CellDiagnosticSink, NotebookCells, cellSelector, isMagicLine, isQvrCell, reachesServer } from "../src/server/notebookCells";

class FakeUri {
  constructor(
    readonly scheme: string,
    private readonly text: string,
  ) {}
  toString(): string {
    return this.text;
  }
}

interface FakeDocument {
  uri: FakeUri;
  lineCount: number;
  lineAt(line: number): { text: string };
}

let cellCount = 0;

function cell(text: string, scheme = CELL_SCHEME): FakeDocument {
  cellCount += 1;
  const lines = text.split("\n");
  const uri = new FakeUri(scheme, scheme === CELL_SCHEME ? `${CELL_SCHEME}:/work/notes.ipynb#cell${cellCount}` : `file:///work/model${cellCount}.qvr`);
  return { uri, lineCount: lines.length, lineAt: (line: number) => ({ text: lines[line]! }) };
}

const QVR_CELL = "%%qvr --run\nobject X : Real 2\n";
const PYTHON_CELL = "import numpy as np\nx = np.zeros(3)\n";

/** The server's capabilities as qvr-lsp declares them (the parts read here). */
const CAPABILITIES = {
  notebookDocumentSync: { notebookSelector: [{ notebook: "*", cells: [{ language: "python" }] }] },
  hoverProvider: true,
  completionProvider: { triggerCharacters: [".", "("], resolveProvider: false },
  signatureHelpProvider: { triggerCharacters: ["(", ","] },
  documentFormattingProvider: true,
  semanticTokensProvider: { legend: { tokenTypes: [], tokenModifiers: [] }, full: true },
  codeLensProvider: {},
  diagnosticProvider: { identifier: "qvr", interFileDependencies: false, workspaceDiagnostics: true },
};

interface Pull {
  params: { identifier?: string; textDocument: { uri: string }; previousResultId?: string };
  answer(report: { kind: "full"; resultId?: string; items: string[] } | { kind: "unchanged"; resultId: string }): void;
  fail(error: Error): void;
}

/** A language client that records registrations and diagnostic pulls, answered by the test. */
class FakeClient {
  readonly registered: { method: string; id: string; registerOptions: Record<string, unknown> }[] = [];
  readonly pulls: Pull[] = [];
  readonly errors: string[] = [];
  readonly features: unknown[] = [];
  private readonly refreshListeners: (() => void)[] = [];
  diagnosticFeature = true;

  readonly code2ProtocolConverter = { asUri: (uri: FakeUri) => uri.toString() };
  readonly protocol2CodeConverter = { asDiagnostics: async (items: string[]) => items.map((message) => ({ message })) };

  registerFeature(feature: unknown): void {
    this.features.push(feature);
  }

  getFeature(method: string): unknown {
    if (method === "textDocument/diagnostic") {
      if (!this.diagnosticFeature) return undefined;
      return {
        getAllProviders: () => [
          { onDidChangeDiagnosticsEmitter: { event: (listener: () => void) => this.onRefresh(listener) } },
        ],
      };
    }
    return {
      registrationType: { method },
      register: (data: { id: string; registerOptions: Record<string, unknown> }) => this.registered.push({ method, ...data }),
    };
  }

  sendRequest(method: string, params: Pull["params"]): Promise<unknown> {
    assert.equal(method, "textDocument/diagnostic");
    return new Promise((resolve, reject) => this.pulls.push({ params, answer: resolve, fail: reject }));
  }

  error(message: string): void {
    this.errors.push(message);
  }

  refresh(): void {
    for (const listener of [...this.refreshListeners]) listener();
  }

  private onRefresh(listener: () => void): { dispose(): void } {
    this.refreshListeners.push(listener);
    return { dispose: () => this.refreshListeners.splice(this.refreshListeners.indexOf(listener), 1) };
  }
}

/** A diagnostic collection that keeps what it was given, by URI. */
class FakeCollection {
  readonly shown = new Map<string, string[]>();
  set(uri: FakeUri, diagnostics: { message: string }[]): void {
    this.shown.set(uri.toString(), diagnostics.map((d) => d.message));
  }
  delete(uri: FakeUri): void {
    this.shown.delete(uri.toString());
  }
  clear(): void {
    this.shown.clear();
  }
}

/** Lets pending promise callbacks run (the middleware's awaits, the converter's). */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

function started(capabilities: Record<string, unknown> = CAPABILITIES) {
  const client = new FakeClient();
  const collection = new FakeCollection();
  const cells = new NotebookCells(collection as unknown as CellDiagnosticSink);
  cells.attach(client as unknown as CellClient);
  assert.deepEqual(client.features, [cells], "it registers itself with the client");
  cells.initialize(capabilities as never);
  return { client, collection, cells, notebooks: cells.middleware.notebooks! };
}

const asCells = (...documents: FakeDocument[]) => documents.map((document) => ({ document })) as never;

describe("notebook cells", () => {
  it("are QVR when their first line is the magic, as the server decides", () => {
    for (const line of ["%%qvr", "%%qvr --run", "%%qvr\t--run"]) assert.ok(isMagicLine(line), line);
    for (const line of ["%%qvrx", " %%qvr", "%%QVR", "# %%qvr", "", "import qvr"]) assert.ok(!isMagicLine(line), line);
    assert.ok(isQvrCell(cell(QVR_CELL) as never));
    assert.ok(!isQvrCell(cell(PYTHON_CELL) as never));
    assert.ok(!isQvrCell(cell("x = 1\n%%qvr\n") as never), "the magic counts on the first line only");
    assert.ok(!isQvrCell(cell(QVR_CELL, "file") as never), "a file is no cell");
  });

  it("reach the server only when QVR; QVR files always do", () => {
    assert.ok(reachesServer(cell(QVR_CELL) as never));
    assert.ok(!reachesServer(cell(PYTHON_CELL) as never));
    assert.ok(reachesServer(cell("object X : Real 2\n", "file") as never));
    assert.ok(reachesServer(cell("", "untitled") as never));
  });

  it("are selected as the server syncs them, and not at all by a server that syncs none", () => {
    assert.deepEqual(cellSelector(CAPABILITIES.notebookDocumentSync as never), [{ notebook: "*", language: "python" }]);
    assert.deepEqual(cellSelector(undefined), []);
    assert.deepEqual(
      cellSelector({
        notebookSelector: [
          { notebook: { notebookType: "jupyter-notebook" }, cells: [{ language: "python" }, { language: "qvr" }] },
          { cells: [{ language: "python" }] },
          { notebook: "interactive" },
        ],
      }),
      [
        { notebook: { notebookType: "jupyter-notebook" }, language: "python" },
        { notebook: { notebookType: "jupyter-notebook" }, language: "qvr" },
        { notebook: "*", language: "python" },
        { notebook: "interactive" },
      ],
    );
  });

  it("get hover, completion and signature help with the server's options, and no formatter, semantic tokens or code lens", () => {
    const { client } = started();
    assert.deepEqual(
      client.registered.map((r) => r.method),
      ["textDocument/hover", "textDocument/completion", "textDocument/signatureHelp"],
    );
    const selector = [{ notebook: "*", language: "python" }];
    for (const registration of client.registered) assert.deepEqual(registration.registerOptions.documentSelector, selector);
    const completion = client.registered.find((r) => r.method === "textDocument/completion")!;
    assert.deepEqual(completion.registerOptions.triggerCharacters, [".", "("]);
    assert.equal(new Set(client.registered.map((r) => r.id)).size, 3, "an id each");
  });

  it("get nothing from a server that does not sync notebooks", () => {
    const { client, notebooks } = started({ ...CAPABILITIES, notebookDocumentSync: undefined });
    assert.deepEqual(client.registered, []);
    assert.ok(notebooks.didOpen !== undefined);
  });

  it("filter hover, completion and signature help: a Python cell's never reach the server", async () => {
    const { cells } = started();
    const middleware = cells.middleware;
    const asked: string[] = [];
    const next = (document: FakeDocument) => {
      asked.push(document.uri.toString());
      return "answer";
    };
    const python = cell(PYTHON_CELL);
    const qvr = cell(QVR_CELL);
    const file = cell("object X : Real 2\n", "file");
    for (const document of [python, qvr, file]) {
      const d = document as never;
      const answers = [
        middleware.provideHover!(d, {} as never, {} as never, next as never),
        middleware.provideCompletionItem!(d, {} as never, {} as never, {} as never, next as never),
        middleware.provideSignatureHelp!(d, {} as never, {} as never, {} as never, next as never),
      ];
      assert.deepEqual(answers, document === python ? [undefined, undefined, undefined] : ["answer", "answer", "answer"]);
    }
    assert.deepEqual(asked, [qvr, qvr, qvr, file, file, file].map((d) => d.uri.toString()));
  });

  it("pull a QVR cell's diagnostics once the notebook's open has gone out, and none for a Python cell", async () => {
    const { client, collection, notebooks } = started();
    const qvr = cell(QVR_CELL);
    const python = cell(PYTHON_CELL);
    let sent = false;
    const opening = notebooks.didOpen!({} as never, asCells(qvr, python), async () => {
      await settle();
      assert.equal(client.pulls.length, 0, "no pull before the cells are sent");
      sent = true;
    });
    await opening;
    assert.ok(sent);
    assert.deepEqual(
      client.pulls.map((p) => p.params),
      [{ identifier: "qvr", textDocument: { uri: qvr.uri.toString() }, previousResultId: undefined }],
    );
    client.pulls[0]!.answer({ kind: "full", resultId: "1:1:0", items: ["QVR201: cannot compose"] });
    await settle();
    assert.deepEqual([...collection.shown], [[qvr.uri.toString(), ["QVR201: cannot compose"]]]);
  });

  it("pull a changed cell again with its last result id, and drop the diagnostics of a cell that stops being QVR or closes", async () => {
    const { client, collection, notebooks } = started();
    const qvr = cell(QVR_CELL);
    const other = cell(QVR_CELL);
    await notebooks.didOpen!({} as never, asCells(qvr, other), async () => undefined);
    client.pulls[0]!.answer({ kind: "full", resultId: "1:1:0", items: ["QVR201"] });
    client.pulls[1]!.answer({ kind: "full", resultId: "1:1:0", items: ["QVR101"] });
    await settle();
    assert.equal(collection.shown.size, 2);

    await notebooks.didChange!({ notebook: {}, cells: { textContent: [{ document: qvr }] } } as never, async () => undefined);
    assert.equal(client.pulls[2]!.params.previousResultId, "1:1:0");
    client.pulls[2]!.answer({ kind: "unchanged", resultId: "1:1:0" });
    await settle();
    assert.deepEqual(collection.shown.get(qvr.uri.toString()), ["QVR201"], "unchanged: kept");

    // The first line edited away from the magic: the server closes the cell, its squiggles go.
    const edited = { ...qvr, lineAt: () => ({ text: "import numpy" }) };
    await notebooks.didChange!({ notebook: {}, cells: { textContent: [{ document: edited }] } } as never, async () => undefined);
    assert.equal(client.pulls.length, 3, "no pull for a Python cell");
    assert.ok(!collection.shown.has(qvr.uri.toString()));

    await notebooks.didClose!({} as never, asCells(other), async () => undefined);
    assert.equal(collection.shown.size, 0);
  });

  it("pull every QVR cell again when the server asks for a refresh", async () => {
    const { client, collection, notebooks } = started();
    const qvr = cell(QVR_CELL);
    await notebooks.didOpen!({} as never, asCells(qvr), async () => undefined);
    client.pulls[0]!.answer({ kind: "full", resultId: "pending", items: [] });
    await settle();
    client.refresh();
    assert.equal(client.pulls.length, 2);
    assert.equal(client.pulls[1]!.params.previousResultId, "pending");
    client.pulls[1]!.answer({ kind: "full", resultId: "1:1:0", items: ["QVR201"] });
    await settle();
    assert.deepEqual(collection.shown.get(qvr.uri.toString()), ["QVR201"]);
  });

  it("drop an answer that a newer pull has overtaken, and everything at a stop", async () => {
    const { client, collection, cells, notebooks } = started();
    const qvr = cell(QVR_CELL);
    await notebooks.didOpen!({} as never, asCells(qvr), async () => undefined);
    await notebooks.didChange!({ notebook: {}, cells: { textContent: [{ document: qvr }] } } as never, async () => undefined);
    client.pulls[1]!.answer({ kind: "full", resultId: "2:2:0", items: ["new"] });
    await settle();
    client.pulls[0]!.answer({ kind: "full", resultId: "1:1:0", items: ["old"] });
    await settle();
    assert.deepEqual(collection.shown.get(qvr.uri.toString()), ["new"]);

    client.refresh();
    cells.clear();
    assert.equal(collection.shown.size, 0);
    client.pulls[2]!.fail(new Error("Client is not running"));
    await settle();
    assert.deepEqual(client.errors, [], "a pull cut short by the stop is no error");
    client.refresh();
    assert.equal(client.pulls.length, 3, "the stopped client's refreshes are no longer heard");
  });

  it("report a pull that fails", async () => {
    const { client, notebooks } = started();
    const qvr = cell(QVR_CELL);
    await notebooks.didOpen!({} as never, asCells(qvr), async () => undefined);
    client.pulls[0]!.fail(new Error("boom"));
    await settle();
    assert.equal(client.errors.length, 1);
    assert.match(client.errors[0]!, /notebook cell/);
  });
});
