// Tokenizes QVR with the same TextMate engine VS Code uses.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { before, describe, it } from "node:test";
import * as oniguruma from "vscode-oniguruma";
import { type IGrammar, INITIAL, Registry, parseRawGrammar } from "vscode-textmate";
import { examplesDir, extensionRoot } from "./helpers/paths";

let grammar: IGrammar;

before(async () => {
  const wasm = readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) as ArrayBuffer);
  const registry = new Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName) => {
      if (scopeName !== "source.qvr") return null;
      const file = path.join(extensionRoot, "syntaxes", "qvr.tmLanguage.json");
      return parseRawGrammar(readFileSync(file, "utf8"), file);
    },
  });
  const loaded = await registry.loadGrammar("source.qvr");
  assert.ok(loaded);
  grammar = loaded;
});

/** Every token of `source` as [text, innermost scope]. */
function tokenize(source: string): [string, string][] {
  let state = INITIAL;
  const result: [string, string][] = [];
  for (const line of source.split("\n")) {
    const { tokens, ruleStack } = grammar.tokenizeLine(line, state);
    state = ruleStack;
    for (const token of tokens) {
      const text = line.slice(token.startIndex, token.endIndex);
      if (text.trim() !== "") result.push([text.trim(), token.scopes[token.scopes.length - 1]!]);
    }
  }
  return result;
}

function scopeOf(source: string, text: string): string | undefined {
  return tokenize(source).find(([t]) => t === text)?.[1];
}

