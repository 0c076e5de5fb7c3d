/** Typed access to the `qvr.*` settings (declared in package.json). */
import * as vscode from "vscode";
import type { InferenceDefaults } from "./inference/params";
import { type InstallSettings, ignoredInstallSettings, readInstallSettings } from "./server/installSettings";
import { type DiagramFormat, type ExportTarget, exportTarget, isDiagramFormat, isDevice, isEngine, isInferenceMethod, isMassMatrix, STAN_TARGET_ACCEPT } from "./shared/protocol";

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

/**
 * How "Install qvr" installs the server: the user's own `qvr.server.install*` settings,
 * never a workspace's or a folder's (see installSettings.ts).
 */
export function installSettings(): InstallSettings {
  const config = section();
  return readInstallSettings((key) => config.inspect(key));
}

/** Install settings a workspace or folder sets, which the install ignores. */
export function ignoredInstallSettingNames(): string[] {
  const config = section();
  return ignoredInstallSettings((key) => config.inspect(key));
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
  const massMatrix = config.get<string>("inference.massMatrix", "auto");
  const engine = config.get<string>("inference.engine", "auto");
  const device = config.get<string>("inference.device", "cpu");
  return {
    method: isInferenceMethod(method) ? method : "svi",
    steps: config.get<number>("inference.steps", 100),
    lr: config.get<number>("inference.lr", 0.01),
    seed: config.get<number>("inference.seed", 0),
    batch: config.get<number>("inference.batch", 4),
    seqLen: config.get<number>("inference.seqLen", 8),
    chains: config.get<number>("inference.chains", 4),
    massMatrix: isMassMatrix(massMatrix) ? massMatrix : "auto",
    engine: isEngine(engine) ? engine : "auto",
    targetAccept: config.get<number>("inference.targetAccept", STAN_TARGET_ACCEPT),
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
