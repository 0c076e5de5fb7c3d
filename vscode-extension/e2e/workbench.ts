/**
 * Drives VS Code's web workbench through what a user does: keyboard shortcuts, the
 * command palette, the mouse over editor text, and the webviews' frames. Every wait
 * is for something to appear on screen, never a fixed delay.
 */
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import type { Frame, Locator, Page } from "playwright-core";

const STEP_TIMEOUT_MS = 30_000;
/** How long an open palette takes to accept typing; past it, it has closed under us. */
const PALETTE_TIMEOUT_MS = 5_000;

export class Workbench {
  private shotCount = 0;

  constructor(
    readonly page: Page,
    private readonly shotsDir: string,
  ) {
    mkdirSync(shotsDir, { recursive: true });
  }

  async screenshot(name: string, target?: Locator): Promise<string> {
    this.shotCount += 1;
    const file = path.join(this.shotsDir, `${String(this.shotCount).padStart(2, "0")}-${name}.png`);
    if (target !== undefined) await target.screenshot({ path: file });
    else await this.page.screenshot({ path: file });
    return file;
  }

  /**
   * Waits until every element `target` matches lies wholly inside the window (a toast slides
   * in from below: its buttons reach their place when the animation ends), and fails with
   * where each is when they never all do.
   */
  async fullyInsideWindow(target: Locator, timeoutMs = STEP_TIMEOUT_MS): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let boxes: ({ x: number; y: number; width: number; height: number } | null)[] = [];
    for (;;) {
      const size = this.page.viewportSize() ?? (await this.page.evaluate(() => ({ width: innerWidth, height: innerHeight })));
      boxes = await Promise.all((await target.all()).map((element) => element.boundingBox()));
      const inside = (b: (typeof boxes)[number]): boolean =>
        b !== null && b.width > 0 && b.x >= 0 && b.y >= 0 && b.x + b.width <= size.width + 0.5 && b.y + b.height <= size.height + 0.5;
      if (boxes.length > 0 && boxes.every(inside)) return;
      if (Date.now() > deadline) throw new Error(`not inside the ${size.width}x${size.height} window: ${JSON.stringify(boxes)}`);
      await this.page.waitForTimeout(50); // the next animation frame or so
    }
  }

  /**
   * Opens a workspace file by name through Quick Open (Ctrl+P), and waits for `shown`: by
   * default the first line of the active editor (a notebook's editors are its cells').
   */
  async openFile(name: string, shown?: Locator): Promise<void> {
    await this.page.keyboard.press("Escape");
    await this.page.keyboard.press("Control+P");
    const input = this.quickInput();
    await input.waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
    await input.fill(name);
    await this.page
      .locator(".quick-input-list .monaco-list-row.focused", { hasText: name })
      .first()
      .waitFor({ timeout: STEP_TIMEOUT_MS });
    await this.page.keyboard.press("Enter");
    await this.page.locator(`.tab.active[aria-label*="${name}"]`).first().waitFor({ timeout: STEP_TIMEOUT_MS });
    await (shown ?? this.activeEditor().locator(".view-line").first()).waitFor({ timeout: STEP_TIMEOUT_MS });
  }

  /**
   * Applies an entry of the open code action menu with the keyboard, as a user would
   * (the menu's pointer block swallows synthetic clicks).
   */
  async chooseAction(row: Locator): Promise<void> {
    const rows = this.page.locator(".action-widget .monaco-list-row.action");
    const count = await rows.count();
    for (let i = 0; i <= count; i++) {
      if (((await row.getAttribute("class")) ?? "").split(/\s+/).includes("focused")) {
        await this.page.keyboard.press("Enter");
        await row.waitFor({ state: "detached", timeout: STEP_TIMEOUT_MS });
        return;
      }
      await this.page.keyboard.press("ArrowDown");
    }
    throw new Error(`could not focus the action ${await row.innerText()}`);
  }

  /**
   * Runs a command by its palette title, e.g. "QVR: Show Diagram". An editor that takes
   * the focus as it settles (a webview tab just clicked, a notebook cell) closes the
   * palette it opened over, which then fails to fill, or takes the key press itself, so
   * that the palette never opens (each one CI run in several, after the notebook's
   * diagram tab was clicked): the palette is opened again while it is not open, and any
   * other failure (a palette open without the command) is reported as it is.
   */
  async command(title: string): Promise<void> {
    const input = this.quickInput();
    const row = this.page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (let attempt = 1; ; attempt++) {
      await this.page.keyboard.press("Control+Shift+P");
      try {
        await input.waitFor({ state: "visible", timeout: PALETTE_TIMEOUT_MS });
        await input.fill(`>${title}`, { timeout: PALETTE_TIMEOUT_MS });
        await row.click({ timeout: STEP_TIMEOUT_MS });
        return;
      } catch (e) {
        if ((await input.isVisible()) || Date.now() > deadline) throw e;
        console.log(`# the palette was not open to choose "${title}" (attempt ${attempt}); again`);
      }
    }
  }

  quickInput(): Locator {
    return this.page.locator(".quick-input-widget input.input");
  }

  activeEditor(): Locator {
    return this.page.locator(".editor-group-container.active .monaco-editor").first();
  }

  /** The text of the active editor's rendered lines (what is on screen). */
  async visibleLines(): Promise<string[]> {
    const lines = await this.activeEditor().locator(".view-line").evaluateAll((nodes) =>
      nodes
        .map((node) => ({ top: parseFloat((node as HTMLElement).style.top || "0"), text: node.textContent ?? "" }))
        .sort((a, b) => a.top - b.top)
        .map((line) => line.text.replace(/\u00a0/g, " ")),
    );
    return lines;
  }

  async waitForLine(predicate: (line: string) => boolean, what: string, timeoutMs = STEP_TIMEOUT_MS): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    let lines: string[] = [];
    while (Date.now() < deadline) {
      lines = await this.visibleLines();
      if (lines.some(predicate)) return lines;
      await this.page.waitForTimeout(100);
    }
    throw new Error(`no line ${what} in the editor; it shows:\n${lines.join("\n")}`);
  }

  /** The centre of `word` on the first line that starts with `lineStart`, in `editor` (default: the active one). */
  async wordCenter(lineStart: string, word: string, editor: Locator = this.activeEditor()): Promise<{ x: number; y: number }> {
    const element = await editor.elementHandle();
    const box = await this.page.evaluate(
      ([root, start, target]) => {
        for (const line of Array.from((root as Element).querySelectorAll(".view-line"))) {
          if (!(line.textContent ?? "").replace(/\u00a0/g, " ").startsWith(start as string)) continue;
          const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
          const text = (line.textContent ?? "").replace(/\u00a0/g, " ");
          const index = text.indexOf(target as string, (start as string).length - (target as string).length);
          if (index < 0) return null;
          // Find the text node holding the character at `index`.
          let seen = 0;
          for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
            const length = node.textContent?.length ?? 0;
            if (index < seen + length) {
              const range = document.createRange();
              range.setStart(node, index - seen);
              range.setEnd(node, Math.min(length, index - seen + (target as string).length));
              const rect = range.getBoundingClientRect();
              return { x: rect.x + rect.width / 2, y: rect.y + rect.height / 2 };
            }
            seen += length;
          }
        }
        return null;
      },
      [element, lineStart, word] as const,
    );
    if (box === null) throw new Error(`"${word}" not found on a line starting "${lineStart}"`);
    return box;
  }

  /** Hovers `word` (in `editor`, default the active one) and returns the hover's text once it shows `expected`. */
  async hover(lineStart: string, word: string, expected: string, editor?: Locator): Promise<string> {
    await this.dismissHover();
    return this.hoverPoint(await this.wordCenter(lineStart, word, editor), expected);
  }

  /** Hovers the middle of `target` (a squiggle, say) and returns the hover's text once it shows `expected`. */
  async hoverAt(target: Locator, expected: string): Promise<string> {
    await this.dismissHover();
    const box = await target.boundingBox();
    if (box === null) throw new Error("the element to hover is not shown");
    return this.hoverPoint({ x: box.x + box.width / 2, y: box.y + box.height / 2 }, expected);
  }

  private async hoverPoint({ x, y }: { x: number; y: number }, expected: string): Promise<string> {
    await this.page.mouse.move(x - 30, y - 30);
    await this.page.mouse.move(x, y, { steps: 4 });
    const hover = this.page.locator(".monaco-hover-content", { hasText: expected }).filter({ visible: true }).first();
    await hover.waitFor({ timeout: STEP_TIMEOUT_MS });
    return hover.innerText();
  }

  async dismissHover(): Promise<void> {
    await this.page.mouse.move(2, 2);
    await this.page.keyboard.press("Escape");
    await this.page.locator(".monaco-hover-content").filter({ visible: true }).waitFor({ state: "hidden", timeout: STEP_TIMEOUT_MS });
  }

  /** Puts the cursor into `word` on the line starting with `lineStart` (in `editor`, default the active one). */
  async clickWord(lineStart: string, word: string, editor?: Locator): Promise<void> {
    const { x, y } = await this.wordCenter(lineStart, word, editor);
    await this.page.mouse.click(x, y);
  }

  /**
   * Puts the cursor at a line and column (1-based) through Go to Line (Ctrl+G), and
   * waits for the status bar to show it there. Unlike a click it cannot land beside
   * the word while inlay hints are still being laid out.
   */
  async goTo(line: number, column: number): Promise<void> {
    await this.page.keyboard.press("Control+G");
    const input = this.quickInput();
    await input.waitFor({ state: "visible", timeout: STEP_TIMEOUT_MS });
    await input.fill(`:${line}:${column}`);
    await this.page.keyboard.press("Enter");
    await input.waitFor({ state: "hidden", timeout: STEP_TIMEOUT_MS });
    await this.page
      .locator("#status\\.editor\\.selection", { hasText: `Ln ${line}, Col ${column}` })
      .waitFor({ timeout: STEP_TIMEOUT_MS });
  }

  /** Gives the keyboard back to the editor of `name` (e.g. from a webview) by clicking its tab. */
  async focusEditor(name: string): Promise<void> {
    await this.page.locator(`.tab[aria-label*="${name}"]`).first().click();
    await this.page
      .locator(".editor-group-container.active .monaco-editor.focused")
      .first()
      .waitFor({ timeout: STEP_TIMEOUT_MS });
  }

  /** Types `text` into the Problems panel's filter (the panel's list only renders what fits). */
  async filterProblems(text: string): Promise<void> {
    const filter = this.page.locator('.panel input[placeholder^="Filter"]').first();
    await filter.waitFor({ timeout: STEP_TIMEOUT_MS });
    await filter.fill(text);
  }

  /**
   * The Problems rows' text once every pattern shows at the same time. The panel
   * re-renders as workspace diagnostics arrive and its filter settles, so one read
   * right after a row appears can catch a half-drawn list: read until it is whole.
   */
  async problemsShowing(patterns: RegExp[], timeoutMs = STEP_TIMEOUT_MS): Promise<string> {
    const rows = this.page.locator(".markers-panel .monaco-list-row");
    const deadline = Date.now() + timeoutMs;
    let text = "";
    while (Date.now() < deadline) {
      text = (await rows.allInnerTexts()).join("\n");
      if (patterns.every((pattern) => pattern.test(text))) return text;
      await this.page.waitForTimeout(200);
    }
    throw new Error(`the Problems panel never showed ${patterns.map(String).join(", ")} together; last:\n${text}`);
  }

  /** "Ln 17, Col 52" from the status bar. */
  async cursor(): Promise<{ line: number; column: number }> {
    const text = await this.page.locator("#status\\.editor\\.selection").innerText();
    const match = /Ln (\d+), Col (\d+)/.exec(text);
    if (match === null) throw new Error(`no cursor position in the status bar: ${text}`);
    return { line: Number(match[1]), column: Number(match[2]) };
  }

  async waitForCursorLine(line: number): Promise<void> {
    await this.page
      .locator("#status\\.editor\\.selection", { hasText: new RegExp(`Ln ${line},`) })
      .waitFor({ timeout: STEP_TIMEOUT_MS });
  }

  /** The frame of a webview whose page has `selector` (webviews nest their page in an inner iframe). */
  async webviewFrame(selector: string, timeoutMs = STEP_TIMEOUT_MS): Promise<Frame> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      for (const frame of this.page.frames()) {
        if (frame === this.page.mainFrame()) continue;
        try {
          if ((await frame.locator(selector).count()) > 0) return frame;
        } catch {
          // a frame that navigated away meanwhile
        }
      }
      await this.page.waitForTimeout(200);
    }
    throw new Error(`no webview shows ${selector}`);
  }

  /** The editor group that holds the tab titled `title` (for screenshots of one panel). */
  groupWithTab(title: string): Locator {
    return this.page.locator(".editor-group-container", { has: this.page.locator(".tab", { hasText: title }) }).first();
  }
}
