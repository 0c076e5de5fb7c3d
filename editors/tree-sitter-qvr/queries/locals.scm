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
  name: (identifier) @local.definition.type)

[
  (index_declaration
    name: (identifier) @local.definition.type)
  (family_declaration
    name: (identifier) @local.definition.type)
  (effect_declaration
    name: (identifier) @local.definition.type)
  (signature_declaration
    name: (identifier) @local.definition.type)
  (type_declaration
    name: (identifier) @local.definition.type)
]

[
  (morphism_declaration
    name: (identifier) @local.definition.function)
  (let_declaration
    name: (identifier) @local.definition.function)
  (define_declaration
    name: (identifier) @local.definition.function)
  (computation_declaration
    name: (identifier) @local.definition.function)
  (program_declaration
    name: (identifier) @local.definition.function)
  (role_declaration
    name: (identifier) @local.definition.function)
]

[
  (parameter
    name: (identifier) @local.definition.parameter)
  (lambda
    parameter: (identifier) @local.definition.parameter)
  (factor_binder
    name: (identifier) @local.definition.parameter)
  (value_parameter
    name: (identifier) @local.definition.parameter)
  (binder
    name: (identifier) @local.definition.parameter)
]

[
  (sample_step
    target: (identifier) @local.definition.var)
  (observe_step
    target: (identifier) @local.definition.var)
  (marginalize_step
    target: (identifier) @local.definition.var)
  (bind_step
    target: (identifier) @local.definition.var)
  (draw_step
    target: (identifier) @local.definition.var)
  (let_step
    name: (identifier) @local.definition.var)
  (call_step
    name: (identifier) @local.definition.var)
  (score_step
    name: (identifier) @local.definition.var)
  (target_tuple
    name: (identifier) @local.definition.var)
  (let_step
    pattern: (tuple_pattern
      name: (identifier) @local.definition.var))
  (local
    name: (identifier) @local.definition.var)
]

; -------------------------------------------------------------- references

(identifier) @local.reference
