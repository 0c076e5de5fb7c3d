/**
 * A chain's colour in the run view: the class `chain chain-N` of media/webview.css, the one
 * palette (its `.chain-0` to `.chain-7` rules take the theme's chart colours where it has
 * them, else fixed ones that qvr_core/posterior/palette.py repeats for figures). SVG lines
 * take the class; canvas plots read the colour it gives (browser/loss/fit.ts).
 */

/** Distinct colours (webview.css, .chain-0 to .chain-7); later chains repeat them dashed. */
export const CHAIN_COLOURS = 8;

export function chainClass(chain: number): string {
  return `chain chain-${chain % CHAIN_COLOURS}${chain >= CHAIN_COLOURS ? " dashed" : ""}`;
}
