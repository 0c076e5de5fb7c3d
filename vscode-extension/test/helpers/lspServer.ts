/**
 * Runs the real Python language server over stdio and speaks LSP to it with
 * vscode-jsonrpc, the transport vscode-languageclient itself uses.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import {
  CancellationTokenSource,
  type MessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
} from "vscode-jsonrpc/node";
import { repoRoot } from "./paths";

/** The interpreter of the repository's virtual environment (override with QVR_PYTHON). */
export const serverPython = process.env.QVR_PYTHON ?? path.join(repoRoot, ".venv", "bin", "python");

export interface Diagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity?: number;
  code?: string | number;
  message: string;
}

export interface PublishedDiagnostics {
  uri: string;
  version?: number;
  diagnostics: Diagnostic[];
}

/** Why the server cannot be run here, or undefined when it can. */
export function serverUnavailableReason(): string | undefined {
  if (!existsSync(serverPython)) return `no Python environment at ${serverPython}`;
  const probe = spawnSync(serverPython, ["-c", "import qvr_lsp.protocol.server"], { cwd: repoRoot, encoding: "utf8" });
  if (probe.status !== 0) return `qvr_lsp.protocol.server cannot be imported: ${probe.stderr.trim().split("\n").pop()}`;
  return undefined;
}

export function fileUri(file: string): string {
  return pathToFileURL(file).toString();
}

export class LspServer {
  readonly connection: MessageConnection;
  readonly published: PublishedDiagnostics[] = [];
  readonly notifications: { method: string; params: unknown }[] = [];
  stderr = "";
  private readonly process: ChildProcessWithoutNullStreams;
  private readonly waiters: (() => void)[] = [];
  private strict = false;

  constructor() {
    this.process = spawn(serverPython, ["-P", "-m", "qvr_lsp"], { cwd: repoRoot, stdio: "pipe" });
    this.process.stderr.setEncoding("utf8");
    this.process.stderr.on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.connection = createMessageConnection(
      new StreamMessageReader(this.process.stdout),
      new StreamMessageWriter(this.process.stdin),
    );
    this.connection.onNotification("textDocument/publishDiagnostics", (params: PublishedDiagnostics) => {
      this.published.push(params);
      this.wake();
    });
    this.connection.onNotification((method: string, params: unknown) => {
      this.notifications.push({ method, params });
      this.wake();
    });
    // Server-to-client requests, answered as VS Code's client answers them.
    this.connection.onRequest("workspace/configuration", (params: { items: { section?: string }[] }) =>
      params.items.map((item) =>
        item.section === "qvr" ? { strict: this.strict } : item.section === "qvr.strict" ? this.strict : null,
      ),
    );
    this.connection.onRequest(() => null);
    this.connection.listen();
  }

  async initialize(strict: boolean): Promise<{ capabilities: Record<string, unknown> }> {
    this.strict = strict;
    const result = await this.connection.sendRequest<{ capabilities: Record<string, unknown> }>("initialize", {
      processId: process.pid,
      clientInfo: { name: "qvr-vscode-test", version: "0.1.0" },
      rootUri: fileUri(repoRoot),
      workspaceFolders: [{ uri: fileUri(repoRoot), name: "qvr" }],
      initializationOptions: { qvr: { strict } },
      capabilities: clientCapabilities,
    });
    await this.connection.sendNotification("initialized", {});
    return result;
  }

  async open(uri: string, text: string, version = 1): Promise<void> {
    await this.connection.sendNotification("textDocument/didOpen", {
      textDocument: { uri, languageId: "qvr", version, text },
    });
  }

  executeCommand<T>(command: string, args: unknown, token = new CancellationTokenSource().token): Promise<T> {
    return this.connection.sendRequest<T>("workspace/executeCommand", { command, arguments: [args] }, token);
  }

  /** Waits for a diagnostics publication for `uri` that satisfies `accept`. */
  async diagnostics(
    uri: string,
    accept: (published: PublishedDiagnostics) => boolean,
    timeoutMs = 30_000,
  ): Promise<PublishedDiagnostics> {
    return this.waitFor(() => this.published.find((p) => p.uri === uri && accept(p)), timeoutMs, `diagnostics for ${uri}`);
  }

  async notification<T>(method: string, accept: (params: T) => boolean, timeoutMs: number): Promise<T> {
    const found = await this.waitFor(
      () => this.notifications.find((n) => n.method === method && accept(n.params as T)),
      timeoutMs,
      method,
    );
    return found.params as T;
  }

  async shutdown(): Promise<void> {
    try {
      await withTimeout(this.connection.sendRequest("shutdown"), 5_000, "shutdown");
      await this.connection.sendNotification("exit");
    } catch {
      // A server that does not shut down is killed below; the test has already judged it.
    }
    const exited = new Promise<void>((resolve) => this.process.once("exit", () => resolve()));
    const timer = setTimeout(() => this.process.kill("SIGKILL"), 5_000);
    if (this.process.exitCode === null && this.process.signalCode === null) await exited;
    clearTimeout(timer);
    this.connection.dispose();
  }

  private async waitFor<T>(find: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; server stderr:\n${this.stderr.slice(-4000)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} timed out`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}

/** The capabilities that matter to this server, as vscode-languageclient 9 announces them. */
const clientCapabilities = {
  general: { positionEncodings: ["utf-16"] },
  window: { workDoneProgress: true, showMessage: {} },
  workspace: {
    configuration: true,
    didChangeConfiguration: { dynamicRegistration: true },
    executeCommand: { dynamicRegistration: true },
    workspaceFolders: true,
    symbol: { dynamicRegistration: true },
    codeLens: { refreshSupport: true },
    semanticTokens: { refreshSupport: true },
    inlayHint: { refreshSupport: true },
  },
  textDocument: {
    synchronization: { dynamicRegistration: true, didSave: true, willSave: true, willSaveWaitUntil: true },
    publishDiagnostics: {
      relatedInformation: true,
      versionSupport: false,
      tagSupport: { valueSet: [1, 2] },
      codeDescriptionSupport: true,
      dataSupport: true,
    },
    hover: { dynamicRegistration: true, contentFormat: ["markdown", "plaintext"] },
    codeLens: { dynamicRegistration: true },
    completion: { dynamicRegistration: true, completionItem: { snippetSupport: true } },
    definition: { dynamicRegistration: true, linkSupport: true },
    documentSymbol: { dynamicRegistration: true, hierarchicalDocumentSymbolSupport: true },
    codeAction: {
      dynamicRegistration: true,
      codeActionLiteralSupport: { codeActionKind: { valueSet: ["", "quickfix", "refactor", "source"] } },
    },
    rename: { dynamicRegistration: true, prepareSupport: true },
    inlayHint: { dynamicRegistration: true },
    semanticTokens: {
      dynamicRegistration: true,
      requests: { range: true, full: { delta: true } },
      tokenTypes: [],
      tokenModifiers: [],
      formats: ["relative"],
    },
  },
};
