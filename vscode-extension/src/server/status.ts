/**
 * What the status bar says about the language server: which one runs and where it
 * came from. Pure, so the wording is unit-tested; statusItem.ts puts it on screen.
 */
import type { LaunchSource, ServerLaunch } from "./discovery";

export type ServerState =
  /** Discovery has not finished yet. */
  | { kind: "searching" }
  | { kind: "starting"; launch: ServerLaunch }
  | { kind: "running"; launch: ServerLaunch; version?: string }
  /** It was running and exited (the client may restart it). */
  | { kind: "stopped"; launch: ServerLaunch }
  | { kind: "failed"; launch: ServerLaunch }
  | { kind: "notFound" }
  | { kind: "badSetting"; message: string };

export interface StatusView {
  text: string;
  /** Plain-text lines; the first is the heading. */
  tooltip: string[];
  /** Draws the item in the warning or error colours. */
  severity?: "warning" | "error";
}

/** The short name shown in brackets after the version. */
export function sourceLabel(source: LaunchSource): string {
  switch (source) {
    case "setting":
      return "setting";
    case "workspace venv":
      return "workspace .venv";
    case "active interpreter":
      return "active interpreter";
    case "managed":
      return "managed";
    case "PATH":
      return "PATH";
  }
}

function sourceDescription(source: LaunchSource): string {
  switch (source) {
    case "setting":
      return "From the qvr.server.path or qvr.server.pythonPath setting";
    case "workspace venv":
      return "From the workspace's .venv";
    case "active interpreter":
      return "From the active Python interpreter's environment";
    case "managed":
      return "From the environment the extension installed it into";
    case "PATH":
      return "From PATH";
  }
}

export function commandLine(launch: ServerLaunch): string {
  return [launch.command, ...launch.args].map(quoteIfNeeded).join(" ");
}

function quoteIfNeeded(part: string): string {
  return /\s/.test(part) ? `"${part}"` : part;
}

const ACTIONS = "Click for server actions: restart, install or update, output.";

/** `activity` (an install in progress) takes the place of the server's state. */
export function statusView(state: ServerState, activity?: string): StatusView {
  if (activity !== undefined) {
    return { text: `$(sync~spin) QVR: ${activity}`, tooltip: [`QVR: ${activity}`, "Progress is in the QVR output channel."] };
  }
  switch (state.kind) {
    case "searching":
      return { text: "$(loading~spin) QVR", tooltip: ["Looking for the QVR language server"] };
    case "starting":
      return {
        text: `$(loading~spin) QVR (${sourceLabel(state.launch.source)})`,
        tooltip: ["Starting the QVR language server", sourceDescription(state.launch.source), `Command: ${commandLine(state.launch)}`],
      };
    case "running": {
      const version = state.version ? ` ${state.version}` : "";
      return {
        text: `QVR${version} (${sourceLabel(state.launch.source)})`,
        tooltip: [
          `QVR language server${version}`,
          sourceDescription(state.launch.source),
          `Command: ${commandLine(state.launch)}`,
          ACTIONS,
        ],
      };
    }
    case "stopped":
      return {
        text: `$(debug-disconnect) QVR (${sourceLabel(state.launch.source)})`,
        tooltip: ["The QVR language server stopped", `Command: ${commandLine(state.launch)}`, "Its log is in the QVR Language Server output channel.", ACTIONS],
        severity: "warning",
      };
    case "failed":
      return {
        text: `$(error) QVR (${sourceLabel(state.launch.source)})`,
        tooltip: ["The QVR language server failed to start", `Command: ${commandLine(state.launch)}`, "Its log is in the QVR Language Server output channel.", ACTIONS],
        severity: "error",
      };
    case "notFound":
      return {
        text: "$(warning) QVR: no server",
        tooltip: ["No QVR language server found", "The places searched are listed in the QVR output channel.", "Click for server actions, Install or Update Server among them."],
        severity: "warning",
      };
    case "badSetting":
      return { text: "$(warning) QVR: check settings", tooltip: ["QVR language server not started", state.message, ACTIONS], severity: "warning" };
  }
}
