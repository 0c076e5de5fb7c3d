/**
 * Rewrites renderer markup so that parsing it never meets inline styles, which the
 * webview's CSP blocks (and reports) even in documents made by DOMParser:
 * `style="…"` attributes become `data-qvr-style="…"`, to be applied through the
 * CSSOM after insertion, and <style> elements get the page's nonce.
 *
 * Works on start tags only, so text content is never touched. Serializers escape
 * quotes inside attribute values, and renderers put no ">" in them, so a start tag
 * ends at the first ">".
 */

export const STYLE_DATA_ATTRIBUTE = "data-qvr-style";

const START_TAG = /<([A-Za-z][\w:.-]*)((?:\s[^>]*)?)>/g;
const STYLE_ATTRIBUTE = /(\s)style(\s*=\s*)(?="|')/gi;
const NONCE_ATTRIBUTE = /\snonce\s*=/i;

export function neutralizeInlineStyles(markup: string, nonce: string): string {
  return markup.replace(START_TAG, (_tag, name: string, attributes: string) => {
    let rewritten = attributes.replace(STYLE_ATTRIBUTE, `$1${STYLE_DATA_ATTRIBUTE}$2`);
    if (name.toLowerCase() === "style" && !NONCE_ATTRIBUTE.test(rewritten)) {
      rewritten = ` nonce="${nonce}"${rewritten}`;
    }
    return `<${name}${rewritten}>`;
  });
}
