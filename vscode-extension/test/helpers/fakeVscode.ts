/**
 * A stand-in for the `vscode` module, enough to activate the real extension bundle
 * in Node: the parts the extension uses are modelled and recorded; everything else
 * vscode-languageclient touches (provider registrations and the like) is a
 * permissive no-op that returns disposables.
 */
import Module from "node:module";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

type Listener<T> = (event: T) => unknown;
type Command = (...args: unknown[]) => unknown;

class EventEmitter<T> {
  private readonly listeners: Listener<T>[] = [];
  readonly event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => this.listeners.splice(this.listeners.indexOf(listener), 1) };
  };
  fire(event: T): void {
    for (const listener of [...this.listeners]) listener(event);
  }
  dispose(): void {
    this.listeners.length = 0;
  }
}

class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
  ) {}
  get fsPath(): string {
    return this.path;
  }
  static file(file: string): Uri {
    return new Uri("file", file);
  }
  static parse(text: string): Uri {
    return text.startsWith("file:") ? new Uri("file", fileURLToPath(text)) : new Uri(text.split(":")[0]!, text);
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, path.join(base.path, ...parts));
  }
  with(): Uri {
    return this;
  }
  toString(): string {
    return this.scheme === "file" ? pathToFileURL(this.path).toString() : this.path;
  }
  toJSON(): string {
    return this.toString();
  }
}

class Range {
  readonly start: { line: number; character: number };
  readonly end: { line: number; character: number };
  constructor(startLine: number, startCharacter: number, endLine: number, endCharacter: number) {
    this.start = { line: startLine, character: startCharacter };
    this.end = { line: endLine, character: endCharacter };
  }
}

