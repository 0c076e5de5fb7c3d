/**
 * The settings "Install qvr" reads (`qvr.server.installSource`, `installPython`,
 * `installConstraints`, `runSupportExtras`), from the user's own settings only.
 *
 * The environment they install into is the user's, shared by every workspace; a
 * workspace's `.vscode/settings.json` (or a folder's) must not choose what goes into it,
 * so only each setting's user-level value (`inspect().globalValue`) counts. The manifest
 * declares them `machine` scoped, so VS Code neither offers nor applies them at the
 * workspace level either.
 *
 * Pure: the configuration comes in as its `inspect` function, so it is unit-tested.
 */

/** The install settings, as declared in package.json (relative to the `qvr` section). */
export const INSTALL_SETTINGS = ["server.installSource", "server.installPython", "server.installConstraints", "server.runSupportExtras"] as const;

export const DEFAULT_RUN_SUPPORT_EXTRAS = ["run"];

/** How "Install qvr" installs the server (the `qvr.server.install*` settings). */
export interface InstallSettings {
  /** A pip requirement, a wheel or a source folder. */
  source: string;
  python?: string;
  constraints?: string;
  /** The extras of `qvr` that run support means. */
  runSupportExtras: string[];
}

/** What `WorkspaceConfiguration.inspect` reports of a setting (the parts read here). */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

export type Inspect = (key: string) => Inspected | undefined;

/** A user-level value that is a non-blank string, trimmed; else undefined. */
function userString(found: Inspected | undefined): string | undefined {
  const value = found?.globalValue;
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

export function readInstallSettings(inspect: Inspect): InstallSettings {
  const extras = inspect("server.runSupportExtras")?.globalValue;
  const listed = Array.isArray(extras) ? extras.filter((e): e is string => typeof e === "string" && e.trim() !== "") : [];
  return {
    source: userString(inspect("server.installSource")) ?? "qvr",
    python: userString(inspect("server.installPython")),
    constraints: userString(inspect("server.installConstraints")),
    runSupportExtras: listed.length > 0 ? listed : [...DEFAULT_RUN_SUPPORT_EXTRAS],
  };
}

/** The install settings set in the workspace or a folder (ignored), to say so in the log. */
export function ignoredInstallSettings(inspect: Inspect): string[] {
  return INSTALL_SETTINGS.filter((key) => {
    const found = inspect(key);
    return found?.workspaceValue !== undefined || found?.workspaceFolderValue !== undefined;
  }).map((key) => `qvr.${key}`);
}
