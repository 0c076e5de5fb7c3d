; Written by scripts/gen_tree_sitter.py from editors/tree-sitter-qvr/queries/locals.scm (Helix's capture names): do not edit.

; Scopes, definitions and references, with nvim-treesitter's capture names (Helix's copy
; is written by scripts/gen_tree_sitter.py).

; ------------------------------------------------------------------ scopes

[
  (source_file)
  (program_declaration)
  (computation_declaration)
  (let_declaration)
  (define_declaration)
  (marginalize_step)
  (lambda)
  (factor_expression)
  (handler_declaration)
  (return_clause)
  (operation_clause)
  (case_branch)
] @local.scope

; ------------------------------------------------------------- definitions

(object_declaration
  name: (identifier) @local.definition)

[
  (index_declaration
    name: (identifier) @local.definition)
  (family_declaration
    name: (identifier) @local.definition)
  (effect_declaration
    name: (identifier) @local.definition)
  (signature_declaration
    name: (identifier) @local.definition)
  (type_declaration
    name: (identifier) @local.definition)
]

[
  (morphism_declaration
    name: (identifier) @local.definition)
  (let_declaration
    name: (identifier) @local.definition)
  (define_declaration
    name: (identifier) @local.definition)
  (computation_declaration
    name: (identifier) @local.definition)
  (program_declaration
    name: (identifier) @local.definition)
  (role_declaration
    name: (identifier) @local.definition)
]

[
  (parameter
    name: (identifier) @local.definition)
  (lambda
    parameter: (identifier) @local.definition)
  (factor_binder
    name: (identifier) @local.definition)
  (value_parameter
    name: (identifier) @local.definition)
  (binder
    name: (identifier) @local.definition)
]

[
  (sample_step
    target: (identifier) @local.definition)
  (observe_step
    target: (identifier) @local.definition)
  (marginalize_step
    target: (identifier) @local.definition)
  (bind_step
    target: (identifier) @local.definition)
  (draw_step
    target: (identifier) @local.definition)
  (let_step
    name: (identifier) @local.definition)
  (call_step
    name: (identifier) @local.definition)
  (score_step
    name: (identifier) @local.definition)
  (target_tuple
    name: (identifier) @local.definition)
  (let_step
    pattern: (tuple_pattern
      name: (identifier) @local.definition))
  (local
    name: (identifier) @local.definition)
]

; -------------------------------------------------------------- references

(identifier) @local.reference
