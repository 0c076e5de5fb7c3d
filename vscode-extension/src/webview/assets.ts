/** Webview resource URIs for a page's bundle and the shared stylesheet. */
import * as vscode from "vscode";
import { type WebviewAssets, createNonce } from "./html";

export function webviewRoots(extensionUri: vscode.Uri): vscode.Uri[] {
  return [vscode.Uri.joinPath(extensionUri, "dist", "webview"), vscode.Uri.joinPath(extensionUri, "media")];
}

/** `withStyles`: the bundle imports CSS, which esbuild writes beside it (`loss.js` -> `loss.css`). */
export function webviewAssets(webview: vscode.Webview, extensionUri: vscode.Uri, bundle: string, withStyles = false): WebviewAssets {
  const assets: WebviewAssets = {
    cspSource: webview.cspSource,
    nonce: createNonce(),
    scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview", bundle)).toString(),
    styleUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "media", "webview.css")).toString(),
  };
  if (withStyles) {
    const styles = bundle.replace(/\.js$/, ".css");
    assets.bundleStyleUri = webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview", styles)).toString();
  }
  return assets;
}
