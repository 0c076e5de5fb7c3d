/**
 * "QVR: Export Program to Stan, NumPyro or PyMC..." (also the server's "Export to ..." code
 * lens): asks the server's `qvr.exportProgram` for the code of a model program and opens it
 * in a new editor beside the source. The target is the lens's, or picked from a list (the
 * `qvr.export.target` setting's first); when the file has several programs to export, the
 * server names them and one is picked. A refusal is shown in one line; where the target
 * cannot follow, the setting's QVR701 diagnostics already mark it in the file.
 */
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";
import { exportTargetSetting } from "../config";
import type { ServerManager } from "../server/serverManager";
import { errorMessage } from "../shared/errors";
import { type ExportParams, type ExportResult, type ExportTarget, ServerCommands, exportTitle, parseExportResult } from "../shared/protocol";
import { parseExportArguments, refusalMessage, targetChoices } from "./arguments";

export class ProgramExporter {
  constructor(
    private readonly server: ServerManager,
    private readonly output: vscode.OutputChannel,
  ) {}

  async run(args: readonly unknown[]): Promise<void> {
    const [first] = args;
    // From an editor menu VS Code passes the resource as a Uri.
    const request = parseExportArguments(first instanceof vscode.Uri ? [first.toString()] : args);
    const uri = request.uri !== undefined ? vscode.Uri.parse(request.uri) : activeQvrUri();
    if (uri === undefined) {
      void vscode.window.showInformationMessage("Open a .qvr file to export a program from it.");
      return;
    }
    const target = request.target ?? (await pickTarget());
    if (target === undefined) return;
    let client: LanguageClient;
    try {
      client = await this.server.runningClient();
    } catch (error) {
      void vscode.window.showErrorMessage(errorMessage(error));
      return;
    }
    const params: ExportParams = { uri: client.code2ProtocolConverter.asUri(uri), target };
    if (request.program !== undefined) params.program = request.program;
    try {
      let result = await this.request(client, params);
      if (!result.ok && result.programs !== undefined && params.program === undefined) {
        const program = await vscode.window.showQuickPick(result.programs, {
          title: `Export to ${exportTitle(target)}`,
          placeHolder: "Choose the program to export",
        });
        if (program === undefined) return;
        result = await this.request(client, { ...params, program });
      }
      if (!result.ok) {
        const message = refusalMessage(target, result);
        this.output.appendLine(message);
        void vscode.window.showWarningMessage(message);
        return;
      }
      const document = await vscode.workspace.openTextDocument({ content: result.text, language: await knownLanguage(result.language) });
      await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside });
      this.output.appendLine(`Exported ${result.program} to ${exportTitle(target)} (save it as ${result.filename}).`);
    } catch (error) {
      const message = `Export to ${exportTitle(target)} failed: ${errorMessage(error)}`;
      this.output.appendLine(message);
      void vscode.window.showErrorMessage(message);
    }
  }

  private async request(client: LanguageClient, params: ExportParams): Promise<ExportResult> {
    const raw: unknown = await client.sendRequest(ExecuteCommandRequest.type, {
      command: ServerCommands.exportProgram,
      arguments: [params],
    });
    const result = parseExportResult(raw);
    if (result === undefined) throw new Error("the server's answer is not an export");
    return result;
  }
}

async function pickTarget(): Promise<ExportTarget | undefined> {
  const picked = await vscode.window.showQuickPick(targetChoices(exportTargetSetting()), {
    title: "Export Program",
    placeHolder: "Choose the language to export to",
  });
  return picked?.target;
}

/** `language` when VS Code knows it (a Stan extension may not be installed), else plain text. */
async function knownLanguage(language: string): Promise<string> {
  const known = await vscode.languages.getLanguages();
  return known.includes(language) ? language : "plaintext";
}

function activeQvrUri(): vscode.Uri | undefined {
  const document = vscode.window.activeTextEditor?.document;
  return document?.languageId === "qvr" ? document.uri : undefined;
}
