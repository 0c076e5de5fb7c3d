// Parses Mermaid flowcharts with mermaid's own parser, without a browser.
//
// stdin:  a JSON object {name: text, ...}
// stdout: a JSON object {name: {ok, type, error, vertices, classes, edges, subgraphs}}
//         where vertices maps each node id to its label, classes to its classes, edges
//         lists [start, end, label] and subgraphs [id, title, member ids] as mermaid
//         itself understood them.
// Exit status 0 when every text parsed, 1 otherwise.
// mermaid sanitises labels with DOMPurify, which needs a DOM: jsdom provides it.
import { JSDOM } from "jsdom";

const { window } = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = window;
globalThis.document = window.document;

const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });

async function parse(text) {
  const parsed = await mermaid.parse(text);
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
  const vertices = {};
  const classes = {};
  for (const [id, vertex] of diagram.db.getVertices()) {
    vertices[id] = vertex.text;
    classes[id] = vertex.classes ?? [];
  }
  const edges = diagram.db.getEdges().map((e) => [e.start, e.end, e.text ?? ""]);
  const subgraphs = (diagram.db.getSubGraphs?.() ?? []).map((g) => [g.id, g.title, g.nodes]);
  return { ok: true, type: parsed.diagramType, error: null, vertices, classes, edges, subgraphs };
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const inputs = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const results = {};
let failed = 0;
for (const [name, text] of Object.entries(inputs)) {
  try {
    results[name] = await parse(text);
  } catch (error) {
    failed += 1;
    results[name] = { ok: false, type: null, error: String(error?.message ?? error), vertices: {}, edges: [] };
  }
}
process.stdout.write(JSON.stringify(results) + "\n");
process.exit(failed ? 1 : 0);