class MarkdownString {
  value = "";
  appendText(text: string): MarkdownString {
    this.value += text.replace(/[\\`*_{}[\]()#+\-.!<>|]/g, "\\$&");
    return this;
  }
  appendMarkdown(markdown: string): MarkdownString {
    this.value += markdown;
    return this;
  }
}

class ThemeColor {
  constructor(readonly id: string) {}
}

export interface FakeStatusItem {
  id: string;
  text: string;
  tooltip?: MarkdownString | string;
  command?: string;
  visible: boolean;
}

/** Anything not modelled: callable, constructible, and disposable, all the way down. */
function permissive(name: string): unknown {
  const target = function () {} as unknown as Record<string | symbol, unknown>;
  return new Proxy(target, {
    get(t, key) {
      if (key === "then") return undefined; // not a promise
      if (key === "dispose") return () => undefined;
      if (key === Symbol.toPrimitive) return () => name;
      if (!(key in t)) t[key] = permissive(`${name}.${String(key)}`);
      return t[key];
    },
    apply: () => permissive(`${name}()`),
    construct: () => permissive(`new ${name}`) as object,
  });
}

function withFallback<T extends object>(name: string, modelled: T): T {
  return new Proxy(modelled, {
    get(t, key) {
      if (key in t) return (t as Record<string | symbol, unknown>)[key];
      // Events the extension does not drive in these tests.
      if (typeof key === "string" && key.startsWith("onDid")) return () => ({ dispose: () => undefined });
      return permissive(`${name}.${String(key)}`);
    },
  });
}

export interface FakePanel {
  viewType: string;
  title: string;
  html: string;
  posted: { type: string; [key: string]: unknown }[];
  /** Delivers a message from the webview to the extension. */
  receive(message: unknown): void;
}

export interface FakeProgress {
  title: string;
  reports: { message?: string; increment?: number }[];
  cancel(): void;
  done: Promise<void>;
}

export class FakeVscode {
  readonly commands = new Map<string, Command>();
  readonly panels: FakePanel[] = [];
  readonly progress: FakeProgress[] = [];
  readonly messages: string[] = [];
  readonly output: string[] = [];
  readonly revealed: { uri: string; selection: unknown }[] = [];
  /** Untitled documents opened with content (an export), and the column each was shown in. */
  readonly untitled: { content: string; language: string; viewColumn?: number }[] = [];
  /** Answers for the next quick picks, in order: each is given the items and returns the pick. */
  readonly picks: ((items: readonly unknown[]) => unknown)[] = [];
  readonly languages = ["qvr", "python", "plaintext"];
  readonly settings = new Map<string, unknown>();
  readonly statusItems: FakeStatusItem[] = [];
  private readonly api: object;

  constructor(readonly workspaceFolder: string) {
    this.api = withFallback("vscode", {
      version: "1.90.0",
      EventEmitter,
      Uri,
      Range,
      MarkdownString,
      ThemeColor,
      StatusBarAlignment: { Left: 1, Right: 2 },
      ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
      ViewColumn: { Active: -1, Beside: -2, One: 1 },
      TextEditorRevealType: { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 },
      ConfigurationTarget: { Global: 1, Workspace: 2, WorkspaceFolder: 3 },
      Disposable: class {
        constructor(private readonly onDispose?: () => void) {}
        static from(...items: { dispose(): unknown }[]) {
          return { dispose: () => items.forEach((item) => item.dispose()) };
        }
        dispose() {
          this.onDispose?.();
        }
      },
      env: { appName: "Visual Studio Code", language: "en", machineId: "test", sessionId: "test", uiKind: 1 },
      extensions: { getExtension: () => undefined },
      languages: withFallback("languages", { getLanguages: async () => this.languages }),
      commands: withFallback("commands", {
        registerCommand: (id: string, command: Command) => {
          if (this.commands.has(id)) throw new Error(`command '${id}' already exists`);
          this.commands.set(id, command);
          return { dispose: () => this.commands.delete(id) };
        },
        executeCommand: async () => undefined,
      }),
      workspace: withFallback("workspace", {
        workspaceFolders: [{ uri: Uri.file(workspaceFolder), name: path.basename(workspaceFolder), index: 0 }],
        textDocuments: [],
        getConfiguration: (section?: string) => ({
          get: <T>(key: string, fallback?: T) => {
            const full = section ? `${section}.${key}` : key;
            return (this.settings.has(full) ? this.settings.get(full) : fallback) as T;
          },
          has: () => false,
          inspect: () => undefined,
          update: async (key: string, value: unknown) => void this.settings.set(`${section}.${key}`, value),
        }),
        createFileSystemWatcher: () => ({
          onDidCreate: () => ({ dispose: () => undefined }),
          onDidChange: () => ({ dispose: () => undefined }),
          onDidDelete: () => ({ dispose: () => undefined }),
          dispose: () => undefined,
        }),
        openTextDocument: async (target: Uri | { content: string; language: string }) => {
          if (target instanceof Uri) return { uri: target, validateRange: (range: Range) => range };
          this.untitled.push({ content: target.content, language: target.language });
          return { uri: Uri.parse(`untitled:Untitled-${this.untitled.length}`), untitled: this.untitled.length - 1 };
        },
      }),
      window: withFallback("window", {
        activeTextEditor: undefined,
        visibleTextEditors: [],
        createOutputChannel: (name: string) => ({
          name,
          append: (text: string) => this.output.push(`[${name}] ${text}`),
          appendLine: (text: string) => this.output.push(`[${name}] ${text}`),
          replace: () => undefined,
          clear: () => undefined,
          show: () => undefined,
          hide: () => undefined,
          dispose: () => undefined,
        }),
        showErrorMessage: async (message: string) => void this.messages.push(`error: ${message}`),
        showWarningMessage: async (message: string) => void this.messages.push(`warning: ${message}`),
        showInformationMessage: async (message: string) => void this.messages.push(`info: ${message}`),
        showTextDocument: async (document: { uri: Uri; untitled?: number }, options: { selection?: unknown; viewColumn?: number }) => {
          if (document.untitled !== undefined) this.untitled[document.untitled]!.viewColumn = options.viewColumn;
          else this.revealed.push({ uri: document.uri.toString(), selection: options.selection });
          return { revealRange: () => undefined };
        },
        showQuickPick: async (items: readonly unknown[] | Promise<readonly unknown[]>) => {
          const answer = this.picks.shift();
          if (answer === undefined) throw new Error("an unexpected quick pick");
          return answer(await items);
        },
        withProgress: (options: { title: string }, task: (progress: unknown, token: unknown) => Promise<unknown>) =>
          this.runProgress(options.title, task),
        createWebviewPanel: (viewType: string, title: string) => this.createPanel(viewType, title),
        createStatusBarItem: (id: string) => {
          const item: FakeStatusItem & { show(): void; hide(): void; dispose(): void } = {
            id,
            text: "",
            visible: false,
            show: () => void (item.visible = true),
            hide: () => void (item.visible = false),
            dispose: () => void (item.visible = false),
          };
          this.statusItems.push(item);
          return item;
        },
        setStatusBarMessage: () => ({ dispose: () => undefined }),
      }),
    });
  }

  fileUri(file: string): unknown {
    return Uri.file(file);
  }

  /** Makes `require("vscode")` return this fake until the returned function is called. */
  install(): () => void {
    const loader = Module as unknown as { _load(request: string, ...rest: unknown[]): unknown };
    const original = loader._load;
    const api = this.api;
    loader._load = function (request: string, ...rest: unknown[]) {
      return request === "vscode" ? api : original.call(this, request, ...rest);
    };
    return () => {
      loader._load = original;
    };
  }

  private runProgress(title: string, task: (progress: unknown, token: unknown) => Promise<unknown>): Promise<unknown> {
    const cancellation = new EventEmitter<void>();
    const token = { isCancellationRequested: false, onCancellationRequested: cancellation.event };
    const reports: FakeProgress["reports"] = [];
    const result = task({ report: (value: FakeProgress["reports"][number]) => reports.push(value) }, token);
    this.progress.push({
      title,
      reports,
      cancel: () => {
        token.isCancellationRequested = true;
        cancellation.fire();
      },
      done: Promise.resolve(result).then(() => undefined),
    });
    return result;
  }

  private createPanel(viewType: string, title: string): unknown {
    const received = new EventEmitter<unknown>();
    const panel: FakePanel = {
      viewType,
      title,
      html: "",
      posted: [],
      receive: (message) => received.fire(message),
    };
    this.panels.push(panel);
    const disposed = new EventEmitter<void>();
    return {
      viewType,
      get title() {
        return panel.title;
      },
      set title(value: string) {
        panel.title = value;
      },
      webview: {
        cspSource: "https://*.vscode-cdn.net",
        asWebviewUri: (uri: Uri) => `https://file+.vscode-resource.vscode-cdn.net${uri.path}`,
        get html() {
          return panel.html;
        },
        set html(value: string) {
          panel.html = value;
        },
        postMessage: async (message: FakePanel["posted"][number]) => {
          panel.posted.push(message);
          return true;
        },
        onDidReceiveMessage: received.event,
      },
      onDidDispose: disposed.event,
      reveal: () => undefined,
      dispose: () => disposed.fire(),
    };
  }
}
