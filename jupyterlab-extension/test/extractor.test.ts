import * as assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { QvrCellExtractor, qvrText } from "../src/extractor";

/** The cases the server is checked against too (tests/lsp/test_notebooks.py). */
const CASES: { cell: string; qvr: string | null }[] = JSON.parse(
  readFileSync(path.join(__dirname, "..", "..", "..", "tests", "lsp", "qvr_cells.json"), "utf8"),
).cases;

describe("which cells are QVR", () => {
  it("reads each cell as the server reads it", () => {
    assert.ok(CASES.length >= 10);
    for (const { cell, qvr } of CASES) assert.equal(qvrText(cell), qvr, JSON.stringify(cell));
  });

  it("claims only code cells that start with the magic", () => {
    const extractor = new QvrCellExtractor();
    for (const { cell, qvr } of CASES) assert.equal(extractor.hasForeignCode(cell, "code"), qvr !== null, JSON.stringify(cell));
    assert.equal(extractor.hasForeignCode("%%qvr\nobject X : Real 1\n", "markdown"), false);
    assert.equal(extractor.hasForeignCode("%%qvr\nobject X : Real 1\n", "raw"), false);
  });

  it("gives the whole cell as one QVR document, line for line, and the Python document none of it", () => {
    const cell = "%%qvr --run\nobject X : Real 1\nobject Y : Real 2";
    const [extract, ...rest] = new QvrCellExtractor().extractForeignCode(cell);
    assert.deepEqual(rest, []);
    assert.equal(extract.foreignCode, "# qvr --run\nobject X : Real 1\nobject Y : Real 2");
    assert.deepEqual(extract.range, { start: { line: 0, column: 0 }, end: { line: 2, column: 17 } });
    assert.equal(extract.hostCode, "");
    assert.equal(extract.virtualShift, null);
    // a trailing newline ends on the empty last line
    const [withNewline] = new QvrCellExtractor().extractForeignCode("%%qvr\nobject X : Real 1\n");
    assert.deepEqual(withNewline.range?.end, { line: 2, column: 0 });
  });

  it("leaves any other cell to its host", () => {
    const python = "import numpy as np\n";
    assert.deepEqual(new QvrCellExtractor().extractForeignCode(python), [
      { foreignCode: null, range: null, virtualShift: null, hostCode: python },
    ]);
  });

  it("makes each cell a document of its own, named .qvr", () => {
    const extractor = new QvrCellExtractor();
    assert.equal(extractor.standalone, true);
    assert.equal(extractor.language, "qvr");
    assert.equal(extractor.fileExtension, "qvr");
  });
});