describe("QVR grammar", () => {
  it("marks declaration keywords and the declared names", () => {
    const source = "object Token : FinSet 256\nmorphism tok_embed : Token -> Embedded [role=embed]";
    assert.equal(scopeOf(source, "object"), "storage.type.object.qvr");
    assert.equal(scopeOf(source, "Token"), "entity.name.type.object.qvr");
    assert.equal(scopeOf(source, "FinSet"), "support.type.constructor.qvr");
    assert.equal(scopeOf(source, "256"), "constant.numeric.qvr");
    assert.equal(scopeOf(source, "morphism"), "storage.type.morphism.qvr");
    assert.equal(scopeOf(source, "tok_embed"), "entity.name.function.morphism.qvr");
    assert.equal(scopeOf(source, "->"), "keyword.operator.arrow.qvr");
  });

  it("marks options, roles and families", () => {
    const source = "morphism cell : Embedded * Hidden -> Hidden [role=kernel, scale=0.1, param_source=linear, rank=4] ~ Normal";
    assert.equal(scopeOf(source, "role"), "variable.parameter.option.qvr");
    assert.equal(scopeOf(source, "kernel"), "support.constant.role.qvr");
    assert.equal(scopeOf(source, "scale"), "variable.parameter.option.qvr");
    assert.equal(scopeOf(source, "0.1"), "constant.numeric.qvr");
    assert.equal(scopeOf(source, "linear"), "support.constant.option-value.qvr");
    assert.equal(scopeOf(source, "~"), "keyword.operator.distributed.qvr");
    assert.equal(scopeOf(source, "Normal"), "support.class.family.qvr");
    assert.equal(scopeOf(source, "*"), "keyword.operator.arithmetic.qvr");
  });

  it("marks a family called in a step, by the registry's generated names", () => {
    const source = "    sample tau <- HalfCauchy(5.0)";
    assert.equal(scopeOf(source, "HalfCauchy"), "support.class.family.qvr");
    assert.equal(scopeOf(source, "5.0"), "constant.numeric.qvr");
  });

  it("marks combinators, composition and the tensor product", () => {
    const source = "let backbone = fan(forward_path, backward_path) >> combine @ identity(Token) >> scan(c, reverse=true)";
    assert.equal(scopeOf(source, "let"), "storage.type.let.qvr");
    assert.equal(scopeOf(source, "backbone"), "variable.other.definition.qvr");
    assert.equal(scopeOf(source, "fan"), "support.function.combinator.qvr");
    assert.equal(scopeOf(source, "identity"), "support.function.combinator.qvr");
    assert.equal(scopeOf(source, ">>"), "keyword.operator.compose.qvr");
    assert.equal(scopeOf(source, "@"), "keyword.operator.tensor.qvr");
    assert.equal(scopeOf(source, "reverse"), "variable.parameter.option.qvr");
    assert.equal(scopeOf(source, "true"), "constant.language.boolean.qvr");
  });

  it("marks program steps, builtins and negative numbers", () => {
    const source = [
      "program lstm (x, h) : Embedded * Hidden -> Hidden",
      "    sample g <- gate(x, h)",
      "    let c = sigmoid(g) * tanh(-2.5 * h) + max(g, 1e-3)",
      "    observe y : Token <- lm_head(c)",
      "    return y",
      "export lstm",
    ].join("\n");
    assert.equal(scopeOf(source, "program"), "storage.type.program.qvr");
    assert.equal(scopeOf(source, "lstm"), "entity.name.function.program.qvr");
    assert.equal(scopeOf(source, "sample"), "keyword.control.sample.qvr");
    assert.equal(scopeOf(source, "g"), "variable.other.site.qvr");
    assert.equal(scopeOf(source, "<-"), "keyword.operator.bind.qvr");
    assert.equal(scopeOf(source, "sigmoid"), "support.function.builtin.qvr");
    assert.equal(scopeOf(source, "-2.5"), "constant.numeric.qvr");
    assert.equal(scopeOf(source, "1e-3"), "constant.numeric.qvr");
    assert.equal(scopeOf(source, "observe"), "keyword.control.observe.qvr");
    assert.equal(scopeOf(source, "return"), "keyword.control.qvr");
    assert.equal(scopeOf(source, "export"), "keyword.control.export.qvr");
  });

  it("marks the keywords and declaration kinds of quivers 0.15 and later", () => {
    const source = [
      "define backbone = identity(Token)",
      "    where",
      "program lda(alpha : Real) : Word -> Word",
      "    marginalize z : Topic <- Categorical(theta) [over=Doc]",
      "        observe w : Word <- Categorical(phi[z])",
      "    score penalty = 0.5 * alpha",
      "    return w",
      "deduction CCG : Term -> Term",
      "    rule fwd_app : span(I, K, A) |- span(I, J, A)",
      "effect Choice",
      "let loss = head >> loss_fn",
    ].join("\n");
    assert.equal(scopeOf(source, "define"), "storage.type.define.qvr");
    assert.equal(scopeOf(source, "backbone"), "variable.other.definition.qvr");
    assert.equal(scopeOf(source, "where"), "keyword.control.qvr");
    assert.equal(scopeOf(source, "marginalize"), "keyword.control.marginalize.qvr");
    assert.equal(scopeOf(source, "z"), "variable.other.site.qvr");
    assert.equal(scopeOf(source, "score"), "keyword.control.score.qvr");
    assert.equal(scopeOf(source, "penalty"), "variable.other.site.qvr");
    assert.equal(scopeOf(source, "deduction"), "storage.type.declaration.qvr");
    assert.equal(scopeOf(source, "CCG"), "entity.name.declaration.qvr");
    assert.equal(scopeOf(source, "rule"), "storage.type.declaration.qvr");
    assert.equal(scopeOf(source, "fwd_app"), "entity.name.declaration.qvr");
    assert.equal(scopeOf(source, "effect"), "storage.type.declaration.qvr");
    // a declaration kind is a keyword only where it starts a declaration: `loss` here is a name
    assert.equal(scopeOf(source, "loss"), "variable.other.definition.qvr");
  });

  it("separates doc comments from comments, including after code", () => {
    const source = "#! The token vocabulary.\nobject Token : FinSet 256  # a finite set\n# plain";
    assert.equal(scopeOf(source, "#! The token vocabulary."), "comment.line.documentation.qvr");
    assert.equal(scopeOf(source, "plain"), "comment.line.number-sign.qvr");
    assert.equal(tokenize(source).find(([t]) => t.includes("a finite set"))?.[1], "comment.line.number-sign.qvr");
  });

  it("tokenizes the examples without leaving anything unscoped", () => {
    for (const example of ["bidirectional_rnn_lm.qvr", "vanilla_rnn_lm.qvr"]) {
      const source = readFileSync(path.join(examplesDir, example), "utf8");
      for (const [text, scope] of tokenize(source)) {
        assert.notEqual(scope, "source.qvr", `"${text}" in ${example} has no scope`);
      }
    }
  });
});
