/** Typed access to the `qvr.*` settings (declared in package.json). */
import * as vscode from "vscode";
import type { InferenceDefaults } from "./inference/params";
import { type DiagramFormat, type ExportTarget, exportTarget, isDiagramFormat, isDevice, isInferenceMethod, isMassMatrix } from "./shared/protocol";

const SECTION = "qvr";

function section(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

export function serverSettings(): { serverPath?: string; pythonPath?: string } {
  const config = section();
  return {
    serverPath: config.get<string>("server.path") || undefined,
    pythonPath: config.get<string>("server.pythonPath") || undefined,
  };
}

/** How "Install qvr" installs the server (the `qvr.server.install*` settings). */
export interface InstallSettings {
  /** A pip requirement, a wheel or a source folder. */
  source: string;
  python?: string;
  constraints?: string;
  /** The extras of `qvr` that run support means. */
  runSupportExtras: string[];
}

export function installSettings(): InstallSettings {
  const config = section();
  const extras = config.get<string[]>("server.runSupportExtras", ["run"]);
  return {
    source: config.get<string>("server.installSource", "qvr").trim() || "qvr",
    python: config.get<string>("server.installPython", "").trim() || undefined,
    constraints: config.get<string>("server.installConstraints", "").trim() || undefined,
    runSupportExtras: Array.isArray(extras) && extras.length > 0 ? extras.map(String) : ["run"],
  };
}

export function strictSetting(): boolean {
  return section().get<boolean>("strict", false);
}

/** `qvr.run.memoryBudget` ("8GB", "512MB"); null when unset (the server's default). */
export function memoryBudgetSetting(): string | null {
  return section().get<string>("run.memoryBudget", "").trim() || null;
}

/** `qvr.export.target`: the language whose QVR701 diagnostics and "Export to" lenses are shown; undefined when off. */
export function exportTargetSetting(): ExportTarget | undefined {
  return exportTarget(section().get<string>("export.target", ""));
}

/** The server's settings object, as sent at initialize and on change. */
export function serverConfiguration(): {
  qvr: { strict: boolean; run: { memoryBudget: string | null }; export: { target: string } };
} {
  return {
    qvr: {
      strict: strictSetting(),
      run: { memoryBudget: memoryBudgetSetting() },
      export: { target: exportTargetSetting() ?? "" },
    },
  };
}

export function diagramFormatSetting(): DiagramFormat {
  const value = section().get<string>("diagram.format", "mermaid");
  return isDiagramFormat(value) ? value : "mermaid";
}

export function inferenceDefaults(): InferenceDefaults {
  const config = section();
  const method = config.get<string>("inference.method", "svi");
  const massMatrix = config.get<string>("inference.massMatrix", "diag");
  const device = config.get<string>("inference.device", "cpu");
  return {
    method: isInferenceMethod(method) ? method : "svi",
    steps: config.get<number>("inference.steps", 100),
    lr: config.get<number>("inference.lr", 0.01),
    seed: config.get<number>("inference.seed", 0),
    batch: config.get<number>("inference.batch", 4),
    seqLen: config.get<number>("inference.seqLen", 8),
    chains: config.get<number>("inference.chains", 4),
    massMatrix: isMassMatrix(massMatrix) ? massMatrix : "diag",
    data: config.get<string>("inference.data", "").trim(),
    device: isDevice(device) ? device : "cpu",
    // Sent as written (when the method is SVI): a value off the setting's pattern is refused
    // by the server in a line that names it, rather than silently fitting every row.
    subsample: config.get<string>("inference.subsample", "").trim(),
  };
}

export async function setServerPath(file: string): Promise<void> {
  await section().update("server.path", file, vscode.ConfigurationTarget.Global);
}
