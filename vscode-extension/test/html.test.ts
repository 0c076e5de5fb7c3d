import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type WebviewAssets, contentSecurityPolicy, createNonce, escapeAttribute } from "../src/webview/html";
import { renderDiagramPage, renderLossPage } from "../src/webview/pages";

// What VS Code's webview.cspSource and asWebviewUri look like.
const CSP_SOURCE = "https://*.vscode-cdn.net";
const RESOURCE_ROOT = "https://file+.vscode-resource.vscode-cdn.net/home/user/.vscode/extensions/qvr.qvr-0.1.0";

function assets(bundle: string, nonce = createNonce()): WebviewAssets {
  return {
    cspSource: CSP_SOURCE,
    nonce,
    scriptUri: `${RESOURCE_ROOT}/dist/webview/${bundle}`,
    styleUri: `${RESOURCE_ROOT}/media/webview.css`,
  };
}

function policyOf(html: string): Map<string, string[]> {
  const match = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html);
  assert.ok(match, "the page has a CSP meta tag");
  const decoded = match[1]!.replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&amp;/g, "&");
  return new Map(
    decoded.split(";").map((directive) => {
      const [name, ...sources] = directive.trim().split(/\s+/);
      return [name!, sources];
    }),
  );
}

const pages = [
  { name: "diagram page", render: (a: WebviewAssets) => renderDiagramPage(a, "mermaid", "model.qvr"), bundle: "diagram.js" },
  { name: "loss page", render: (a: WebviewAssets) => renderLossPage(a, "QVR SVI: model"), bundle: "loss.js" },
];

for (const page of pages) {
  describe(page.name, () => {
    it("has a CSP that denies everything by default and allows scripts only by nonce", () => {
      const pageAssets = assets(page.bundle);
      const policy = policyOf(page.render(pageAssets));
      assert.deepEqual(policy.get("default-src"), ["'none'"]);
      const scripts = policy.get("script-src") ?? [];
      assert.ok(scripts.includes(`'nonce-${pageAssets.nonce}'`));
      for (const forbidden of ["'unsafe-inline'", "'unsafe-eval'", "*", "https:", "http:", CSP_SOURCE]) {
        assert.ok(!scripts.includes(forbidden), `script-src must not allow ${forbidden}`);
      }
      const styles = policy.get("style-src") ?? [];
      assert.deepEqual(styles.sort(), [CSP_SOURCE, `'nonce-${pageAssets.nonce}'`].sort());
    });

    it("puts the nonce on every script element and has no inline script", () => {
      const pageAssets = assets(page.bundle);
      const html = page.render(pageAssets);
      const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
      assert.ok(scripts.length >= 1);
      for (const [, attributes, body] of scripts) {
        assert.match(attributes!, new RegExp(`\\snonce="${escapeRegExp(pageAssets.nonce)}"`));
        assert.match(attributes!, /\ssrc="[^"]+"/);
        assert.equal(body!.trim(), "", "scripts come from the bundle, not inline");
      }
      assert.doesNotMatch(html, /\son[a-z]+=/i, "no inline event handlers");
    });

    it("loads nothing but the extension's own resources", () => {
      const html = page.render(assets(page.bundle));
      for (const [, url] of html.matchAll(/\b(?:src|href)="([^"]*)"/g)) {
        assert.ok(url!.startsWith(`${RESOURCE_ROOT}/`), `${url} is an extension resource`);
      }
      for (const [url] of html.matchAll(/\bhttps?:\/\/[^\s"'<>;]+/g)) {
        assert.ok(url.startsWith(RESOURCE_ROOT) || url === CSP_SOURCE, `unexpected URL ${url}`);
      }
    });

    it("has no http(s) URL at all when the resources are not served over http", () => {
      const local: WebviewAssets = {
        cspSource: "vscode-webview-resource:",
        nonce: createNonce(),
        scriptUri: `vscode-webview-resource://ext/dist/webview/${page.bundle}`,
        styleUri: "vscode-webview-resource://ext/media/webview.css",
      };
      assert.doesNotMatch(page.render(local), /https?:\/\//);
    });
  });
}

describe("diagram page", () => {
  it("allows WebAssembly compilation for Graphviz without allowing eval", () => {
    const policy = policyOf(renderDiagramPage(assets("diagram.js"), "dot", "m.qvr"));
    assert.ok(policy.get("script-src")?.includes("'wasm-unsafe-eval'"));
    const lossPolicy = policyOf(renderLossPage(assets("loss.js"), "t"));
    assert.ok(!lossPolicy.get("script-src")?.includes("'wasm-unsafe-eval'"));
  });

  it("preselects the requested renderer", () => {
    const html = renderDiagramPage(assets("diagram.js"), "dot", "m.qvr");
    assert.match(html, /<option value="dot" selected>Graphviz<\/option>/);
    assert.match(html, /<option value="mermaid">Mermaid<\/option>/);
    assert.match(html, /<body data-format="dot">/);
  });

  it("escapes the document name", () => {
    const html = renderDiagramPage(assets("diagram.js"), "mermaid", `<img src=x onerror="alert(1)">.qvr`);
    assert.ok(!html.includes("<img"));
    assert.ok(html.includes("&lt;img src=x onerror="));
  });
});

describe("createNonce", () => {
  it("is fresh on every call and valid as a CSP nonce-source", () => {
    const nonces = new Set(Array.from({ length: 50 }, createNonce));
    assert.equal(nonces.size, 50);
    for (const nonce of nonces) {
      assert.match(nonce, /^[A-Za-z0-9+/_-]+={0,2}$/);
      assert.ok(nonce.length >= 22);
    }
  });
});

describe("contentSecurityPolicy", () => {
  it("survives attribute escaping unchanged", () => {
    const policy = contentSecurityPolicy(assets("x.js", "abc"), false);
    assert.equal(escapeAttribute(policy).replace(/&#39;/g, "'"), policy);
  });
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
