/**
 * `%%qvr` cells of Jupyter notebooks, on the client's side.
 *
 * The server asks for the Python cells of every notebook (`notebookDocumentSync`) and
 * checks each cell whose first line is the `%%qvr` magic as a QVR document under the
 * cell's URI (qvr_core/text/cells.py); vscode-languageclient syncs those cells
 * by the server's selector whatever the client's own `documentSelector` says. What it does
 * not do by itself is ask the server about a cell:
 *
 * - Requests go only to documents the client's `documentSelector` matches, and every
 *   feature the server declares (formatting, semantic tokens, code lenses, folding, ...)
 *   is registered for that selector. Putting Python cells there would offer QVR's
 *   formatter and paint QVR's semantic tokens in every Python cell. So the selector stays
 *   QVR files only, and this feature registers the read-only features that make sense in a
 *   cell (hover, completion, signature help) for the cells the server syncs, and nothing
 *   else; the middleware lets a cell's request through only when the cell starts with
 *   `%%qvr`, since a selector cannot look at a document's text.
 * - VS Code pulls diagnostics (the server then pushes none), but vscode-languageclient
 *   pulls only for documents it saw opened as text documents and shown in a tab of their
 *   own: a notebook's cells are neither. So this feature pulls a `%%qvr` cell's diagnostics
 *   itself, once the notebook's open or change has gone to the server, and again when the
 *   server asks for a refresh (`workspace/diagnostic/refresh`), into a collection of its
 *   own.
 *
 * It imports vscode-languageclient and vscode for their types only: the unit tests run it
 * in Node against a stand-in client.
 */
import type { Diagnostic, DiagnosticCollection, Disposable, TextDocument, Uri } from "vscode";
import type {
  BaseLanguageClient,
  DiagnosticProviderShape,
  DocumentDiagnosticParams,
  DocumentDiagnosticReport,
  FeatureState,
  Middleware,
  NotebookCellTextDocumentFilter,
  ServerCapabilities,
  StaticFeature,
} from "vscode-languageclient/node";

/** The scheme of a notebook cell's text document in VS Code. */
export const CELL_SCHEME = "vscode-notebook-cell";

/** The cell magic of qvr/notebook.py. */
export const MAGIC = "%%qvr";

/** Whether a cell whose first line is `line` (without its line break) is a `%%qvr` cell: the
 * server's rule (notebook_cells.qvr_text), so that the client asks about the cells it checks. */
export function isMagicLine(line: string): boolean {
  return line === MAGIC || line.startsWith(`${MAGIC} `) || line.startsWith(`${MAGIC}\t`);
}

/** The parts of a text document the cell rule reads. */
export type CellLike = Pick<TextDocument, "uri" | "lineCount" | "lineAt">;

export function isQvrCell(document: CellLike): boolean {
  return document.uri.scheme === CELL_SCHEME && document.lineCount > 0 && isMagicLine(document.lineAt(0).text);
}

/** Whether a request about `document` may go to the server: any document but a notebook
 * cell (the client's selector has picked it), and a cell only when it is `%%qvr`. */
export function reachesServer(document: CellLike): boolean {
  return document.uri.scheme !== CELL_SCHEME || isQvrCell(document);
}

/**
 * The cells the server syncs (its `notebookDocumentSync`), as a document selector: where
 * the cell features are registered. Empty when the server syncs no notebooks (an older
 * server), so no cell asks it anything it never heard of.
 */
export function cellSelector(sync: ServerCapabilities["notebookDocumentSync"]): NotebookCellTextDocumentFilter[] {
  const selector: NotebookCellTextDocumentFilter[] = [];
  for (const entry of sync?.notebookSelector ?? []) {
    const notebook = entry.notebook ?? "*";
    if (entry.cells === undefined) selector.push({ notebook });
    else for (const cell of entry.cells) selector.push({ notebook, language: cell.language });
  }
  return selector;
}

/** What this feature uses of the language client. */
export type CellClient = Pick<
  BaseLanguageClient,
  "getFeature" | "registerFeature" | "sendRequest" | "code2ProtocolConverter" | "protocol2CodeConverter" | "error"
>;

/** Where the cells' diagnostics go: a diagnostic collection of the extension's. */
export type CellDiagnosticSink = Pick<DiagnosticCollection, "set" | "delete" | "clear">;

/** vscode-languageclient's diagnostic feature, as far as its type in `getFeature` leaves out:
 * a provider per registration, whose emitter fires when the server asks for a refresh. */
interface RefreshingFeature {
  getAllProviders(): DiagnosticProviderShape[];
}

function isRefreshing(feature: unknown): feature is RefreshingFeature {
  return typeof (feature as Partial<RefreshingFeature> | undefined)?.getAllProviders === "function";
}

export class NotebookCells implements StaticFeature {
  /** Goes into the client's options: the cell filter and the notebook sync hooks. */
  readonly middleware: Middleware;
  private client: CellClient | undefined;
  /** The `identifier` of the server's pull diagnostics; undefined when it has none. */
  private pullIdentifier: string | undefined;
  private pulls = false;
  /** The `%%qvr` cells synced, by URI, whose diagnostics are pulled. */
  private readonly cells = new Map<string, TextDocument>();
  private readonly resultIds = new Map<string, string>();
  /** The latest pull of each cell: an answer to an older one is dropped. */
  private readonly latest = new Map<string, number>();
  private pullCount = 0;
  private subscriptions: Disposable[] = [];

