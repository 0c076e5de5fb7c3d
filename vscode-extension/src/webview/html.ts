/**
 * HTML shells for the extension's webviews. Pure (no `vscode` import) so the
 * security properties - the Content-Security-Policy, nonced scripts, no remote
 * URLs - are unit-tested on exactly the markup the extension serves.
 */
import { randomBytes } from "node:crypto";

export interface WebviewAssets {
  /** `webview.cspSource`: the origin of the extension's own webview resources. */
  cspSource: string;
  /** Fresh for every page load; see {@link createNonce}. */
  nonce: string;
  /** URI of the page's script bundle (from `webview.asWebviewUri`). */
  scriptUri: string;
  /** URI of the page's stylesheet (from `webview.asWebviewUri`). */
  styleUri: string;
  /** URI of the stylesheet esbuild emits beside a bundle that imports CSS (a plotting library's). */
  bundleStyleUri?: string;
}

export interface PageOptions {
  title: string;
  assets: WebviewAssets;
  /** Attributes for <body>, e.g. initial state the script reads. Values are escaped. */
  bodyData?: Record<string, string>;
  bodyHtml: string;
  /** Graphviz is WebAssembly: compiling it needs 'wasm-unsafe-eval' (never 'unsafe-eval'). */
  allowWasm?: boolean;
}

/** A base64 nonce of 144 random bits, as CSP nonce-source expects. */
export function createNonce(): string {
  return randomBytes(18).toString("base64");
}

export function contentSecurityPolicy(assets: WebviewAssets, allowWasm: boolean): string {
  const scriptSources = [`'nonce-${assets.nonce}'`];
  if (allowWasm) scriptSources.push("'wasm-unsafe-eval'");
  return [
    "default-src 'none'",
    `script-src ${scriptSources.join(" ")}`,
    // Stylesheets only from the extension; style elements only with the nonce
    // (the diagram script nonces the ones the renderers generate).
    `style-src ${assets.cspSource} 'nonce-${assets.nonce}'`,
    `img-src ${assets.cspSource}`,
    `font-src ${assets.cspSource}`,
  ].join("; ");
}

export function renderPage(options: PageOptions): string {
  const { assets } = options;
  const csp = contentSecurityPolicy(assets, options.allowWasm ?? false);
  const bodyAttributes = Object.entries(options.bodyData ?? {})
    .map(([key, value]) => ` data-${escapeAttribute(key)}="${escapeAttribute(value)}"`)
    .join("");
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
${assets.bundleStyleUri !== undefined ? `<link rel="stylesheet" href="${escapeAttribute(assets.bundleStyleUri)}">\n` : ""}<link rel="stylesheet" href="${escapeAttribute(assets.styleUri)}">
<title>${escapeHtml(options.title)}</title>
</head>
<body${bodyAttributes}>
${options.bodyHtml}
<script nonce="${escapeAttribute(assets.nonce)}" src="${escapeAttribute(assets.scriptUri)}"></script>
</body>
</html>
`;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function escapeAttribute(text: string): string {
  return escapeHtml(text).replace(/"/g, "&quot;").replace(/'/g, "&#39;");
}
