; Zed's outline: the declarations, and the sites and steps of a program.

(object_declaration
  "object" @context
  name: (identifier) @name) @item

(morphism_declaration
  "morphism" @context
  name: (identifier) @name) @item

(let_declaration
  "let" @context
  name: (identifier) @name) @item

(define_declaration
  "define" @context
  name: (identifier) @name) @item

(computation_declaration
  "define" @context
  name: (identifier) @name) @item

(program_declaration
  "program" @context
  name: (identifier) @name) @item

(export_declaration
  "export" @context
  value: (_) @name) @item

(sample_step
  "sample" @context
  target: (_) @name) @item

(observe_step
  "observe" @context
  target: (_) @name) @item

(marginalize_step
  "marginalize" @context
  target: (_) @name) @item

(_
  [
    "index" "family" "effect" "instance" "handler" "composition" "rule" "schema" "bundle"
    "contraction" "deduction" "signature" "encoder" "decoder" "loss"
  ] @context
  name: (identifier) @name) @item
