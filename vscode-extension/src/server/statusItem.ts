/** The status bar item: which server runs and where it came from; a click opens the server's actions. */
import * as vscode from "vscode";
import { ClientCommands } from "../shared/protocol";
import { type ServerState, statusView } from "./status";

export class ServerStatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("qvr.server", vscode.StatusBarAlignment.Right, 100);
  private state: ServerState = { kind: "searching" };
  private activity: string | undefined;

  constructor() {
    this.item.name = "QVR Language Server";
    this.item.command = ClientCommands.serverActions;
  }

  update(state: ServerState): void {
    this.state = state;
    this.render();
  }

  /** An install in progress, shown instead of the state until cleared with undefined. */
  setActivity(activity: string | undefined): void {
    this.activity = activity;
    this.render();
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const view = statusView(this.state, this.activity);
    this.item.text = view.text;
    const tooltip = new vscode.MarkdownString();
    view.tooltip.forEach((line, index) => {
      if (index > 0) tooltip.appendMarkdown("\n\n");
      if (index === 0) tooltip.appendMarkdown("**").appendText(line).appendMarkdown("**");
      else tooltip.appendText(line);
    });
    this.item.tooltip = tooltip;
    this.item.accessibilityInformation = { label: view.tooltip.join(". ") };
    this.item.backgroundColor =
      view.severity === undefined ? undefined : new vscode.ThemeColor(`statusBarItem.${view.severity}Background`);
    this.item.show();
  }
}
