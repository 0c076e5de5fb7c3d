/**
 * Renderers emit SVG with <style> elements and style="" attributes, both of which
 * the webview's CSP blocks (no 'unsafe-inline'). These helpers keep the policy
 * strict and the drawing intact: generated style elements get the page's nonce,
 * and inline styles are applied through the CSSOM, which CSP does not restrict.
 */
import { STYLE_DATA_ATTRIBUTE, neutralizeInlineStyles } from "../../src/shared/svgMarkup";

/**
 * Runs `render` with the DOM entry points Mermaid uses made CSP-safe: style elements
 * created by script carry the nonce, setAttribute("style") goes through the CSSOM,
 * and markup parsed by DOMParser (DOMPurify's sanitizing) is neutralized first.
 * Mermaid measures text in a temporary SVG during layout, so its styles must apply there.
 */
export async function withCspSafeStyles<T>(nonce: string, render: () => Promise<T>): Promise<T> {
  const createElement = Document.prototype.createElement;
  const createElementNS = Document.prototype.createElementNS;
  const setAttribute = Element.prototype.setAttribute;
  const parseFromString = DOMParser.prototype.parseFromString;
  const withNonce = <E extends Element>(created: E): E => {
    if (created instanceof HTMLStyleElement || created instanceof SVGStyleElement) created.nonce = nonce;
    return created;
  };
  Document.prototype.createElement = function (this: Document, tagName: string, options?: ElementCreationOptions) {
    return withNonce(createElement.call(this, tagName, options));
  } as typeof Document.prototype.createElement;
  Document.prototype.createElementNS = function (this: Document, namespace: string | null, name: string) {
    return withNonce(createElementNS.call(this, namespace, name));
  } as typeof Document.prototype.createElementNS;
  Element.prototype.setAttribute = function (this: Element, name: string, value: string): void {
    if (name.toLowerCase() === "style" && (this instanceof HTMLElement || this instanceof SVGElement)) {
      this.style.cssText = value;
      return;
    }
    setAttribute.call(this, name, value);
  };
  DOMParser.prototype.parseFromString = function (this: DOMParser, markup: string, type: DOMParserSupportedType) {
    return parseFromString.call(this, neutralizeInlineStyles(String(markup), nonce), type);
  } as typeof DOMParser.prototype.parseFromString;
  try {
    return await render();
  } finally {
    Document.prototype.createElement = createElement;
    Document.prototype.createElementNS = createElementNS;
    Element.prototype.setAttribute = setAttribute;
    DOMParser.prototype.parseFromString = parseFromString;
  }
}

/** Parses SVG markup and puts it into `container` without tripping the CSP. */
export function insertSvg(container: Element, markup: string, nonce: string): SVGSVGElement {
  const parsed = new DOMParser().parseFromString(neutralizeInlineStyles(markup, nonce), "image/svg+xml");
  const root = parsed.documentElement;
  if (!(root instanceof SVGSVGElement) || parsed.querySelector("parsererror")) {
    throw new Error("the renderer produced invalid SVG");
  }
  const svg = document.importNode(root, true);
  for (const styled of [svg, ...Array.from(svg.querySelectorAll(`[${STYLE_DATA_ATTRIBUTE}]`))]) {
    const css = styled.getAttribute(STYLE_DATA_ATTRIBUTE);
    if (css === null || !(styled instanceof SVGElement || styled instanceof HTMLElement)) continue;
    styled.style.cssText = css;
    styled.removeAttribute(STYLE_DATA_ATTRIBUTE);
  }
  container.replaceChildren(svg);
  return svg;
}
