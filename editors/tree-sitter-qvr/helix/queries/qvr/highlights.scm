; Written by scripts/gen_tree_sitter.py from editors/tree-sitter-qvr/queries/highlights.scm (blocks in reverse order, Helix's capture names): do not edit.

; Highlights for QVR, with nvim-treesitter's capture names (Zed reads them too).
;
; A later pattern wins over an earlier one (Neovim, Zed): general patterns come first.
; Helix lets the first pattern win, so its copy (editors/tree-sitter-qvr/helix/) is this
; file with the blocks (the runs of lines between blank lines) in reverse order and
; Helix's names, written by scripts/gen_tree_sitter.py. Keep each block's patterns
; disjoint: they do not overlap within a block.
;
; No builtin name is listed by hand: a family is a capitalised callee (or a capitalised
; name a site draws from), an object constructor is the grammar's `builtin_type`, and the
; arithmetic builtins and combinators below come from qvr's registry (qvr_core.builtins).

; The arithmetic builtins and the combinators of qvr's registry.
((call
  function: (identifier) @function.builtin)
  ; BEGIN builtin functions (scripts/gen_tree_sitter.py writes this list; do not edit)
  (#any-of? @function.builtin
    "sigmoid" "tanh" "exp" "expm1" "log" "log1p" "log2" "log10" "sqrt" "rsqrt" "square" "abs" "sign"
    "reciprocal" "sin" "cos" "tan" "asin" "acos" "atan" "sinh" "cosh" "asinh" "acosh" "atanh"
    "floor" "ceil" "round" "trunc" "erf" "erfc" "erfinv" "lgamma" "digamma" "relu" "softplus"
    "logsigmoid" "softsign" "gelu" "silu" "elu" "selu" "mish" "relu6" "sum" "mean" "prod"
    "logsumexp" "softmax" "log_softmax" "cumsum" "sort" "normalize" "layer_norm" "min" "max" "pow"
    "gp_exp_quad_cov" "gp_matern32_cov" "gp_matern52_cov" "add_diag" "cholesky" "matvec" "lag"
    "lags" "tail" "linear_recurrence" "ode_rk45" "ode_rk45_tol" "ode_bdf" "ode_bdf_tol" "map" "fold"
    "fan" "scan" "scanl" "multihead" "causal_multihead" "cross_multihead" "stack" "repeat"
    "identity")
  ; END builtin functions
  )

; A family: a capitalised callee (`Normal(0.0, 1.0)`), or a capitalised name a site
; draws from or a morphism's prior is (`sample x <- Flat`, `~ Normal`).
[
  ((family_call
    family: (identifier) @function.builtin)
    (#match? @function.builtin "^[A-Z]"))
  ((call
    function: (identifier) @function.builtin)
    (#match? @function.builtin "^[A-Z]"))
  ((_
    source: (identifier) @function.builtin)
    (#match? @function.builtin "^[A-Z]"))
  ((initializer
    value: (identifier) @function.builtin)
    (#match? @function.builtin "^[A-Z]"))
]

[
  (method_call
    method: (identifier) @function.method)
  (perform
    operation: (identifier) @function.method)
]

; ------------------------------------------------------------------- calls

[
  (call
    function: (identifier) @function)
  (family_call
    family: (identifier) @function)
  (call_step
    function: (identifier) @function)
  (computation_call
    function: (identifier) @function)
]

(pragma_entry
  key: (identifier) @attribute)

(option
  value: (identifier) @constant)

; ------------------------------------------------------ options and pragmas

[
  (option
    key: (identifier) @variable.other.member)
  (flag
    key: (identifier) @variable.other.member)
  (keyword_argument
    name: (identifier) @variable.other.member)
  (object_keyword_argument
    name: (identifier) @variable.other.member)
  (label
    label: (identifier) @variable.other.member)
]

[
  (parameter
    name: (identifier) @variable.parameter)
  (lambda
    parameter: (identifier) @variable.parameter)
  (factor_binder
    name: (identifier) @variable.parameter)
  (value_parameter
    name: (identifier) @variable.parameter)
  (binder
    name: (identifier) @variable.parameter)
]

[
  (morphism_declaration
    name: (identifier) @function)
  (let_declaration
    name: (identifier) @function)
  (define_declaration
    name: (identifier) @function)
  (computation_declaration
    name: (identifier) @function)
  (program_declaration
    name: (identifier) @function)
  (role_declaration
    name: (identifier) @function)
  (handler_declaration
    name: (identifier) @function)
  (composition_declaration
    name: (identifier) @function)
  (rule_declaration
    name: (identifier) @function)
  (deduction_rule
    name: (identifier) @function)
  (schema_declaration
    name: (identifier) @function)
  (contraction_declaration
    name: (identifier) @function)
  (deduction_declaration
    name: (identifier) @function)
  (encoder_declaration
    name: (identifier) @function)
  (decoder_declaration
    name: (identifier) @function)
  (loss_declaration
    name: (identifier) @function)
  (output_declaration
    name: (identifier) @function)
  (constructor_declaration
    name: (identifier) @function)
  (operation_declaration
    name: (identifier) @function)
  (constructor_signature
    name: (identifier) @function)
  (binder_signature
    name: (identifier) @function)
  (export_declaration
    value: (identifier) @function)
]

[
  (index_declaration
    name: (identifier) @type)
  (family_declaration
    name: (identifier) @type)
  (effect_declaration
    name: (identifier) @type)
  (signature_declaration
    name: (identifier) @type)
  (type_declaration
    name: (identifier) @type)
  (category_declaration
    name: (identifier) @type)
  (quantale_declaration
    name: (identifier) @type)
  (sort_declaration
    name: (identifier) @type)
]

; ------------------------------------------------------ declared names

(object_declaration
  name: (identifier) @type)

(type_declaration
  constructor: (identifier) @type.builtin)

(index_constructor
  name: (identifier) @constant)

(enum_set
  name: (identifier) @constant)

[
  (constructor_signature
    [
      argument: (identifier)
      result: (identifier)
    ] @type)
  (binder_signature
    result: (identifier) @type)
  (bound_variable
    sort: (identifier) @type)
  (scoped_argument
    sort: (identifier) @type)
  (encoder_declaration
    signature: (identifier) @type)
  (decoder_declaration
    signature: (identifier) @type)
]

(family_declaration
  kind: (identifier) @type)

(_
  output: (identifier) @type)

(_
  input: (identifier) @type)

(_
  type: (identifier) @type)

(sort
  name: (identifier) @type)

(effect_ref
  name: (identifier) @type)

(static_arguments
  (identifier) @type)

(type_application
  name: (identifier) @type)

(parenthesized_type
  (identifier) @type)

(product_type
  (identifier) @type)

(function_type
  (identifier) @type)

(lexicon_entry
  category: (identifier) @type)

(deduction_rule
  [
    premise: (identifier)
    conclusion: (identifier)
  ] @type)

(rule_declaration
  [
    premise: (identifier)
    conclusion: (identifier)
  ] @type)

(morphism_kind
  name: (identifier) @type)

(parameter
  kind: (identifier) @type)

(schema_parameter
  type: (identifier) @type)

(factor_binder
  type: (identifier) @type)

(_
  codomain: (identifier) @type)

(_
  domain: (identifier) @type)

(object_application
  (identifier) @type)

(object_declaration
  value: (identifier) @type)

(parenthesized_object
  (identifier) @type)

(object_binary
  [
    left: (identifier)
    right: (identifier)
  ] @type)

(plate
  (identifier) @type)

; ------------------------------------------------------ types and objects

(builtin_type) @type.builtin

; the kind of a signature's sort: `Expr : object`
(sort_declaration
  kind: [
    "object"
    "index"
  ] @keyword)

"not" @keyword.operator

[
  "if" "then" "else" "case"
] @keyword.control.conditional

"return" @keyword.control.return

(role) @keyword

; ------------------------------------------------------------------ keywords

[
  "object" "morphism" "let" "define" "program" "export" "where"
  "index" "family" "effect" "instance" "handler" "composition" "category" "rule"
  "schema" "bundle" "contraction" "deduction" "signature" "encoder" "decoder" "loss"
  "constructor" "atoms" "binders" "lexicon" "sorts" "constructors" "vertex_kinds"
  "edge_kinds" "binds" "dim" "iterations" "readout" "op" "init" "message" "update"
  "var_init" "recurrent" "attention" "structure" "primitive" "binder_select" "body"
  "type" "output" "quantale"
  "sample" "observe" "marginalize" "score" "draw" "factor" "via" "over"
  "perform" "resume" "resumes" "handle" "with" "construct" "motive" "lacks"
  "for" "in" "as" "from"
] @keyword

[
  "->" "<-" "~" "=" "@" "|" "|->" "=>" "|-" "⊢" "--" "!" "+" "-" "*" "/" "\\" "%"
  "==" "!=" "<" "<=" ">" ">=" "&&" "||"
  ">>" "<<" ">>>" ">=>" "*>" "~>" "||>" "?>" "&&>" "+>" "$>" "%>"
] @operator

[
  "#[" "#!["
] @punctuation.special

[
  "," ":" "."
] @punctuation.delimiter

[
  "(" ")" "[" "]" "{" "}"
] @punctuation.bracket

(unit) @constant.builtin

[
  (true)
  (false)
] @constant.builtin.boolean

(string) @string

(float) @constant.numeric.float

(integer) @constant.numeric.integer

((comment) @comment.line.documentation
  (#match? @comment.line.documentation "^#!"))

(comment) @comment

(identifier) @variable
