/**
 * tree-sitter grammar for QVR, the language of quivers, as qvr reads it.
 *
 * Written from qvr's own grammar (qvr_core/syntax/grammar.lark) and its layout pass
 * (qvr_core/syntax/layout.py): the union of quivers' grammars 0.11 .. 0.25.2, with the
 * older surfaces (quivers 0.1 - 0.10) that qvr parses with a QVR010 warning.
 *
 * qvr parses one logical line at a time: layout.py joins physical lines while a bracket
 * is open and nests indented lines under the line above them; each kind of line has its
 * own start symbol (a declaration, a program step, a line of a `deduction`, ...). Here
 * the external scanner (src/scanner.c) turns the layout into NEWLINE, INDENT and DEDENT
 * tokens, each only where the grammar accepts one, so a line inside brackets or a line
 * that cannot end yet (`factor v : V in` with its body below) runs on, as in qvr; and
 * each kind of indented body is a `block` of the lines that kind of declaration holds.
 *
 * Words such as `define`, `where`, `index` or `in` are keywords only where the grammar
 * expects one (tree-sitter's keyword extraction, like layout.SOFT_KEYWORDS).
 *
 * Regenerate src/ after an edit (editors/tree-sitter-qvr/README.md); the object
 * constructors below come from qvr's registry (scripts/gen_tree_sitter.py writes them).
 */

// BEGIN object constructors (scripts/gen_tree_sitter.py writes this list; do not edit)
const OBJECT_CONSTRUCTORS = [
  'FinSet',
  'Real',
  'Positive',
  'Unit',
  'Simplex',
  'Sphere',
  'Ball',
  'CholeskyFactor',
  'Covariance',
  'Correlation',
  'Orthogonal',
  'Stiefel',
  'LowerTriangular',
  'Diagonal',
];
// END object constructors

// The words that declared morphisms in quivers 0.1 - 0.10 (`kernel f : A -> B ~ F`).
const ROLE_WORDS = ['embed', 'continuous', 'kernel', 'latent', 'stochastic', 'discrete'];

// quivers 0.11 - 0.14's extra composition operators, beside `>>`, `<<` and `>>>`.
const COMPOSE_OPERATORS = ['>>', '<<', '>>>', '>=>', '*>', '~>', '||>', '?>', '&&>', '+>', '$>', '%>'];

const PREC = {
  lambda: -1,
  or: 1,
  and: 2,
  compare: 3,
  sum: 4,
  product: 5,
  unary: 6,
  compose: 1,
  tensor: 2,
  method: 3,
  object_sum: 1,
  object_quotient: 2,
  object_product: 3,
  family_call: 1,
};

/** `rule` once or more, separated by commas, with an optional trailing comma. */
function commaSep1(rule) {
  return seq(rule, repeat(seq(',', rule)), optional(','));
}

/** `rule` once or more, separated by commas, no trailing comma. */
function commaSep1Strict(rule) {
  return seq(rule, repeat(seq(',', rule)));
}

