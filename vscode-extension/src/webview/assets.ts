/** Webview resource URIs for a page's bundle and the shared stylesheet. */
import * as vscode from "vscode";
import { type WebviewAssets, createNonce } from "./html";

export function webviewRoots(extensionUri: vscode.Uri): vscode.Uri[] {
  return [vscode.Uri.joinPath(extensionUri, "dist", "webview"), vscode.Uri.joinPath(extensionUri, "media")];
}

export function webviewAssets(webview: vscode.Webview, extensionUri: vscode.Uri, bundle: string): WebviewAssets {
  return {
    cspSource: webview.cspSource,
    nonce: createNonce(),
    scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "dist", "webview", bundle)).toString(),
    styleUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, "media", "webview.css")).toString(),
  };
}
