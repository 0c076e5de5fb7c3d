; Indentation in Helix: a line that opens a body indents what follows it (`@extend`
; keeps the lines below in the body while they are indented), brackets indent their
; contents.

[
  (program_declaration)
  (marginalize_step)
  (computation_declaration)
  (let_declaration)
  (define_declaration)
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
] @indent

[
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
] @extend

[
  ")"
  "]"
  "}"
] @outdent