module.exports = grammar({
  name: 'qvr',

  word: $ => $.identifier,

  externals: $ => [
    $._newline,
    $._indent,
    $._dedent,
    // never in a rule: valid only while the parser recovers from an error
    $._error_sentinel,
    // never in a rule: an indented line below a top-level line that takes no body
    $._layout_error,
    // the scanner never gives these; whether one is valid tells it a bracket is open
    ')',
    ']',
    '}',
  ],

  // Blanks as layout.py counts them; a tab is not one (QVR001: QVR indents with spaces).
  extras: $ => [/[ \r\n\f\v\uFEFF]/, $.comment],

  conflicts: $ => [
    // `sample x <- F(a)`: the whole source is the family (or morphism) applied at the site
    [$.family_call, $.call],
  ],

  supertypes: $ => [
    $._declaration,
    $._step,
    $._expression,
    $._arithmetic,
    $._object_expression,
    $._type,
  ],

  rules: {
    source_file: $ => repeat($._declaration),

    // ------------------------------------------------------------------ lexical

    comment: _ => token(seq('#', optional(choice(
      /[^!\[\r\n][^\r\n]*/,
      seq('!', optional(/[^\[\r\n][^\r\n]*/)),
    )))),

    identifier: _ => /[_\p{L}][_\p{L}\p{N}]*/,
    integer: _ => /[0-9]+/,
    float: _ => /([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+/,
    string: _ => /"([^"\\\r\n]|\\[^\r\n])*"/,
    true: _ => 'true',
    false: _ => 'false',
    unit: _ => 'unit',
    negative_number: $ => seq('-', choice($.integer, $.float)),

    _name_list: $ => commaSep1(field('name', $.identifier)),

    // ------------------------------------------------------------- declarations

    _declaration: $ => choice(
      $.object_declaration,
      $.morphism_declaration,
      $.let_declaration,
      $.define_declaration,
      $.computation_declaration,
      $.program_declaration,
      $.export_declaration,
      $.index_declaration,
      $.family_declaration,
      $.effect_declaration,
      $.instance_declaration,
      $.handler_declaration,
      $.composition_declaration,
      $.category_declaration,
      $.rule_declaration,
      $.schema_declaration,
      $.bundle_declaration,
      $.contraction_declaration,
      $.deduction_declaration,
      $.signature_declaration,
      $.encoder_declaration,
      $.decoder_declaration,
      $.loss_declaration,
      $.pragma,
      // quivers 0.1 - 0.10
      $.type_declaration,
      $.output_declaration,
      $.quantale_declaration,
      $.role_declaration,
    ),

    // `object A, B : FinSet 8`; quivers 0.1 - 0.10: `object X : 8`, `object X = ...`
    object_declaration: $ => seq(
      'object',
      $._name_list,
      choice(
        seq(':', field('value', choice($._object_value, $.integer))),
        seq('=', field('value', $._object_value)),
      ),
      $._newline,
    ),

    // `morphism f : A -> B [role=kernel] ~ Normal(scale=0.1)`, and 0.5 - 0.10's axes
    // `~ MatrixNormal(..) over (dom, cod)`
    morphism_declaration: $ => seq(
      'morphism',
      $._name_list,
      ':',
      field('domain', $._object_expression),
      '->',
      field('codomain', $._object_expression),
      optional(field('options', $.options)),
      optional(seq(field('init', $.initializer), optional(field('axes', $.axes)))),
      $._newline,
    ),

    initializer: $ => seq('~', field('value', $._source)),

    axes: $ => seq('over', '(', $._name_list, ')'),

    // quivers 0.11 - 0.14 (`let`); a `where` opens a block of more
    let_declaration: $ => seq(
      'let',
      field('name', $.identifier),
      '=',
      field('value', $._expression),
      $._where_end,
    ),

    // quivers 0.15 on
    define_declaration: $ => seq(
      'define',
      field('name', $.identifier),
      '=',
      field('value', $._expression),
      $._where_end,
    ),

    _where_end: $ => choice(
      $._newline,
      seq('where', choice($._newline, field('body', alias($._where_block, $.block)))),
    ),
    _where_block: $ => seq($._indent, repeat1(choice($.let_declaration, $.define_declaration)), $._dedent),

    // typed computations (quivers 0.19 on): `define f[T : Type](x : A) : R !{e} =`
    computation_declaration: $ => seq(
      'define',
      field('name', $.identifier),
      optional(field('static_parameters', $.telescope)),
      optional(field('parameters', $.value_parameters)),
      ':',
      field('type', $._type),
      field('effects', $.effect_row),
      '=',
      $._computation_body,
    ),

    program_declaration: $ => seq(
      'program',
      field('name', $.identifier),
      optional(field('parameters', $.parameters)),
      ':',
      field('domain', $._object_expression),
      '->',
      // a bare size (`-> 1`) is quivers 0.1 - 0.10's
      field('codomain', choice($._object_expression, $.integer)),
      optional(field('options', $.options)),
      choice($._newline, field('body', alias($._step_block, $.block))),
    ),
    _step_block: $ => seq($._indent, repeat1($._step), $._dedent),

    parameters: $ => seq('(', optional(commaSep1($.parameter)), ')'),
    parameter: $ => seq(
      field('name', $.identifier),
      optional(seq(':', field('kind', choice($.identifier, $.morphism_kind)))),
    ),
    morphism_kind: $ => seq(
      field('name', $.identifier),
      '[',
      field('domain', $._object_expression),
      ',',
      field('codomain', $._object_expression),
      ']',
    ),

    export_declaration: $ => seq('export', field('value', $._expression), $._newline),

    // ------------------------------------------------------------------ options

    options: $ => seq('[', optional(commaSep1(choice($.option, $.flag))), ']'),
    option: $ => seq(field('key', $.identifier), '=', field('value', $._option_value)),
    flag: $ => field('key', $.identifier),
    _option_value: $ => choice(
      $._literal,
      $.string,
      alias($.value_list, $.list),
      alias($.value_call, $.call),
    ),
    value_list: $ => seq('[', optional(commaSep1(choice($._literal, $.string))), ']'),
    value_call: $ => seq(
      field('function', $.identifier),
      field('arguments', alias($.value_arguments, $.arguments)),
    ),
    value_arguments: $ => seq('(', optional(commaSep1(choice($._literal, $.string))), ')'),
    _literal: $ => choice(
      $.identifier,
      $.integer,
      $.float,
      $.negative_number,
      $.true,
      $.false,
    ),

    // -------------------------------------------------------- object expressions

    _object_value: $ => choice($._object_expression, $.enum_set),
    enum_set: $ => seq('{', $._name_list, '}'),

    _object_expression: $ => choice(
      $.object_binary,
      $.identifier,
      $.builtin_type,
      $.sized_object,
      $.object_application,
      $.parenthesized_object,
    ),
    object_binary: $ => choice(
      prec.left(PREC.object_sum, seq(
        field('left', $._object_expression),
        field('operator', '+'),
        field('right', $._object_expression),
      )),
      prec.left(PREC.object_quotient, seq(
        field('left', $._object_expression),
        field('operator', choice('/', '\\')),
        field('right', $._object_expression),
      )),
      prec.left(PREC.object_product, seq(
        field('left', $._object_expression),
        field('operator', '*'),
        field('right', $._object_expression),
      )),
    ),
    builtin_type: _ => choice(...OBJECT_CONSTRUCTORS),
    // `FinSet 8`, `Real 64 {lower=0.0}`
    sized_object: $ => prec.right(seq(
      field('constructor', $.builtin_type),
      repeat1(field('argument', choice($.integer, $.float, $.identifier, $.negative_number))),
      optional(field('options', $.constructor_options)),
    )),
    constructor_options: $ => seq('{', commaSep1(choice($.option, $.flag)), '}'),
    object_application: $ => seq(
      field('function', $.identifier),
      '(',
      commaSep1(choice($._object_expression, $.object_keyword_argument)),
      ')',
    ),
    object_keyword_argument: $ => seq(
      field('name', $.identifier),
      '=',
      field('value', choice($.integer, seq('[', $._name_list, ']'))),
    ),
    parenthesized_object: $ => seq('(', $._object_expression, ')'),

    // ------------------------------------------------------ morphism expressions

    _expression: $ => choice(
      $.composition,
      $.tensor,
      $.method_call,
      $.identifier,
      $.call,
      $.parenthesized_expression,
    ),
    composition: $ => prec.left(PREC.compose, seq(
      field('left', $._expression),
      field('operator', choice(...COMPOSE_OPERATORS)),
      field('right', $._expression),
    )),
    tensor: $ => prec.left(PREC.tensor, seq(
      field('left', $._expression),
      field('operator', '@'),
      field('right', $._expression),
    )),
    method_call: $ => prec(PREC.method, seq(
      field('object', $._expression),
      '.',
      field('method', $.identifier),
      optional(field('arguments', $.arguments)),
    )),
    call: $ => seq(field('function', $.identifier), field('arguments', $.arguments)),
    parenthesized_expression: $ => seq('(', $._expression, ')'),

    // What a site draws from, or a morphism's prior: `Normal(0.0, tau)`, `Flat`, `f >> g`.
    _source: $ => choice($.family_call, $._expression),
    // the whole source a call: a family (`Normal(mu, sigma)`), or a morphism applied
    family_call: $ => prec(PREC.family_call, seq(
      field('family', $.identifier),
      field('arguments', $.arguments),
    )),

    arguments: $ => seq('(', optional(commaSep1($._argument)), ')'),
    _argument: $ => choice(
      $._expression,
      $.keyword_argument,
      $.integer,
      $.float,
      $.negative_number,
      $.string,
      $.list,
      $.index_argument,
    ),
    keyword_argument: $ => seq(
      field('name', $.identifier),
      '=',
      field('value', choice(
        $._literal,
        $.string,
        $.call,
        $.list,
        $.index_argument,
      )),
    ),
    list: $ => seq('[', optional(commaSep1($._argument)), ']'),
    // `probs=phi[z]`
    index_argument: $ => seq(
      field('value', $.identifier),
      '[',
      field('index', $._object_expression),
      ']',
    ),

    // ------------------------------------------------------------ program steps

    _step: $ => choice(
      $.sample_step,
      $.observe_step,
      $.marginalize_step,
      $.let_step,
      $.call_step,
      $.score_step,
      $.return_step,
      // quivers 0.1 - 0.10
      $.bind_step,
      $.draw_step,
      $.output_step,
    ),

    _targets: $ => choice($.identifier, $.target_tuple),
    target_tuple: $ => choice(seq('(', $._name_list, ')'), seq('[', $._name_list, ']')),
    plate: $ => seq(':', $._object_expression),

    sample_step: $ => seq(
      'sample',
      field('target', $._targets),
      optional(field('plate', $.plate)),
      '<-',
      field('source', $._source),
      optional(field('options', $.options)),
      $._newline,
    ),

    observe_step: $ => seq(
      'observe',
      choice(
        seq(
          field('target', $._targets),
          optional(field('plate', $.plate)),
          choice('<-', '~'), // `~`: quivers 0.5 - 0.10
          field('source', $._source),
          optional(field('options', $.options)),
        ),
        // quivers 0.5 - 0.10: `observe y : Resp via idx <- F(..)`
        seq(
          field('target', $._targets),
          field('plate', $.plate),
          'via',
          field('via', $.identifier),
          '<-',
          field('source', $._source),
          optional(field('options', $.options)),
        ),
        // quivers 0.4: `observe y[n] ~ F(..) for n in R`
        seq(
          field('target', $.identifier),
          '[',
          field('index', $.identifier),
          ']',
          '~',
          field('source', $._source),
          'for',
          field('variable', $.identifier),
          'in',
          field('range', $._object_expression),
        ),
      ),
      $._newline,
    ),

    marginalize_step: $ => seq(
      'marginalize',
      field('target', $.identifier),
      optional(seq(
        optional(field('plate', $.plate)),
        '<-',
        field('source', $._source),
        optional(field('options', $.options)),
        // quivers 0.4 - 0.10: `in { ... }`, with a grouping `over G`
        optional(field('scope', $.braced_steps)),
      )),
      choice($._newline, field('body', alias($._step_block, $.block))),
    ),
    // the braces make one logical line in qvr; the steps inside are lines of their own
    braced_steps: $ => seq(
      optional(seq('over', field('over', $.identifier))),
      'in',
      '{',
      choice(seq($._indent, repeat1($._step), $._dedent), repeat($._step)),
      '}',
    ),

    let_step: $ => seq(
      'let',
      choice(
        field('name', $.identifier),
        field('pattern', alias($._tuple_pattern, $.tuple_pattern)),
      ),
      '=',
      field('value', $._arithmetic),
      $._newline,
    ),
    _tuple_pattern: $ => seq('(', $._name_list, ')'),

    // quivers 0.19 on: `let z <- f[T](x, construct C(..) as T)`
    call_step: $ => seq(
      'let',
      field('name', $.identifier),
      '<-',
      field('function', $.identifier),
      optional(field('static_arguments', $.static_arguments)),
      field('arguments', alias($.call_step_arguments, $.arguments)),
      $._newline,
    ),
    call_step_arguments: $ => seq('(', optional(commaSep1($._value)), ')'),

    score_step: $ => seq(
      'score',
      field('name', $.identifier),
      '=',
      field('value', $._arithmetic),
      $._newline,
    ),

    return_step: $ => seq(
      'return',
      field('value', choice(
        $.identifier,
        alias($._tuple_pattern, $.tuple_pattern),
        $.labelled_tuple,
      )),
      $._newline,
    ),
    labelled_tuple: $ => seq('(', commaSep1($.label), ')'),
    label: $ => seq(field('label', $.identifier), ':', field('value', $.identifier)),

    // quivers 0.5 - 0.10: `x <- f(..)`, `x : Plate <- f(..)`
    bind_step: $ => seq(
      field('target', $.identifier),
      optional(field('plate', $.plate)),
      '<-',
      field('source', $._source),
      optional(field('options', $.options)),
      $._newline,
    ),

    // quivers 0.1 - 0.4: `draw x ~ f`, `draw x : Plate -> 1 ~ f`
    draw_step: $ => seq(
      'draw',
      field('target', $.identifier),
      optional(seq(
        ':',
        field('domain', $._object_expression),
        '->',
        field('codomain', choice($._object_expression, $.integer)),
      )),
      '~',
      field('source', $._source),
      optional(field('options', $.options)),
      $._newline,
    ),

    output_step: $ => seq('output', field('name', $.identifier), $._newline),

    // --------------------------------------------------------------- arithmetic

    _arithmetic: $ => choice($.lambda, $.factor_expression, $._operand),
    _operand: $ => choice(
      $.binary_expression,
      $.unary_expression,
      $.integer,
      $.float,
      $.identifier,
      $.string,
      $.true,
      $.false,
      $.unit,
      alias($.arithmetic_call, $.call),
      $.subscript,
      alias($.arithmetic_method_call, $.method_call),
      alias($.arithmetic_list, $.list),
      alias($.parenthesized_arithmetic, $.parenthesized_expression),
      $.tuple,
    ),

    lambda: $ => prec.right(PREC.lambda, seq(
      field('parameter', $.identifier),
      '->',
      field('body', $._arithmetic),
    )),

    factor_expression: $ => seq(
      'factor',
      commaSep1Strict($.factor_binder),
      'in',
      field('body', choice($._arithmetic, $.factor_cases)),
    ),
    factor_binder: $ => seq(field('name', $.identifier), ':', field('type', $._object_expression)),
    factor_cases: $ => seq('{', commaSep1($.factor_case), '}'),
    factor_case: $ => seq(field('value', $.integer), '->', field('body', $._arithmetic)),

    binary_expression: $ => choice(
      ...[
        [PREC.or, '||'],
        [PREC.and, '&&'],
        [PREC.compare, choice('==', '!=', '<', '<=', '>', '>=')],
        [PREC.sum, choice('+', '-')],
        [PREC.product, choice('*', '/', '%')],
      ].map(([precedence, operator]) => prec.left(precedence, seq(
        field('left', $._operand),
        field('operator', operator),
        field('right', $._operand),
      ))),
    ),
    unary_expression: $ => prec(PREC.unary, seq(
      field('operator', choice('-', 'not')),
      field('operand', $._operand),
    )),

    arithmetic_call: $ => seq(
      field('function', $.identifier),
      field('arguments', alias($.arithmetic_arguments, $.arguments)),
    ),
    arithmetic_arguments: $ => seq('(', optional(commaSep1($._arithmetic)), ')'),
    subscript: $ => seq(
      field('value', $.identifier),
      '[',
      commaSep1(field('index', $._arithmetic)),
      ']',
    ),
    arithmetic_method_call: $ => seq(
      field('object', $.identifier),
      '.',
      field('method', $.identifier),
      field('arguments', alias($.arithmetic_arguments, $.arguments)),
    ),
    arithmetic_list: $ => seq('[', optional(commaSep1($._arithmetic)), ']'),
    parenthesized_arithmetic: $ => seq('(', $._arithmetic, ')'),
    tuple: $ => seq('(', $._arithmetic, ',', commaSep1($._arithmetic), ')'),

    // ------------------------------------------- typed computations (0.19 on)

    _type: $ => choice($.function_type, $.product_type, $._type_atom),
    function_type: $ => prec.left(1, seq(
      field('parameter', $._type),
      '->',
      field('result', choice($.product_type, $._type_atom)),
    )),
    product_type: $ => prec.left(2, seq(
      field('left', choice($.product_type, $._type_atom)),
      '*',
      field('right', $._type_atom),
    )),
    _type_atom: $ => choice(
      $.identifier,
      $.type_application,
      $.parenthesized_type,
    ),
    // `[..]` after a name is its static arguments (a handler's own come after: as in qvr,
    // whose LALR tables shift)
    type_application: $ => prec(1, seq(
      field('name', $.identifier),
      choice(
        field('static_arguments', $.static_arguments),
        seq(
          field('static_arguments', $.static_arguments),
          field('index_arguments', $.index_arguments),
        ),
        field('index_arguments', $.index_arguments),
      ),
    )),
    parenthesized_type: $ => seq('(', $._type, ')'),
    static_arguments: $ => seq('[', commaSep1(choice(
      $._type,
      $.integer,
      alias($.static_keyword_argument, $.keyword_argument),
    )), ']'),
    static_keyword_argument: $ => seq(
      field('name', $.identifier),
      '=',
      field('value', $._option_value),
    ),
    index_arguments: $ => seq('(', commaSep1($._index_term), ')'),
    _index_term: $ => choice(
      $.identifier,
      $.integer,
      alias($.index_term_application, $.index_application),
      alias($.index_term_list, $.list),
    ),
    index_term_application: $ => seq(
      field('name', $.identifier),
      '(',
      commaSep1($._index_term),
      ')',
    ),
    index_term_list: $ => seq('[', optional(commaSep1($._index_term)), ']'),

    telescope: $ => seq('[', commaSep1($.binder), ']'),
    index_telescope: $ => seq('(', commaSep1($.binder), ')'),
    binder: $ => seq(field('name', $.identifier), ':', field('sort', $.sort)),
    sort: $ => seq(
      field('name', $.identifier),
      optional(seq('[', field('size', choice($.integer, $.identifier)), ']')),
    ),
    value_parameters: $ => seq('(', optional(commaSep1($.value_parameter)), ')'),
    value_parameter: $ => seq(field('name', $.identifier), ':', field('type', $._type)),
    effect_ref: $ => seq(
      field('name', $.identifier),
      optional(field('static_arguments', $.static_arguments)),
    ),
    effect_row: $ => seq('!', '{', optional(choice(
      seq($._name_list, optional($._row_tail)),
      $._row_tail,
    )), '}'),
    _row_tail: $ => seq(
      '|',
      field('tail', $.identifier),
      optional(seq('lacks', commaSep1(field('lacks', $.identifier)))),
    ),

    // ------------------------------------------ other declarations (generic)

    index_declaration: $ => seq(
      'index',
      field('name', $.identifier),
      '=',
      $.index_constructor,
      repeat(seq('|', $.index_constructor)),
      $._newline,
    ),
    index_constructor: $ => seq(
      field('name', $.identifier),
      optional(seq('(', $._name_list, ')')),
    ),

    family_declaration: $ => seq(
      'family',
      field('name', $.identifier),
      optional(field('static_parameters', $.telescope)),
      optional(field('index_parameters', $.index_telescope)),
      ':',
      field('kind', $.identifier),
      choice($._newline, field('body', alias($._family_block, $.block))),
    ),
    _family_block: $ => seq($._indent, repeat1($.constructor_declaration), $._dedent),
    constructor_declaration: $ => seq(
      'constructor',
      field('name', $.identifier),
      optional(field('static_parameters', $.telescope)),
      ':',
      field('type', $._type),
      $._newline,
    ),

    effect_declaration: $ => seq(
      'effect',
      field('name', $.identifier),
      optional(field('static_parameters', $.telescope)),
      choice($._newline, field('body', alias($._effect_block, $.block))),
    ),
    _effect_block: $ => seq($._indent, repeat1($.operation_declaration), $._dedent),
    operation_declaration: $ => seq(
      field('name', $.identifier),
      optional(field('static_parameters', $.telescope)),
      ':',
      field('type', $._type),
      $._newline,
    ),

    instance_declaration: $ => seq(
      'instance',
      field('name', $.identifier),
      ':',
      field('effect', $.effect_ref),
      $._newline,
    ),

    handler_declaration: $ => seq(
      'handler',
      field('name', $.identifier),
      optional(field('static_parameters', $.telescope)),
      'for',
      field('effect', $.effect_ref),
      ':',
      field('input', choice($.product_type, $._type_atom)),
      '->',
      field('output', $._type),
      optional(field('static_arguments', $.static_arguments)),
      choice($._newline, field('body', alias($._handler_block, $.block))),
    ),
    _handler_block: $ => seq(
      $._indent,
      repeat1(choice($.return_clause, $.operation_clause)),
      $._dedent,
    ),
    return_clause: $ => seq(
      'return',
      field('value', $.local),
      '=>',
      $._computation_body,
    ),
    operation_clause: $ => seq(
      field('operation', $.identifier),
      optional(field('static_parameters', $.telescope)),
      optional(field('parameters', $.clause_parameters)),
      'resumes',
      field('grade', choice($.integer, $.identifier)),
      optional('=>'),
      $._computation_body,
    ),
    clause_parameters: $ => seq('(', optional(commaSep1($.local)), ')'),
    local: $ => seq(field('name', $.identifier), optional(seq(':', field('type', $._type)))),

    composition_declaration: $ => seq(
      'composition',
      field('name', $.identifier),
      optional(choice(
        field('options', $.options),
        seq('as', field('algebra', $.identifier)),
      )),
      choice($._newline, field('body', alias($._composition_block, $.block))),
    ),
    _composition_block: $ => seq($._indent, repeat1($.composition_rule), $._dedent),
    composition_rule: $ => seq(
      field('name', $.identifier),
      optional(seq('(', $._name_list, ')')),
      '=',
      field('value', $._arithmetic),
      $._newline,
    ),

    category_declaration: $ => seq('category', $._name_list, $._newline),

    rule_declaration: $ => seq(
      'rule',
      field('name', $.identifier),
      '(',
      $._name_list,
      ')',
      ':',
      $._premises,
      $.entails,
      field('conclusion', $._object_expression),
      $._newline,
    ),
    _premises: $ => commaSep1Strict(field('premise', $._object_expression)),
    entails: _ => choice('|-', '\u22a2', '=>'),

    schema_declaration: $ => seq(
      'schema',
      field('name', $.identifier),
      choice(
        seq('(', commaSep1($.schema_parameter), ')'),
        seq('[', commaSep1($.schema_parameter), ']'), // quivers 0.1 - 0.10
      ),
      ':',
      field('domain', $._object_expression),
      '->',
      field('codomain', $._object_expression),
      $._newline,
    ),
    schema_parameter: $ => seq($._name_list, ':', field('type', $._object_expression)),

    bundle_declaration: $ => seq(
      'bundle',
      field('name', $.identifier),
      choice(':', '='),
      '[',
      optional($._name_list),
      ']',
      $._newline,
    ),

    contraction_declaration: $ => seq(
      'contraction',
      field('name', $.identifier),
      '(',
      commaSep1($.contraction_input),
      ')',
      ':',
      field('domain', $._object_expression),
      '->',
      field('codomain', $._object_expression),
      optional(field('options', $.options)),
      $._newline,
    ),
    contraction_input: $ => seq(
      field('name', $.identifier),
      ':',
      field('domain', $._object_expression),
      '->',
      field('codomain', $._object_expression),
    ),

    deduction_declaration: $ => seq(
      'deduction',
      field('name', $.identifier),
      ':',
      field('domain', $._object_expression),
      '->',
      field('codomain', $._object_expression),
      optional(field('options', $.options)),
      choice(
        $._newline,
        field('body', alias($._deduction_block, $.block)),
        // quivers 0.5 - 0.10: a braced block, which qvr does not read
        seq(field('body', $.token_block), $._newline),
      ),
    ),
    _deduction_block: $ => seq(
      $._indent,
      repeat1(choice(
        $.atoms_declaration,
        $.binders_declaration,
        $.deduction_rule,
        $.lexicon_declaration,
      )),
      $._dedent,
    ),
    atoms_declaration: $ => seq('atoms', $._name_list, $._newline),
    binders_declaration: $ => seq('binders', $._name_list, $._newline),
    deduction_rule: $ => seq(
      'rule',
      field('name', $.identifier),
      ':',
      $._premises,
      $.entails,
      field('conclusion', $._object_expression),
      optional(field('pragma', $.line_pragma)),
      $._newline,
    ),
    lexicon_declaration: $ => seq(
      'lexicon',
      choice(
        seq('from', field('file', $.string), optional(field('options', $.options)), $._newline),
        $._newline,
        field('body', alias($._lexicon_block, $.block)),
      ),
    ),
    _lexicon_block: $ => seq($._indent, repeat1($.lexicon_entry), $._dedent),
    lexicon_entry: $ => seq(
      commaSep1Strict(field('word', $.string)),
      ':',
      field('category', choice('*', $.enum_set, $._object_expression)),
      '=',
      field('value', $._arithmetic),
      optional(choice(
        field('pragma', $.line_pragma),
        seq('@', field('weight', $.identifier)),
      )),
      $._newline,
    ),
    line_pragma: $ => seq('#[', commaSep1Strict($.pragma_entry), ']'),

    // a braced block of quivers 0.5 - 0.10, kept as tokens
    token_block: $ => seq('{', repeat($._token), '}'),
    _token: $ => choice(
      $.token_block,
      $.identifier,
      $.integer,
      $.float,
      $.string,
      '(', ')', '[', ']', ',', ':', '=', '->', '<-', '|-', '\u22a2', '=>', '|->', '|', '*',
      '+', '-', '/', '\\', '~', '@', '.', '!', '%', '<', '>', '<=', '>=', '==', '!=',
      '&&', '||', '--', '#[', '#![', ...COMPOSE_OPERATORS,
    ),

    signature_declaration: $ => seq(
      'signature',
      field('name', $.identifier),
      optional(seq('(', $._name_list, ')')),
      choice($._newline, field('body', alias($._signature_block, $.block))),
    ),
    _signature_block: $ => seq($._indent, repeat1($.signature_section), $._dedent),
    signature_section: $ => seq(
      field('kind', choice('sorts', 'constructors', 'binders', 'vertex_kinds', 'edge_kinds')),
      choice($._newline, field('body', alias($._signature_entries, $.block))),
    ),
    _signature_entries: $ => seq(
      $._indent,
      repeat1(choice($.sort_declaration, $.constructor_signature, $.binder_signature)),
      $._dedent,
    ),
    sort_declaration: $ => seq(
      field('name', $.identifier),
      ':',
      field('kind', choice('object', 'index', $.identifier)),
      optional(field('options', $.options)),
      $._newline,
    ),
    constructor_signature: $ => seq(
      field('name', $.identifier),
      ':',
      optional(commaSep1(field('argument', $.identifier))),
      field('arrow', choice('->', '--')),
      field('result', $.identifier),
      $._newline,
    ),
    binder_signature: $ => seq(
      field('name', $.identifier),
      ':',
      'binds',
      '(',
      commaSep1($.bound_variable),
      ')',
      'in',
      '(',
      commaSep1($.scoped_argument),
      ')',
      '->',
      field('result', $.identifier),
      $._newline,
    ),
    bound_variable: $ => seq(
      field('name', $.identifier),
      ':',
      field('sort', $.identifier),
      optional(seq(':', $.identifier, ':', $.identifier)),
    ),
    scoped_argument: $ => seq(field('name', $.identifier), ':', field('sort', $.identifier)),

    encoder_declaration: $ => seq(
      'encoder',
      field('name', $.identifier),
      ':',
      field('signature', $.identifier),
      optional(seq('(', $._name_list, ')')),
      optional(field('options', $.options)),
      choice($._newline, field('body', alias($._encoder_block, $.block))),
    ),
    _encoder_block: $ => seq(
      $._indent,
      repeat1(choice(
        $.dim_declaration,
        $.iterations_declaration,
        $.readout_rule,
        $.operation_rule,
        $.init_rule,
        $.message_rule,
        $.var_init_rule,
      )),
      $._dedent,
    ),
    dim_declaration: $ => seq(
      'dim',
      field('name', $.identifier),
      '=',
      field('value', $.integer),
      $._newline,
    ),
    iterations_declaration: $ => seq('iterations', field('value', $.integer), $._newline),
    readout_rule: $ => seq('readout', '|->', field('value', $._arithmetic), $._newline),
    operation_rule: $ => seq(
      optional('op'),
      field('name', $.identifier),
      optional(seq('(', $._name_list, ')')),
      optional(seq(field('mode', choice('recurrent', 'attention')), field('cell', $.identifier))),
      '|->',
      field('value', $._arithmetic),
      $._newline,
    ),
    init_rule: $ => seq(
      'init',
      field('name', $.identifier),
      '(',
      field('variable', $.identifier),
      ')',
      '|->',
      field('value', $._arithmetic),
      $._newline,
    ),
    message_rule: $ => seq(
      field('kind', choice('message', 'update')),
      '[',
      field('name', $.identifier),
      ']',
      '(',
      $.identifier,
      ',',
      $.identifier,
      ')',
      '|->',
      field('value', $._arithmetic),
      $._newline,
    ),
    var_init_rule: $ => seq(
      'var_init',
      field('name', $.identifier),
      optional(seq('from', $.identifier, optional(seq('as', $.identifier)))),
      '|->',
      field('value', $._arithmetic),
      $._newline,
    ),

    decoder_declaration: $ => seq(
      'decoder',
      field('name', $.identifier),
      choice(':', 'over'), // `over`: quivers 0.11 - 0.14
      field('signature', $.identifier),
      optional(seq('(', $._name_list, ')')),
      optional(field('options', $.options)),
      choice($._newline, field('body', alias($._decoder_block, $.block))),
    ),
    _decoder_block: $ => seq(
      $._indent,
      repeat1(choice($.dim_declaration, $.decoder_rule)),
      $._dedent,
    ),
    decoder_rule: $ => seq(
      choice(
        seq(
          field('kind', choice('structure', 'primitive', 'factor', 'binder_select')),
          '(',
          field('name', $.identifier),
          ')',
          '|->',
          field('value', $._arithmetic),
        ),
        seq(field('kind', 'body'), '|->', field('value', $.identifier)),
      ),
      $._newline,
    ),

    loss_declaration: $ => seq(
      'loss',
      field('name', $.identifier),
      optional(field('options', $.options)),
      choice($._newline, field('body', alias($._loss_block, $.block))),
    ),
    _loss_block: $ => seq($._indent, repeat1($.loss_term), $._dedent),
    loss_term: $ => seq(field('value', $._arithmetic), $._newline),

    // `#[key = value]` and `#![...]` at the top level
    pragma: $ => seq(choice('#[', '#!['), commaSep1Strict($.pragma_entry), ']', $._newline),
    pragma_entry: $ => seq(
      field('key', $.identifier),
      optional(seq('=', field('value', $._option_value))),
    ),

    // ----------------------------------------- computation lines (0.19 on)

    _computation_body: $ => choice(
      $._newline,
      field('body', alias($._computation_block, $.block)),
    ),
    _computation_block: $ => seq($._indent, repeat1($._computation), $._dedent),
    _computation: $ => choice(
      $.let_computation,
      $.bind_computation,
      $.do_computation,
      $.return_computation,
      $.handle_computation,
      $.with_instance_computation,
      $.case_computation,
      $.if_computation,
      $.else_computation,
    ),
    let_computation: $ => seq(
      'let',
      field('binding', $.local),
      '=',
      field('value', $._value),
      $._computation_body,
    ),
    bind_computation: $ => seq(
      'let',
      field('binding', $.local),
      '<-',
      field('value', $._inline_computation),
      $._newline,
    ),
    do_computation: $ => seq(field('value', $._inline_computation), $._newline),
    return_computation: $ => seq('return', field('value', $._value), $._newline),
    handle_computation: $ => seq(
      'handle',
      field('instance', $.identifier),
      'with',
      field('handler', $.identifier),
      optional(field('static_arguments', $.static_arguments)),
      'in',
      $._computation_body,
    ),
    with_instance_computation: $ => seq(
      'with',
      'instance',
      field('name', $.identifier),
      ':',
      field('effect', $.effect_ref),
      'in',
      $._computation_body,
    ),
    case_computation: $ => seq(
      'case',
      field('value', $._value),
      'motive',
      optional(field('index_parameters', $.index_telescope)),
      '=>',
      field('type', $._type),
      choice($._newline, field('body', alias($._case_block, $.block))),
    ),
    _case_block: $ => seq($._indent, repeat1($.case_branch), $._dedent),
    case_branch: $ => seq(
      field('constructor', $.identifier),
      optional(field('static_arguments', $.static_arguments)),
      optional(field('parameters', $.clause_parameters)),
      '=>',
      $._computation_body,
    ),
    if_computation: $ => seq('if', field('condition', $._arithmetic), 'then', $._computation_body),
    else_computation: $ => seq('else', $._computation_body),

    _inline_computation: $ => choice($.perform, $.computation_call, $.resume),
    perform: $ => seq(
      'perform',
      field('instance', $.identifier),
      '.',
      field('operation', $.identifier),
      optional(field('static_arguments', $.static_arguments)),
      field('arguments', alias($.call_step_arguments, $.arguments)),
    ),
    computation_call: $ => seq(
      field('function', $.identifier),
      optional(field('static_arguments', $.static_arguments)),
      field('arguments', alias($.call_step_arguments, $.arguments)),
    ),
    resume: $ => seq('resume', '(', optional(field('value', $._value)), ')'),
    _value: $ => choice($._arithmetic, $.construct),
    construct: $ => seq(
      'construct',
      field('constructor', $.identifier),
      optional(field('static_arguments', $.static_arguments)),
      field('arguments', alias($.call_step_arguments, $.arguments)),
      'as',
      field('type', $._type),
    ),

    // ----------------------------------------------- quivers 0.1 - 0.10

    // `type X = Euclidean 64`
    type_declaration: $ => seq(
      'type',
      field('name', $.identifier),
      '=',
      field('constructor', $.identifier),
      field('size', $.integer),
      $._newline,
    ),
    output_declaration: $ => seq('output', field('name', $.identifier), $._newline),
    quantale_declaration: $ => seq('quantale', field('name', $.identifier), $._newline),
    // `kernel f : A -> B ~ F`, `continuous head[4] : A -> B [..] over (a, b)`
    role_declaration: $ => seq(
      field('role', alias(choice(...ROLE_WORDS), $.role)),
      field('name', $.identifier),
      optional(seq('[', field('replicas', $.integer), ']')),
      ':',
      field('domain', $._object_expression),
      '->',
      field('codomain', $._object_expression),
      repeat(choice(field('options', $.options), field('init', $.initializer), field('axes', $.axes))),
      $._newline,
    ),
  },
});
