/**
 * The run view of the current inference run: the loss curve, a NUTS run's trace
 * plots, the posterior table and, once it ends, the plots of the fit. It keeps the run's state on the extension side
 * so that a webview that (re)loads is brought up to date.
 */
import * as vscode from "vscode";
import { type ToLossView, parseLossViewMessage } from "../shared/messages";
import type { InferenceProgress } from "../shared/protocol";
import { RunState } from "../shared/runState";
import { webviewAssets, webviewRoots } from "../webview/assets";
import { renderLossPage } from "../webview/pages";

export class LossPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private start: Extract<ToLossView, { type: "start" }> | undefined;
  private state = new RunState();
  private outcome: Extract<ToLossView, { type: "finished" | "failed" }> | undefined;

  constructor(private readonly extensionUri: vscode.Uri) {}

  begin(title: string, method: string, total: number): void {
    this.start = { type: "start", title, method, total };
    this.state = new RunState();
    this.outcome = undefined;
    if (this.panel === undefined) {
      this.panel = this.createPanel(title);
    } else {
      this.panel.title = title;
      this.panel.reveal(vscode.ViewColumn.Beside, true);
      void this.panel.webview.postMessage(this.start);
    }
  }

  progress(progress: InferenceProgress): void {
    this.state.add(progress);
    void this.panel?.webview.postMessage({ type: "progress", progress } satisfies ToLossView);
  }

  finish(outcome: Extract<ToLossView, { type: "finished" | "failed" }>): void {
    this.outcome = outcome;
    void this.panel?.webview.postMessage(outcome);
  }

  dispose(): void {
    this.panel?.dispose();
  }

  private createPanel(title: string): vscode.WebviewPanel {
    const panel = vscode.window.createWebviewPanel(
      "qvr.inference",
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, localResourceRoots: webviewRoots(this.extensionUri) },
    );
    panel.webview.html = renderLossPage(webviewAssets(panel.webview, this.extensionUri, "loss.js", true), title);
    panel.webview.onDidReceiveMessage((raw: unknown) => {
      if (parseLossViewMessage(raw)?.type === "ready") this.replay();
    });
    panel.onDidDispose(() => {
      this.panel = undefined;
    });
    return panel;
  }

  /** Sends everything known about the run, as one start, one progress (with the last draws) and the outcome. */
  private replay(): void {
    const webview = this.panel?.webview;
    if (webview === undefined || this.start === undefined) return;
    void webview.postMessage(this.start);
    const progress = this.state.snapshot("");
    if (progress !== undefined) void webview.postMessage({ type: "progress", progress } satisfies ToLossView);
    if (this.outcome !== undefined) void webview.postMessage(this.outcome);
  }
}
