/** The API VS Code injects into webviews (and the Chromium test shims). */
export interface VsCodeApi<Message> {
  postMessage(message: Message): void;
}

declare function acquireVsCodeApi<Message>(): VsCodeApi<Message>;

export function vscodeApi<Message>(): VsCodeApi<Message> {
  return acquireVsCodeApi<Message>();
}

/** The nonce of the running script, for the style elements the renderers create. */
export function currentNonce(): string {
  const script = document.currentScript;
  return script instanceof HTMLScriptElement ? (script.nonce ?? "") : "";
}

export function element<T extends HTMLElement>(id: string, type: new () => T): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) throw new Error(`webview markup is missing #${id}`);
  return found;
}
