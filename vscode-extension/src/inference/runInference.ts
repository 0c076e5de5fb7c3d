/**
 * "QVR: Run Inference" (also the server's "Run inference" code lens): runs the
 * server's `qvr.runInference` under a cancellable progress notification, feeds the
 * loss chart from `qvr/inferenceProgress`, and prints the summary to the QVR channel.
 */
import { randomUUID } from "node:crypto";
import * as path from "node:path";
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient, WorkDoneProgress } from "vscode-languageclient/node";
import { inferenceDefaults } from "../config";
import type { ServerManager } from "../server/serverManager";
import { formatNumber } from "../shared/chart";
import { errorKind, errorMessage } from "../shared/errors";
import { parseInferenceProgress } from "../shared/parseProgress";
import { ClientCommands, type InferenceParams, type InferenceProgress, ServerCommands, ServerNotifications } from "../shared/protocol";
import type { LossPanel } from "./lossPanel";
import { buildInferenceParams, describeInferenceParams, parseInferenceArguments } from "./params";
import { describeRun, formatPosterior, formatSummary, summaryAttention, summaryPosterior, summaryView } from "./summary";

const INSTALL_RUN_SUPPORT = "Install Run Support";

/** How long to wait for the server to confirm a cancellation before giving up on the run. */
const CANCEL_GRACE_MS = 10_000;

interface ActiveRun {
  uri: string;
  report(percentage: number, message: string): void;
}

export class InferenceRunner implements vscode.Disposable {
  private active: ActiveRun | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly server: ServerManager,
    private readonly panel: LossPanel,
    private readonly output: vscode.OutputChannel,
  ) {
    this.disposables.push(
      server.onDidCreateClient((client) => {
        client.onNotification(ServerNotifications.inferenceProgress, (raw: unknown) => {
          const progress = parseInferenceProgress(raw);
          if (progress !== undefined) this.onProgress(progress);
        });
      }),
    );
  }

  async run(args: readonly unknown[]): Promise<void> {
    if (this.active !== undefined) {
      void vscode.window.showInformationMessage("An inference run is already in progress.");
      return;
    }
    const target = parseInferenceArguments(args);
    const uri = target.uri !== undefined ? vscode.Uri.parse(target.uri) : activeQvrUri();
    if (uri === undefined) {
      void vscode.window.showInformationMessage("Open a .qvr file to run inference on it.");
      return;
    }
    let client: LanguageClient;
    try {
      client = await this.server.runningClient();
    } catch (error) {
      void vscode.window.showErrorMessage(errorMessage(error));
      return;
    }
    const params = buildInferenceParams(client.code2ProtocolConverter.asUri(uri), inferenceDefaults(), target);
    const title = `QVR ${params.method.toUpperCase()}: ${params.program ?? path.basename(uri.path)}`;
    this.panel.begin(title, params.method, params.steps);
    this.output.appendLine(`${title} (${describeInferenceParams(params)})`);

    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      (progress, token) => this.execute(client, params, progress, token),
    );
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }

  private async execute(
    client: LanguageClient,
    params: InferenceParams,
    progress: vscode.Progress<{ message?: string; increment?: number }>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    let reported = 0;
    this.active = {
      uri: params.uri,
      report: (percentage, message) => {
        const increment = Math.max(0, Math.min(100, percentage) - reported);
        reported += increment;
        progress.report({ message, increment });
      },
    };
    // Offer the server our token so its $/progress reports land in this notification
    // instead of opening a second one.
    const workDoneToken = randomUUID();
    const workDone = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
      if (value.kind === "report") this.active?.report(value.percentage ?? reported, value.message ?? "");
    });
    // The token makes the client send $/cancelRequest for this request.
    const request = client.sendRequest(
      ExecuteCommandRequest.type,
      { command: ServerCommands.runInference, arguments: [params], workDoneToken },
      token,
    );
    // If the server does not confirm a cancellation in time, stop waiting for it.
    let giveUp: () => void = () => undefined;
    const gaveUp = new Promise<void>((resolve) => (giveUp = resolve));
    let graceTimer: ReturnType<typeof setTimeout> | undefined;
    const onCancel = token.onCancellationRequested(() => {
      graceTimer = setTimeout(giveUp, CANCEL_GRACE_MS);
    });
    try {
      const summary: unknown = await Promise.race([request, gaveUp]);
      if (token.isCancellationRequested) {
        this.output.appendLine("Cancelled.");
        this.panel.finish({ type: "failed", message: "Cancelled." });
        return;
      }
      const table = formatPosterior(summary);
      const json = formatSummary(summary); // the run view's whole summary
      this.output.appendLine(table === "" ? describeRun(summary) : `${describeRun(summary)}\n${table}`);
      this.output.show(true);
      this.panel.finish({
        type: "finished",
        summary: json,
        posterior: summaryPosterior(summary) ?? null,
        attention: summaryAttention(summary),
        ...summaryView(summary),
      });
    } catch (error) {
      const message = token.isCancellationRequested ? "Cancelled." : `Inference failed: ${errorMessage(error)}`;
      this.output.appendLine(message);
      this.panel.finish({ type: "failed", message });
      if (!token.isCancellationRequested) void this.showFailure(message, errorKind(error));
    } finally {
      clearTimeout(graceTimer);
      onCancel.dispose();
      workDone.dispose();
      this.active = undefined;
    }
  }

  /** A server without torch: offer to add it where the extension can, its own environment. */
  private async showFailure(message: string, kind: string | undefined): Promise<void> {
    if (kind !== "run-support" || this.server.launch?.source !== "managed") {
      await vscode.window.showErrorMessage(message);
      return;
    }
    const choice = await vscode.window.showErrorMessage(message, INSTALL_RUN_SUPPORT);
    if (choice === INSTALL_RUN_SUPPORT) await vscode.commands.executeCommand(ClientCommands.installRunSupport);
  }

  private onProgress(progress: InferenceProgress): void {
    if (this.active === undefined || progress.uri !== this.active.uri) return;
    this.panel.progress(progress);
    const last = progress.points[progress.points.length - 1];
    if (last === undefined || !(progress.total > 0)) return;
    const [step, loss] = last;
    // The server sends null for a loss that is not a number.
    const shown = typeof loss === "number" && Number.isFinite(loss) ? formatNumber(loss) : "nan";
    this.active.report((100 * step) / progress.total, `step ${step}/${progress.total}, loss ${shown}`);
  }
}

function activeQvrUri(): vscode.Uri | undefined {
  const document = vscode.window.activeTextEditor?.document;
  return document?.languageId === "qvr" ? document.uri : undefined;
}
