; Indentation (nvim-treesitter's captures). A line that opens a body indents the line
; after it at once (`indent.immediate`: the body is not in the tree until it is typed);
; brackets indent their contents and their closer goes back; a program ends at `return`.

([
  (program_declaration)
  (marginalize_step)
  (computation_declaration)
  (family_declaration)
  (effect_declaration)
  (handler_declaration)
  (return_clause)
  (operation_clause)
  (composition_declaration)
  (deduction_declaration)
  (lexicon_declaration)
  (signature_declaration)
  (signature_section)
  (encoder_declaration)
  (decoder_declaration)
  (loss_declaration)
  (handle_computation)
  (with_instance_computation)
  (case_computation)
  (case_branch)
  (if_computation)
  (else_computation)
] @indent.begin
  (#set! indent.immediate 1))

; `define f = g where` and its definitions below
([
  (let_declaration
    "where")
  (define_declaration
    "where")
] @indent.begin
  (#set! indent.immediate 1))

[
  (arguments)
  (parameters)
  (options)
  (list)
  (tuple)
  (parenthesized_expression)
  (constructor_options)
  (token_block)
  (braced_steps)
  (factor_cases)
  (static_arguments)
  (value_parameters)
] @indent.begin

[
  ")"
  "]"
  "}"
] @indent.branch

(return_step) @indent.dedent
