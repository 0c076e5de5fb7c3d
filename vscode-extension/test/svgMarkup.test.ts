import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { neutralizeInlineStyles } from "../src/shared/svgMarkup";

describe("neutralizeInlineStyles", () => {
  it("moves style attributes aside and nonces style elements", () => {
    const markup =
      '<svg id="m" style="max-width: 500px;"><style>#m{fill:red}</style><g class="node"><rect style=\'fill:#fff\' x="1"/></g></svg>';
    assert.equal(
      neutralizeInlineStyles(markup, "N0nce"),
      '<svg id="m" data-qvr-style="max-width: 500px;"><style nonce="N0nce">#m{fill:red}</style><g class="node"><rect data-qvr-style=\'fill:#fff\' x="1"/></g></svg>',
    );
  });

  it("leaves text content and look-alike attributes alone", () => {
    const markup = '<text data-style="x" mystyle="y">style="not an attribute" &lt;style&gt;</text>';
    assert.equal(neutralizeInlineStyles(markup, "n"), markup);
  });

  it("keeps an existing nonce and handles style tags with attributes", () => {
    assert.equal(neutralizeInlineStyles('<style nonce="a">x</style>', "b"), '<style nonce="a">x</style>');
    assert.equal(neutralizeInlineStyles('<style type="text/css">x</style>', "b"), '<style nonce="b" type="text/css">x</style>');
  });
});
