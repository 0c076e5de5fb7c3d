"""Editor features as pure functions of a `CheckedModule` (and of the text being typed).

Each module answers one kind of question with plain values (offsets,
`Span`s, `TextEdit`s, labels): `rename`, `inlay`, `signature`, `tokens`,
`folding`, `selection`, `actions`. None of them knows the protocol; the
language server (`qvr_lsp.features`) only converts positions and types.
Nothing here re-derives a type or re-resolves a name: the checker's
symbol table, typed spans and per-node types are the only source of facts.
"""
