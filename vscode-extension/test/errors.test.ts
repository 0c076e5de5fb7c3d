import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ResponseError } from "vscode-jsonrpc";
import { errorKind, errorMessage } from "../src/shared/errors";

describe("command errors", () => {
  it("carry the server's kind in data.kind", () => {
    const missingTorch = new ResponseError(-32803, "running a program needs torch", { kind: "run-support" });
    assert.equal(errorKind(missingTorch), "run-support");
    assert.equal(errorMessage(missingTorch), "running a program needs torch");
  });

  it("have no kind when the data has none", () => {
    assert.equal(errorKind(new ResponseError(-32603, "internal error")), undefined);
    assert.equal(errorKind(new ResponseError(-32603, "odd", { kind: 3 })), undefined);
    assert.equal(errorKind(new Error("plain")), undefined);
    assert.equal(errorKind("a string"), undefined);
    assert.equal(errorKind(null), undefined);
  });
});