  constructor(private readonly diagnostics: CellDiagnosticSink) {
    this.middleware = {
      provideHover: (document, position, token, next) => (reachesServer(document) ? next(document, position, token) : undefined),
      provideCompletionItem: (document, position, context, token, next) =>
        reachesServer(document) ? next(document, position, context, token) : undefined,
      provideSignatureHelp: (document, position, context, token, next) =>
        reachesServer(document) ? next(document, position, context, token) : undefined,
      notebooks: {
        // After `next`: the server has the cells' text before it is asked about them.
        didOpen: async (notebook, opened, next) => {
          await next(notebook, opened);
          for (const cell of opened) this.update(cell.document);
        },
        didChange: async (event, next) => {
          await next(event);
          const changes = event.cells;
          for (const cell of changes?.structure?.didClose ?? []) this.forget(cell.document.uri);
          const touched = [
            ...(changes?.textContent ?? []).map((change) => change.document),
            ...(changes?.structure?.didOpen ?? []).map((cell) => cell.document),
            ...(changes?.data ?? []).map((cell) => cell.document),
          ];
          for (const document of new Set(touched)) this.update(document);
        },
        didClose: async (notebook, closed, next) => {
          await next(notebook, closed);
          for (const cell of closed) this.forget(cell.document.uri);
        },
      },
    };
  }

  /** Serves `client`'s cells: call once, with the client created with `middleware`. */
  attach(client: CellClient): void {
    this.client = client;
    client.registerFeature(this);
  }

  fillClientCapabilities(): void {
    // The built-in features already declare hover, completion, signature help, pull
    // diagnostics and notebook sync.
  }

  /** After the built-in features (it is registered after them), at every start of the client. */
  initialize(capabilities: ServerCapabilities): void {
    const client = this.client;
    const selector = cellSelector(capabilities.notebookDocumentSync);
    if (client === undefined || selector.length === 0) return;
    // The features a `%%qvr` cell gets: each answers about the cell alone and changes
    // nothing. Not formatting, semantic tokens, code lenses and the rest: those would be
    // offered for, or drawn in, every Python cell.
    const cellFeatures = [
      [client.getFeature("textDocument/hover"), capabilities.hoverProvider],
      [client.getFeature("textDocument/completion"), capabilities.completionProvider],
      [client.getFeature("textDocument/signatureHelp"), capabilities.signatureHelpProvider],
    ] as const;
    for (const [feature, options] of cellFeatures) {
      if (options === undefined || options === false) continue;
      // The server's own options (trigger characters, resolve) for the cells' selector: the
      // client's feature makes the provider, with its conversions and this middleware.
      feature.register({
        id: `qvr-notebook-cells:${feature.registrationType.method}`,
        registerOptions: { ...(options === true ? {} : options), documentSelector: selector },
      });
    }
    const provider = capabilities.diagnosticProvider;
    this.pulls = provider !== undefined;
    this.pullIdentifier = provider?.identifier;
    const diagnostics = client.getFeature("textDocument/diagnostic");
    if (this.pulls && isRefreshing(diagnostics)) {
      for (const registration of diagnostics.getAllProviders()) {
        this.subscriptions.push(registration.onDidChangeDiagnosticsEmitter.event(() => this.pullAll()));
      }
    }
  }

  getState(): FeatureState {
    return { kind: "static" };
  }

  /** The client stopped: its cells' diagnostics go (a new start opens the notebooks again). */
  clear(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
    this.subscriptions = [];
    this.cells.clear();
    this.resultIds.clear();
    this.latest.clear();
    this.diagnostics.clear();
  }

  /** A synced cell was opened or changed: pull it if it is `%%qvr`, else drop what it had. */
  private update(document: TextDocument): void {
    if (!isQvrCell(document)) {
      this.forget(document.uri);
      return;
    }
    this.cells.set(document.uri.toString(), document);
    void this.pull(document);
  }

  private forget(uri: Uri): void {
    const key = uri.toString();
    this.cells.delete(key);
    this.resultIds.delete(key);
    this.latest.delete(key);
    this.diagnostics.delete(uri);
  }

  private pullAll(): void {
    for (const document of this.cells.values()) void this.pull(document);
  }

  private async pull(document: TextDocument): Promise<void> {
    const client = this.client;
    if (client === undefined || !this.pulls) return;
    const key = document.uri.toString();
    const pull = ++this.pullCount;
    this.latest.set(key, pull);
    const current = () => this.latest.get(key) === pull;
    const params: DocumentDiagnosticParams = {
      identifier: this.pullIdentifier,
      textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri) },
      previousResultId: this.resultIds.get(key),
    };
    try {
      const report = await client.sendRequest<DocumentDiagnosticReport>("textDocument/diagnostic", params);
      if (!current()) return;
      if (report.kind === "full") {
        const items: Diagnostic[] = await client.protocol2CodeConverter.asDiagnostics(report.items);
        if (!current()) return;
        this.diagnostics.set(document.uri, items);
      }
      if (report.resultId !== undefined) this.resultIds.set(key, report.resultId);
      else this.resultIds.delete(key);
    } catch (error) {
      // A pull cut short by a stop or a newer pull has nothing to report.
      if (current()) client.error(`Pulling the diagnostics of the notebook cell ${key} failed.`, error, false);
    }
  }
}
