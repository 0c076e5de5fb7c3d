/**
 * The interpreter the user has selected for Python work: the Python extension's
 * active environment when it is installed, else `python.defaultInterpreterPath`.
 */
import * as vscode from "vscode";

/** The parts of the ms-python.python API used here; every member may be missing. */
interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path?: string } | undefined;
  };
  settings?: {
    getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined;
  };
}

export async function activeInterpreter(resource: vscode.Uri | undefined): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>("ms-python.python");
  if (extension !== undefined) {
    try {
      const api = extension.isActive ? extension.exports : await extension.activate();
      const active = api?.environments?.getActiveEnvironmentPath?.(resource)?.path;
      if (active) return active;
      const command = api?.settings?.getExecutionDetails?.(resource)?.execCommand?.[0];
      if (command) return command;
    } catch {
      // A broken or older Python extension must not keep QVR from starting.
    }
  }
  const configured = vscode.workspace.getConfiguration("python", resource).get<string>("defaultInterpreterPath");
  return configured || undefined;
}
