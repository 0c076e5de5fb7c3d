/**
 * "QVR: Show Diagram": a webview beside the editor that draws the active .qvr
 * document via the server's `qvr.diagram` command, redraws as the user types, and
 * reveals a node's source when it is clicked.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { ExecuteCommandRequest } from "vscode-languageclient/node";
import { diagramFormatSetting } from "../config";
import { isQvrCell } from "../server/notebookCells";
import type { ServerManager } from "../server/serverManager";
import { Debouncer } from "../shared/debounce";
import { errorMessage } from "../shared/errors";
import { type ToDiagramView, handleDiagramViewMessage } from "../shared/messages";
import { type DiagramFormat, type DiagramParams, type Range, ServerCommands, parseDiagramResult } from "../shared/protocol";
import { webviewAssets, webviewRoots } from "../webview/assets";
import { renderDiagramPage } from "../webview/pages";

const REDRAW_DELAY_MS = 300;

interface DiagramTarget {
  uri: vscode.Uri;
  /** A program or let to draw alone (from a code lens); the whole file otherwise. */
  name?: string;
}

export class DiagramPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private target: DiagramTarget | undefined;
  private format: DiagramFormat = diagramFormatSetting();
  /** The last message shown, replayed when the webview (re)loads. */
  private shown: ToDiagramView | undefined;
  /** Diagram requests overlap while typing; only the newest may be shown. */
  private latestRequest = 0;
  private readonly redraw = new Debouncer(REDRAW_DELAY_MS, () => void this.update());
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly server: ServerManager,
    private readonly log: vscode.OutputChannel,
  ) {
    this.disposables.push(
      vscode.workspace.onDidChangeTextDocument((event) => {
        if (this.panel !== undefined && sameUri(event.document.uri, this.target?.uri)) this.redraw.trigger();
      }),
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        const document = editor?.document;
        if (this.panel === undefined || document === undefined || !hasDiagram(document) || sameUri(document.uri, this.target?.uri)) return;
        this.retarget({ uri: document.uri });
      }),
      server.onDidStart(() => {
        if (this.panel !== undefined) void this.update();
      }),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (!event.affectsConfiguration("qvr.diagram.format")) return;
        this.format = diagramFormatSetting();
        if (this.panel !== undefined) void this.update();
      }),
    );
  }

  /** Opens (or focuses) the panel for `target`, by default the active .qvr editor. */
  show(target: DiagramTarget | undefined): void {
    const resolved = target ?? activeQvrDocument();
    if (resolved === undefined) {
      void vscode.window.showInformationMessage("Open a .qvr file, or a notebook's %%qvr cell, to see its diagram.");
      return;
    }
    if (this.panel === undefined) {
      this.panel = this.createPanel(resolved);
    } else {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    }
    this.retarget(resolved);
  }

  dispose(): void {
    this.redraw.dispose();
    this.panel?.dispose();
    for (const disposable of this.disposables) disposable.dispose();
  }

  private createPanel(target: DiagramTarget): vscode.WebviewPanel {
    const panel = vscode.window.createWebviewPanel(
      "qvr.diagram",
      "QVR Diagram",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: webviewRoots(this.extensionUri) },
    );
    const assets = webviewAssets(panel.webview, this.extensionUri, "diagram.js");
    // The page asks for its content with a "ready" message once its script runs.
    panel.webview.html = renderDiagramPage(assets, this.format, path.basename(target.uri.path));
    panel.onDidDispose(() => {
      this.panel = undefined;
      this.shown = undefined;
      this.redraw.cancel();
    });
    panel.webview.onDidReceiveMessage((raw: unknown) => {
      const understood = handleDiagramViewMessage(raw, {
        resend: () => (this.shown === undefined ? void this.update() : void this.post(this.shown)),
        reveal: (range) => void this.reveal(range),
        changeFormat: (format) => {
          this.format = format;
          void this.update();
        },
        reportRenderError: (message) => this.log.appendLine(`Diagram rendering failed: ${message}`),
      });
      if (!understood) this.log.appendLine("Ignored an unexpected message from the diagram view.");
    });
    return panel;
  }

  private retarget(target: DiagramTarget): void {
    const panel = this.panel;
    if (panel === undefined) return;
    this.target = target;
    this.shown = undefined;
    panel.title = `Diagram: ${target.name ?? path.basename(target.uri.path)}`;
    void this.update();
  }

  private async update(): Promise<void> {
    const target = this.target;
    if (this.panel === undefined || target === undefined) return;
    const request = ++this.latestRequest;
    const format = this.format;
    const show = (message: ToDiagramView): void => {
      if (request === this.latestRequest) void this.post(message);
    };
    try {
      const client = await this.server.runningClient();
      const params: DiagramParams = { uri: client.code2ProtocolConverter.asUri(target.uri), format };
      if (target.name !== undefined) params.name = target.name;
      const raw: unknown = await client.sendRequest(ExecuteCommandRequest.type, {
        command: ServerCommands.diagram,
        arguments: [params],
      });
      const result = parseDiagramResult(raw);
      if (result === undefined) {
        show({ type: "status", level: "error", message: "The server returned no diagram for this file." });
        return;
      }
      show({ type: "diagram", uri: target.uri.toString(), format, text: result.text, nodes: result.nodes });
    } catch (error) {
      show({ type: "status", level: "error", message: errorMessage(error) });
    }
  }

  private async post(message: ToDiagramView): Promise<void> {
    this.shown = message;
    await this.panel?.webview.postMessage(message);
  }

  private async reveal(range: Range): Promise<void> {
    const target = this.target;
    if (target === undefined) return;
    const document = await vscode.workspace.openTextDocument(target.uri);
    const selection = document.validateRange(
      new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character),
    );
    const visible = vscode.window.visibleTextEditors.find((editor) => sameUri(editor.document.uri, target.uri));
    const editor = await vscode.window.showTextDocument(document, {
      viewColumn: visible?.viewColumn ?? vscode.ViewColumn.One,
      selection,
    });
    editor.revealRange(selection, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }
}

function activeQvrDocument(): DiagramTarget | undefined {
  const document = vscode.window.activeTextEditor?.document;
  return document !== undefined && hasDiagram(document) ? { uri: document.uri } : undefined;
}

/** A QVR file, or a notebook's `%%qvr` cell: the server holds each as a QVR document
 * under its URI (notebookCells.ts), so its diagram is asked for the same way. */
function hasDiagram(document: vscode.TextDocument): boolean {
  return document.languageId === "qvr" || isQvrCell(document);
}

function sameUri(a: vscode.Uri, b: vscode.Uri | undefined): boolean {
  return b !== undefined && a.toString() === b.toString();
}
