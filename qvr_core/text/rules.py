"""The registry of diagnostic rules: one declaration per code, the only place codes are written.

Call sites raise a diagnostic through its rule (`ctx.report(rules.UNDEFINED_NAME, ...)`,
`make(rules.SYNTAX_ERROR, ...)`); a test fails on a bare code string anywhere
else in `qvr_core` or `qvr_lsp`. `docs/diagnostics.md` is generated from these
entries and the example files they name (`qvr explain --markdown`).

Adding a code is one `Rule` below and its example file `examples/errors/QVRnnn_*.qvr`
(which must trigger exactly that code); see docs/diagnostics.md, "Adding a diagnostic".
Codes are grouped by hundreds: 0 syntax, 1 names, 2 types and combinators,
3 roles, options and families, 4 programs, 5 exports.
"""

from __future__ import annotations

from qvr_core.text.diagnostics import Rule, Severity

ERROR = Severity.ERROR
WARNING = Severity.WARNING
HINT = Severity.HINT
INFORMATION = Severity.INFORMATION

# ------------------------------------------------------------------- 0: syntax

INTERNAL_ERROR = Rule(
    code="QVR000",
    name="internal-error",
    severity=ERROR,
    summary="a bug in qvr: the parser or checker failed on this text",
    explanation=(
        "The parser or the checker raised an exception. Instead of crashing the command "
        "line or the language server, the failure is reported on the first line of the "
        "file. No program text is wrong because of it: it is qvr's mistake."
    ),
    fixes=("Report it with the file that causes it.",),
    example=None,
)

SYNTAX_ERROR = Rule(
    code="QVR001",
    name="syntax-error",
    severity=ERROR,
    summary="the text does not parse: what was found, and what was expected",
    explanation=(
        "A line does not follow the grammar of QVR. The parser recovers at the next "
        "declaration or step, so one mistake gives one diagnostic and the rest of the file "
        "is still checked. While a file has syntax errors, unused-declaration hints and "
        "renames are held back: the line that did not parse may be the one that uses a name."
    ),
    fixes=("Write what the message says was expected at the marked place.",),
    example="QVR001_syntax_error.qvr",
)

OLDER_SURFACE = Rule(
    code="QVR010",
    name="older-surface",
    severity=WARNING,
    summary="a construct of an older surface of the language (quivers 0.1-0.10)",
    explanation=(
        "quivers changed its syntax over its releases; since 0.11 a declaration starts with "
        "its kind (`object`, `morphism`, `program`, ...), programs bind with `sample`, "
        "`observe` or `let`, and braces are gone. qvr still reads the older surfaces so a "
        "file written for them is understood, and says once per construct which era it "
        "belongs to. quivers 0.11 and later do not accept it."
    ),
    fixes=("Rewrite the construct in the syntax of quivers 0.11 and later.",),
    example="QVR010_older_surface.qvr",
    quick_fixes=("Rewrite in the syntax of quivers 0.11 and later, where the rewrite is known.",),
)

NOT_CHECKED = Rule(
    code="QVR011",
    name="not-checked",
    severity=INFORMATION,
    summary="a declaration the checker does not type yet: its names are checked, not its types",
    explanation=(
        "qvr parses every construct of quivers 0.11 and later, but its checker types only "
        "part of the language so far. For a declaration it does not type (a `deduction` "
        "whose lexicon is read from a file, a chart `parser` over morphism rules, an effect "
        "over types other than Unit, Bool, Int, Real and String, ...) its names are declared "
        "and its uses recorded, so hover, go to definition and rename work and no false "
        "'undefined' follows; this information diagnostic says, once per declaration, that "
        "no type errors are looked for in it."
    ),
    fixes=("Nothing to fix: it is a limit of qvr, not a mistake in the file.",),
    example="QVR011_not_checked.qvr",
)

QVR_EXTENSION = Rule(
    code="QVR012",
    name="qvr-extension",
    severity=HINT,
    summary="syntax qvr accepts but no quivers grammar does (an error under --strict)",
    explanation=(
        "`let (a, b) = value` destructures a tuple in a program. It is qvr's own extension: "
        "quivers' grammars do not accept it, so a file that uses it will not load in "
        "quivers. It is a hint by default and an error under `--strict`."
    ),
    fixes=("Use quivers' tuple site instead: `sample (a, b) <- f(x)`.",),
    example="QVR012_extension.qvr",
)

# -------------------------------------------------------------------- 1: names

UNDEFINED_NAME = Rule(
    code="QVR101",
    name="undefined-name",
    severity=ERROR,
    summary="a name that no declaration defines",
    explanation=(
        "Every object, morphism, let and program must be declared somewhere in the file "
        "(in any order; QVR has no imports). A name that is close to a declared one is "
        "most likely a typo: the message suggests it, and the suggested name is not also "
        "reported as unused."
    ),
    fixes=("Correct the spelling.", "Declare the missing name."),
    example="QVR101_undefined_name.qvr",
    quick_fixes=("Change to each close name (the closest is preferred).",),
)

DUPLICATE_DECLARATION = Rule(
    code="QVR102",
    name="duplicate-declaration",
    severity=ERROR,
    summary="a second top-level declaration of a name",
    explanation=(
        "Objects, morphisms, lets and programs share one namespace. The first declaration "
        "of a name counts and the later one is ignored, so uses may not mean what the "
        "later text says. The related location points at the first declaration."
    ),
    fixes=("Rename one of the two declarations, or delete the one you do not want.",),
    example="QVR102_duplicate.qvr",
)

UNUSED_DECLARATION = Rule(
    code="QVR103",
    name="unused-declaration",
    severity=HINT,
    summary="a declaration or program value that nothing uses",
    explanation=(
        "A declaration nothing refers to, or a value a program binds and never reads, is "
        "dead text (shown faded in editors). Program values whose name starts with `_` "
        "are never reported, and programs are not reported while the file has no export."
    ),
    fixes=("Use it, delete it, or (for a program value) start its name with `_`.",),
    example="QVR103_unused.qvr",
    unnecessary=True,
)

WRONG_KIND = Rule(
    code="QVR104",
    name="wrong-kind",
    severity=ERROR,
    summary="a name or literal of another kind than the place needs (an object for a morphism)",
    explanation=(
        "Types are built from objects, expressions from morphisms, and program steps "
        "from values. A name that is declared, but as another kind of thing than the "
        "place needs (an object where a morphism goes, a morphism used as a program "
        "value), or a literal where a name is needed (`fan(f, 3)`, `scan(1)`), is "
        "reported with what it is. So is a family that only a morphism can have, drawn "
        "in a step (`GP`, whose covariance is evaluated at a morphism's input), and an "
        "improper prior (`Flat`, `HalfFlat`) on an `observe` or `marginalize` step, whose "
        "values are data or summed out: only a `sample` step's latent may have one."
    ),
    fixes=(
        "Use a name of the kind the place needs.",
        "To pass a value of an object through unchanged, write `identity(Object)`.",
        "To use what a morphism produces in a program, bind it first: `sample x <- f(...)`.",
    ),
    example="QVR104_wrong_kind.qvr",
)

CYCLIC_DEFINITION = Rule(
    code="QVR105",
    name="cyclic-definition",
    severity=ERROR,
    summary="an object, let or program defined in terms of itself",
    explanation=(
        "An alias object, a let or a program that refers to itself, directly or through "
        "others, has no type. The message spells out the loop (`a -> b -> a`)."
    ),
    fixes=("Break the loop: one of the declarations in it must not use the next.",),
    example="QVR105_cyclic_definition.qvr",
)

# ----------------------------------------------------- 2: types and combinators

DIMENSION_MISMATCH = Rule(
    code="QVR201",
    name="dimension-mismatch",
    severity=ERROR,
    summary="what one side produces does not fit what the other expects",
    explanation=(
        "At a composition `f >> g` (or where a program feeds a value to a morphism) the "
        "codomain of `f` must be the domain of `g`: the same objects, or continuous values "
        "of the same total dimension (QVR203). The message shows both sides with their "
        "dimensions, and the related locations show where each object is declared."
    ),
    fixes=(
        "Change the dimension of the object on either side.",
        "Insert a projection morphism between the two sides.",
    ),
    example="QVR201_dimension_mismatch.qvr",
    quick_fixes=(
        "Change the declared dimension of the object on either side.",
        "Insert a projection morphism `project_to_X : A -> X [role=kernel, "
        "param_source=linear] ~ Deterministic` and its use.",
    ),
)

DISCRETE_CONTINUOUS = Rule(
    code="QVR202",
    name="discrete-continuous-mismatch",
    severity=ERROR,
    summary="a discrete value where a continuous one is expected, or the reverse",
    explanation=(
        "`FinSet N` values are discrete (an index); `Real`, `Positive`, `Unit` and "
        "`Simplex` values are continuous. A morphism that expects one cannot be given the "
        "other, and arithmetic needs continuous values."
    ),
    fixes=(
        "Embed a discrete value first (a morphism with `role=embed`).",
        "Sample a discrete value from a continuous one with a kernel (`~ Categorical`).",
    ),
    example="QVR202_discrete_continuous.qvr",
)

MATCHED_BY_DIMENSION = Rule(
    code="QVR203",
    name="matched-by-dimension",
    severity=HINT,
    summary="two different objects matched only because their dimensions are equal",
    explanation=(
        "Two continuous values of the same total dimension fit each other even when their "
        "objects differ (`Features` into `Hidden`, both `Real 128`). That is often "
        "intended, but it is also how a wiring mistake goes unnoticed, so it is a hint, "
        "and an error with `qvr check --strict` or the editor setting `qvr.strict`. "
        "Editors show both sides' dimensions as an inlay hint. The argument of a "
        "`contraction` call whose finite sets have its parameter's sizes but other names "
        "is matched the same way (quivers compares the sizes only)."
    ),
    fixes=("Use the same object on both sides, if they mean the same thing.",),
    example="QVR203_matched_by_dimension.qvr",
)

BAD_SCAN_CELL = Rule(
    code="QVR204",
    name="bad-scan-cell",
    severity=ERROR,
    summary="a scan cell that is not of the form `A * H -> H`",
    explanation=(
        "`scan(cell)` runs `cell` along a sequence, feeding each step's state to the next, "
        "so the cell must take an input and a state and return the next state: its "
        "codomain must be the trailing factors of its domain."
    ),
    fixes=("Give the cell the type `Input * State -> State`.",),
    example="QVR204_bad_scan_cell.qvr",
)

BAD_STACK_BODY = Rule(
    code="QVR205",
    name="bad-stack-body",
    severity=ERROR,
    summary="a `stack`/`repeat` body that is not `A -> A`, or a bad number of copies",
    explanation=(
        "`stack(body, n)` and `repeat(body, n)` chain `n` copies of `body`, so the body "
        "must map a type to itself, and `n` must be a positive whole number."
    ),
    fixes=("Use a body of type `A -> A` and a positive integer number of copies.",),
    example="QVR205_bad_stack_body.qvr",
)

FAN_DOMAINS = Rule(
    code="QVR206",
    name="fan-domains-differ",
    severity=ERROR,
    summary="the branches of a `fan` disagree on their domain",
    explanation=(
        "`fan(f, g, ...)` gives the same input to every branch and puts their outputs side "
        "by side, so every branch must take the same type."
    ),
    fixes=("Make every branch take the same type, or fan over a shared first stage.",),
    example="QVR206_fan_domains.qvr",
)

ATTENTION_MISMATCH = Rule(
    code="QVR211",
    name="attention-mismatch",
    severity=ERROR,
    summary="the query, key and value maps of `multihead` do not fit together",
    explanation=(
        "`multihead(query, key, value)` is multi-head scaled dot-product attention over a "
        "sequence: head i compares query_i of each position with key_i of every position, "
        "so the three arguments must be groups of one head count (`replicate=h`), the "
        "queries and keys must have one codomain (its dimension is d_k), and all three "
        "must read the sequence's element type."
    ),
    fixes=(
        "Declare the three maps with the same `replicate=` count.",
        "Give the query and key maps the same codomain object.",
    ),
    example="QVR211_attention_mismatch.qvr",
)

ARITHMETIC_DIMENSIONS = Rule(
    code="QVR207",
    name="arithmetic-dimensions",
    severity=ERROR,
    summary="arithmetic on values of different dimensions",
    explanation=(
        "`+`, `-`, `*`, `/`, `min` and `max` work element by element, so both operands "
        "need the same dimension, or one of them is a plain number."
    ),
    fixes=("Project one operand to the other's dimension with a morphism first.",),
    example="QVR207_arithmetic_dimensions.qvr",
)

SEQUENCE_MISMATCH = Rule(
    code="QVR208",
    name="sequence-mismatch",
    severity=ERROR,
    summary="a sequence (or a number) where a single value is needed, or the reverse",
    explanation=(
        "Sequences are lifted automatically where that is unambiguous: a morphism on single "
        "values meeting a sequence is applied per element. Some places cannot lift: `@` and "
        "multi-argument calls pair single values, arithmetic cannot mix a sequence with a "
        "single value, a morphism that takes a sequence needs one, a result cannot be a "
        "sequence of sequences, and a plain number is not a value of an object."
    ),
    fixes=(
        "Apply the pairing per element and `scan` afterwards.",
        "Give a morphism that takes a sequence the sequence itself.",
    ),
    example="QVR208_sequence_mismatch.qvr",
)

FACTORS_OUT_OF_ORDER = Rule(
    code="QVR209",
    name="factors-out-of-order",
    severity=ERROR,
    summary="the same factors in another order (`B * A` where `A * B` is expected)",
    explanation=(
        "A product's factors are columns side by side. Swapped factors have the same total "
        "dimension, but matching them would silently mix up the columns, so they are never "
        "matched by dimension."
    ),
    fixes=("Write the factors in the expected order (at the producer or the consumer).",),
    example="QVR209_factors_out_of_order.qvr",
)

SIMPLEX_TOO_SMALL = Rule(
    code="QVR210",
    name="simplex-too-small",
    severity=ERROR,
    summary="a `Simplex` of fewer than 2 entries",
    explanation=(
        "A `Simplex N` value is a probability vector of `N` entries; with fewer than two "
        "there is nothing to choose between."
    ),
    fixes=("Use `Simplex 2` or more.",),
    example="QVR210_simplex_too_small.qvr",
)

OBJECT_SIZE = Rule(
    code="QVR212",
    name="object-size",
    severity=ERROR,
    summary="a size that is no positive whole number or finite object (`Real 0`, `Real Space`)",
    explanation=(
        "A constructor's size is a whole number of at least 1 or the name of a finite "
        "object declared in the file, which stands for its number of elements "
        "(`Real Vocab` has one dimension per word). `Real` multiplies several sizes into "
        "one (`Real 4 8` is R^32); every other constructor takes exactly one. A space such "
        "as `Real 3` has no number of elements to size by, and a size beyond what a tensor "
        "axis holds cannot be allocated."
    ),
    fixes=(
        "Write a whole number, or name a `FinSet` object.",
        "Give the constructor one size, or use `Real` to multiply sizes.",
    ),
    example="QVR212_object_size.qvr",
)

# ----------------------------------------------- 3: roles, options, families

MISSING_ROLE = Rule(
    code="QVR301",
    name="missing-role",
    severity=ERROR,
    summary="a morphism without a `role` that cannot be a kernel (no family, a space side)",
    explanation=(
        "The role says what a morphism is at run time: `embed` (a lookup table from a "
        "FinSet), `kernel` (a distribution over the codomain), `latent` (a matrix "
        "between finite sets). Without a role a morphism is a kernel, as in quivers "
        "0.25.2: a parametric one with `~ Family`, a table between finite sets without. "
        "A morphism with a continuous side and neither a role nor a family is none of "
        "these, and quivers refuses it too."
    ),
    fixes=("Add `[role=...]`; the quick fix guesses the role from the types.",),
    example="QVR301_missing_role.qvr",
    quick_fixes=("Add the role guessed from the domain and codomain.",),
)

FAMILY_CODOMAIN = Rule(
    code="QVR302",
    name="family-codomain-mismatch",
    severity=ERROR,
    summary="a kernel's family does not fit its codomain (Categorical on a Real)",
    explanation=(
        "A kernel's family is the distribution of its output, so it must have the "
        "codomain's support: `Categorical` a FinSet, `Normal` a Real, `Dirichlet` a "
        "Simplex, and so on. A family whose one draw is a vector or a matrix "
        "(`MultivariateNormal`, `LowRankMVN`, `Wishart`, `InverseWishart`, `MatrixNormal` "
        "over two finite sets, `GP`) fills one Real object, a matrix row by row: a K x K "
        "matrix needs K * K numbers, a matrix over `over=[Row, Col]` |Row| * |Col|, and a "
        "GP's input splits into one location per number of its codomain."
    ),
    fixes=("Use a family that fits the codomain, or change the codomain.",),
    example="QVR302_wrong_family.qvr",
    quick_fixes=("Change the family to one that fits the codomain.",),
)

UNKNOWN_OPTION = Rule(
    code="QVR303",
    name="unknown-option",
    severity=ERROR,
    summary="an option or keyword argument that does not exist",
    explanation=(
        "Morphisms accept a fixed set of options (`role`, `scale`, ...), `scan` accepts "
        "`reverse=`, program steps accept `over`, `iid_over`, `via` and `reduction` (as "
        "quivers documents them) and qvr's `constraint`, and other calls take no keyword "
        "arguments. An unknown key is most likely a typo: the message suggests the "
        "closest ones."
    ),
    fixes=("Correct the spelling, or remove the option.",),
    example="QVR303_unknown_option.qvr",
    quick_fixes=("Change to each close option name.",),
)

INVALID_OPTION_VALUE = Rule(
    code="QVR304",
    name="invalid-option-value",
    severity=ERROR,
    summary="an option with a value it cannot take (an unknown role, a negative scale, ...)",
    explanation=(
        "Each option takes values of one kind: a role from `embed`, `kernel`, `latent`; "
        "`param_source` from `mlp`, `linear`; positive numbers for `scale`, whole numbers "
        "for `replicate`, `hidden_dim` and `rank` (a rank below the smaller side of the "
        "matrix it factorises); `true` or `false` for `reverse`. The options a family "
        "reads itself take its values: a GP's `kernel` is `rbf`, `matern52` or `linear`, "
        "its `length_scale` and `amplitude` positive numbers, a MatrixNormal's `over` two "
        "finite sets. A step's `constraint` is `ordered` or `positive_ordered` (Stan's "
        "`ordered[K]` and `positive_ordered[K]`)."
    ),
    fixes=("Give a value of the kind the message names.",),
    example="QVR304_invalid_option_value.qvr",
    quick_fixes=("Change a misspelt role to each close role.",),
)

DUPLICATE_OPTION = Rule(
    code="QVR305",
    name="duplicate-option",
    severity=ERROR,
    summary="an option given twice on one morphism",
    explanation=(
        "Each option is given at most once; which of two values was meant is not clear. "
        "The related location points at the first one."
    ),
    fixes=("Remove one of them.",),
    example="QVR305_duplicate_option.qvr",
    quick_fixes=("Remove the repeated option.",),
)

OPTION_NOT_APPLICABLE = Rule(
    code="QVR306",
    name="option-not-applicable",
    severity=ERROR,
    summary="an option that means nothing for this morphism (`scale` on a Categorical, ...)",
    explanation=(
        "Some options apply only together with others: `scale`, `param_source`, "
        "`hidden_dim` and `rank` configure kernels; `scale` fixes a Normal's standard "
        "deviation; `rank` factorises a `param_source=linear` network (on a `LowRankMVN` "
        "kernel it is the rank of the covariance factor, as quivers reads it) and "
        "`hidden_dim` sizes an `mlp` one; a kernel without a network (every parameter "
        "given, or a `GP`'s learned own) takes none of them. Given elsewhere they would be "
        "silently ignored. A step's `constraint=ordered` orders a latent's numbers along its "
        "last plate: it applies to a `sample` of a continuous number family whose support "
        "holds the set (the reals; for `positive_ordered` the positive numbers too), on a "
        "plate of more than one entry."
    ),
    fixes=("Remove the option, or add what it applies to.",),
    example="QVR306_option_not_applicable.qvr",
)

ROLE_TYPE_MISMATCH = Rule(
    code="QVR307",
    name="role-type-mismatch",
    severity=ERROR,
    summary="a morphism's types do not fit its role",
    explanation=(
        "An `embed` morphism is a lookup table: one FinSet domain, a continuous codomain. "
        "A `latent` morphism is a stochastic matrix between finite sets: FinSet on both "
        "sides."
    ),
    fixes=("Change the role (`kernel` fits any types), or the types.",),
    example="QVR307_role_type_mismatch.qvr",
)

MISSING_FAMILY = Rule(
    code="QVR308",
    name="missing-family",
    severity=ERROR,
    summary="a kernel morphism with a continuous side and no `~ Family`",
    explanation=(
        "A kernel is a distribution over its codomain given its domain; the family says "
        "which distribution. Only between finite sets may it go without one: it is then "
        "a table whose rows are categorical distributions (quivers' `StochasticMorphism`)."
    ),
    fixes=("Add `~ Family` with a family that fits the codomain.",),
    example="QVR308_missing_family.qvr",
    quick_fixes=("Add a family that fits the codomain.",),
)

UNEXPECTED_FAMILY = Rule(
    code="QVR309",
    name="unexpected-family",
    severity=ERROR,
    summary="a family on a morphism whose role takes none (an `embed`, a `discretize`)",
    explanation=(
        "Only kernels are distributions with a family; an embedding is a table. A latent "
        "morphism's `~ Family` is a prior on its tensor, which quivers checks and does not "
        "use (QVR317)."
    ),
    fixes=("Remove `~ Family`, or make the morphism a kernel.",),
    example="QVR309_unexpected_family.qvr",
)

GROUP_AS_MORPHISM = Rule(
    code="QVR310",
    name="group-as-morphism",
    severity=ERROR,
    summary="a `replicate=k` group used where one morphism is needed",
    explanation=(
        "A `replicate=k` morphism `head` declares the copies `head_0` .. `head_{k-1}`; the "
        "bare name is the group, which is valid only as the single argument of `fan(head)`."
    ),
    fixes=("Use `fan(head)` to run every copy, or one copy such as `head_0`.",),
    example="QVR310_group_as_morphism.qvr",
)

FAMILY_ARGUMENTS = Rule(
    code="QVR311",
    name="family-arguments",
    severity=ERROR,
    summary="a family step or morphism family whose arguments do not match its parameters",
    explanation=(
        "`sample x <- Family(args)` binds its arguments to the family's parameters as the "
        "registry of builtins lists them: positional arguments in order, keywords by name "
        "(`Normal(loc, scale)`, `HalfCauchy(scale=5.0)`). Too many arguments, an unknown "
        "keyword, one given twice or a required one missing leaves the draw undefined. A "
        "vector parameter may have its entries spread (`Dirichlet(1.0, 2.0, 3.0)`). "
        "`morphism k : A -> B ~ Family(args)` binds them the same way and fixes those "
        "parameters (as does an option named after one, `[temperature=0.5]`); the ones left "
        "out come from the morphism's parameter network, which gives numbers, and the vector "
        "of a family whose draw is one vector, but never a parameter that bounds the draws "
        "(a Pareto's `scale`): give that one. A family without parameters (the improper "
        "priors `Flat` and `HalfFlat`) is written bare, `sample b <- Flat`, with no "
        "parentheses; a family with parameters written bare (`sample b <- Normal`) is no "
        "draw until its arguments are given."
    ),
    fixes=("Give the parameters the message shows, by position or by name.",),
    example="QVR311_family_arguments.qvr",
)

ARGUMENT_CONSTRAINT = Rule(
    code="QVR312",
    name="argument-outside-constraint",
    severity=ERROR,
    summary="a number outside the values its family parameter takes (`HalfCauchy(-1.0)`)",
    explanation=(
        "Each family parameter takes values of one set: a scale is positive, a probability "
        "lies in [0, 1], a count is a whole number, `Uniform`'s `low` is below its `high`. "
        "A literal outside that set makes the distribution invalid, which quivers would "
        "only find when the model runs."
    ),
    fixes=("Write a value inside the set the message names.",),
    example="QVR312_argument_constraint.qvr",
)

ARGUMENT_PLATE = Rule(
    code="QVR313",
    name="argument-plate-mismatch",
    severity=ERROR,
    summary="a family argument of the wrong size or over the wrong plate",
    explanation=(
        "A site written on a plate (`sample theta : School <- Normal(mu, tau)`) draws one "
        "value per index of the plate, so each argument is a number, a value over that "
        "plate (or the plates `iid_over` and `over` add), or a gather that picks one entry "
        "per index (`alpha[group]`). A value over another plate has no entry to pair with "
        "each draw. Likewise a vector argument has as many entries as a draw (`over=K` or "
        "the values of a marginalised coordinate say how many)."
    ),
    fixes=(
        "Index the argument so it has one entry per index of the site's plate.",
        "Put the step on the argument's plate, or give a vector of the right size.",
    ),
    example="QVR313_argument_plate.qvr",
)

FAMILY_SUPPORT = Rule(
    code="QVR314",
    name="family-support-object",
    severity=ERROR,
    summary="a discrete family on a continuous object (`observe y : Real 1 <- Poisson(..)`)",
    explanation=(
        "The continuous object written after `:` is the space a site's values lie in; a "
        "family drawing whole numbers or categories (Poisson, Bernoulli, Categorical, ...) "
        "has no values there. A finite set after `:` is a plate (one draw per element) and "
        "fits every family."
    ),
    fixes=("Use a continuous family, or write the finite set the values index.",),
    example="QVR314_family_support.qvr",
)

OPTION_WITHOUT_VALUE = Rule(
    code="QVR315",
    name="option-without-value",
    severity=WARNING,
    summary="a step option written as a flag (`[over]`), which gives it no value",
    explanation=(
        "Every option of a program step takes a value: `over=` and `iid_over=` name "
        "objects, `via=` a data name, `reduction=` a reduction. Written bare, as a flag, "
        "the key is one the step reads but no value comes with it; quivers' compiler "
        "accepts it and reads the step as if the option were not written, and so does "
        "qvr: the step runs without it. Most likely the value was left out."
    ),
    fixes=("Give the option its value (`over=Topic`), or remove it.",),
    example="QVR315_option_without_value.qvr",
    quick_fixes=("Remove the option.",),
)

LATENT_PRIOR = Rule(
    code="QVR317",
    name="latent-prior",
    severity=WARNING,
    summary="a prior on a latent morphism, which quivers checks and does not use",
    explanation=(
        "`morphism T : K -> K [role=latent, over=cod, iid=dom] ~ Dirichlet(alpha)` writes a "
        "prior on the latent's tensor. quivers 0.25.2 checks its axes (the sides written as "
        "one object, `dom` and `cod`, and every factor named; `over=` lists as many axes as "
        "a draw of the family has, and no axis is in both lists) and then builds the latent "
        "without it: the tensor is fitted as a point estimate, with no prior term and the "
        "prior's arguments never read. qvr does the same, and says so here, since a reader "
        "would expect the prior to shape the fit. Wrong axes are QVR304 (invalid option "
        "value)."
    ),
    fixes=(
        "Remove the prior, or write the model as a program whose steps draw the rows "
        "(`sample rows : K <- Dirichlet(alpha) [over=K, iid_over=K]`) and use them.",
    ),
    example="QVR317_latent_prior.qvr",
)

COMPOSITION_RULE = Rule(
    code="QVR316",
    name="composition-rule",
    severity=ERROR,
    summary=(
        "a `composition` or `contraction` declaration quivers refuses, or one qvr cannot "
        "give one meaning"
    ),
    explanation=(
        "`composition NAME [level=L]` chooses the algebra that enriches the file's morphisms. "
        "quivers' compiler refuses a registered rule that is not at the declared level "
        "(`material_impl` is a semigroupoid, not an algebra; no built-in rule is a "
        "`bilinear_form`), and an inline body without exactly the entries its level needs "
        "(`tensor_op(a, b)` and `join(t)` everywhere, `unit` and `zero` values at the "
        "algebra level, `negation(a)` and `meet(t)` optional there), written as functions "
        "or values as each entry is. quivers enriches each morphism over the rule declared "
        "above it (`product_fuzzy` when none is) and refuses `>>` between morphisms of two "
        "rules; qvr takes one rule for the whole file, so a second declaration, or a latent "
        "morphism declared above the declaration, is an error rather than a file whose "
        "morphisms would silently mean something else. A `contraction` names the rule it "
        "contracts under (`rule=`, required) and an einsum wiring, inferred from its typed "
        'signature or written (`wiring="ab, bc -> ac"`): quivers refuses an axis that is '
        "in one input only and neither in the output nor in `share=`, a repeated axis (a "
        "diagonal), a wiring whose inputs are not the parameters, and fails at every call "
        "when the letters do not fit the parameters' axes or the declared output; a call "
        "computes a relation, so it needs the file's composition rule declared."
    ),
    fixes=(
        "Declare the level the rule is at (`[level=semigroupoid]` for `material_impl`), or "
        "drop `[level=...]` (the permissive `rule` level).",
        "Give an inline body exactly the entries of its level.",
        "Keep one `composition` declaration, above the morphisms.",
        "Give a contraction `rule=NAME`, and an output type (or `share=`, or `wiring=`) "
        "that places every axis.",
    ),
    example="QVR316_composition_rule.qvr",
)

# ----------------------------------------------------------------- 4: programs

UNBOUND_VARIABLE = Rule(
    code="QVR401",
    name="unbound-variable",
    severity=ERROR,
    summary="a program uses a value it has not bound",
    explanation=(
        "Inside a program, values are the parameters, the sites (`sample`, `observe`) and "
        "local lets bound by earlier steps. A name that none of them binds is most likely a "
        "typo."
    ),
    fixes=("Correct the spelling, or bind the value in an earlier step.",),
    example="QVR401_unbound_variable.qvr",
    quick_fixes=("Change to each close value name.",),
)

REBOUND_VARIABLE = Rule(
    code="QVR402",
    name="rebound-variable",
    severity=ERROR,
    summary="a program binds a name that it already bound",
    explanation=(
        "Program values are bound once, so every use has one meaning. The related "
        "location points at the first binding."
    ),
    fixes=("Choose a new name for the second value.",),
    example="QVR402_rebound_variable.qvr",
)

MISPLACED_RETURN = Rule(
    code="QVR403",
    name="misplaced-return",
    severity=ERROR,
    summary="a program without exactly one `return` as its last step",
    explanation=(
        "A program ends with one `return`, which says what it produces; steps after it "
        "would never count, and a second return is ambiguous."
    ),
    fixes=("End the program with a single `return NAME`.",),
    example="QVR403_misplaced_return.qvr",
)

DECLARED_TYPE_MISMATCH = Rule(
    code="QVR404",
    name="declared-type-mismatch",
    severity=ERROR,
    summary="a return or observe does not have the type its program declares",
    explanation=(
        "The values a program returns, side by side, must match the codomain in its header, "
        "and `observe y : T <- f(...)` must produce a `T`. The written type is a promise "
        "that the rest of the model relies on."
    ),
    fixes=("Return (or observe) a value of the declared type, or change the declaration.",),
    example="QVR404_declared_type_mismatch.qvr",
)

UNPACKING_COUNT = Rule(
    code="QVR405",
    name="unpacking-count-mismatch",
    severity=ERROR,
    summary="a number of names that does not match the factors they unpack",
    explanation=(
        "`program p (a, b) : A * B -> C` names one parameter per factor of the domain, and "
        "`let (h, c) = state` one value per factor of `state`."
    ),
    fixes=("Name as many values as there are factors.",),
    example="QVR405_unpacking_count_mismatch.qvr",
)

ARGUMENT_COUNT = Rule(
    code="QVR406",
    name="argument-count",
    severity=ERROR,
    summary="a call with the wrong number of arguments",
    explanation=(
        "Combinators and builtins take a fixed number of arguments (`scan(cell)`, "
        "`stack(body, n)`, `tanh(x)`, `min(a, b)`); `fan` needs at least one branch, and "
        "a morphism applied in a program step needs at least one value."
    ),
    fixes=("Give the arguments the message shows.",),
    example="QVR406_argument_count.qvr",
)

ARGUMENT_NOT_A_NAME = Rule(
    code="QVR407",
    name="argument-not-a-name",
    severity=ERROR,
    summary="an expression as an argument of a program step, where a name is needed",
    explanation=(
        "The arguments of `sample x <- f(a, b)` are named values, so each site reads "
        "values the program has bound. The arguments of a `contraction` call are "
        "morphisms by name: quivers looks each up among the declared ones."
    ),
    fixes=("Bind the expression with `let` first and pass its name.",),
    example="QVR407_argument_not_a_name.qvr",
)

MORPHISM_CALL_IN_LET = Rule(
    code="QVR408",
    name="morphism-call-in-let",
    severity=ERROR,
    summary="a morphism applied to values in a let, which only a sample step can do",
    explanation=(
        "Applying a morphism draws from it, which is what `sample` and `observe` steps do. "
        "A top-level let composes morphisms without applying them (`f >> g`), and a let "
        "inside a program computes with arithmetic and the builtins only."
    ),
    fixes=(
        "In a program, apply it in a step: `sample y <- f(x)`.",
        "At the top level, compose: `let m = f >> g`.",
    ),
    example="QVR408_morphism_call_in_let.qvr",
)

INDEX_PLATE = Rule(
    code="QVR409",
    name="index-plate-mismatch",
    severity=ERROR,
    summary="a gather `theta[i]` whose index does not range over the plate it indexes",
    explanation=(
        "`theta[cls]` picks, for each value of `cls`, an entry of `theta` along its first "
        "plate, so `cls` must range over that plate: a `Categorical` over it, or the plate "
        "itself (`theta[School]`). An index over another finite set, a real-valued index or "
        "more indices than `theta` has plates picks entries that do not exist. A number "
        "picks one entry (`beta[0]`, the plate's axis dropped): qvr counts from 0, so it is "
        "a whole number from 0 to the plate's size less one, never negative. Data "
        "variables used as indices are checked when the data is bound."
    ),
    fixes=(
        "Index by a value over the same plate, or gather a value over the index's plate.",
        "Index by a number from 0 below the plate's size (Stan's `beta[1]` is `beta[0]`).",
    ),
    example="QVR409_index_plate.qvr",
)

EFFECT_ROW = Rule(
    code="QVR410",
    name="effect-row",
    severity=ERROR,
    summary="a computation performs an effect its row does not list, or one its interface lacks",
    explanation=(
        "A `define` says in its row which effect instances it may use: `!{random, score}` "
        "lets its body perform on the instances `random` and `score` (`instance random : "
        "Random`), and a computation it calls may perform only on instances its own row "
        "lists. Each instance applies an interface with a fixed set of operations: "
        "`Random` has `sample`, `Score` has `add`."
    ),
    fixes=(
        "Add the instance to the row: `!{random, score}`.",
        'Use an operation the interface has: `random.sample[Real](site("x"), Normal(0.0, 1.0))`,'
        " `score.add(weight(w))`.",
    ),
    example="QVR410_effect_row.qvr",
)

OBSERVED_NOT_DATA = Rule(
    code="QVR411",
    name="observed-not-data",
    severity=ERROR,
    summary="an observe of a `let` whose value is not data, nor computed from data only",
    explanation=(
        "`observe log_earn : Row <- Normal(mu, sigma)` scores an observation. A data name "
        "is one, and so is a `let` computed from data names and numbers only (`let log_earn "
        "= log(earn)`, `let age30_44 = age == 2`): qvr computes it once from the data "
        "before the run, as Stan's `transformed data`, and the data file does not hold it. "
        "A let that reads a sampled value, an observed site, a program parameter or a "
        "summed-out coordinate changes with them, so it is no observation. The message "
        "names the value it reads."
    ),
    fixes=(
        "Compute the observed let from data names and numbers only.",
        "Observe a data name, and put the latent value in the family's arguments "
        "(`observe y : Row <- Normal(mu + shift, sigma)`).",
    ),
    example="QVR411_observed_not_data.qvr",
)

DATA_LIKE_A_VALUE = Rule(
    code="QVR412",
    name="data-like-a-value",
    severity=WARNING,
    summary="a name read from the data that is one letter away from a value the program binds",
    explanation=(
        "In a model program a name that no step binds is a data name: the run reads it "
        "from the data file, as quivers' host data, and that is how covariates and "
        "observations get in. A data name one letter away from a value the program has "
        "already bound (`aa[group]` after `sample a : Group <- ...`, `sigmaa` for `sigma`) "
        "is more often a typo, which would otherwise show only when `qvr run` asks the data "
        "file for it. Data names stay allowed: a name that is meant as data keeps working, "
        "and one further from the program's own values has no warning."
    ),
    fixes=(
        "Change the name to the value it misspells.",
        "If it is data, keep it (the run reads it from the data file), or give it a name "
        "further from the program's values.",
    ),
    example="QVR412_data_like_a_value.qvr",
    quick_fixes=("Change to each close value name.",),
)

IMPROPER_POSTERIOR = Rule(
    code="QVR413",
    name="improper-posterior",
    severity=WARNING,
    summary="an improper flat prior that no observation depends on",
    explanation=(
        "`sample b <- Flat` (or `HalfFlat`) has density 1 everywhere, which does not "
        "integrate: the posterior is a distribution only because observations that depend "
        "on `b` make it one. When no observation and no `score` term reads `b` (through the "
        "lets, family arguments and other latents' priors between them), its posterior is "
        "flat as its prior and NUTS drifts without end, as Stan's does on the same program."
    ),
    fixes=(
        "Give the parameter a proper prior (`Normal(0.0, 10.0)`, `HalfNormal(5.0)`).",
        "Use it where the observations depend on it, or remove it.",
    ),
    example="QVR413_improper_posterior.qvr",
)

CANNOT_SUM_OUT = Rule(
    code="QVR414",
    name="cannot-sum-out",
    severity=WARNING,
    summary="a discrete latent that NUTS and SVI cannot sum out",
    explanation=(
        "NUTS and SVI move continuous values only, so a discrete latent with finitely many "
        "values (a `Categorical`, a `Bernoulli`) and no data is summed out of the density "
        "exactly, over the steps that read it, and drawn back from its posterior after each "
        "draw. Three places defeat that: a call of a template inside the sum (the callee's "
        "own draws would be summed with it), a site inside a `marginalize` (its posterior "
        "depends on the coordinate summed there, so it cannot be drawn back), and a template "
        "whose returned value depends on a site it sums out (the caller would read a value "
        "that is never drawn). `qvr run --method nuts` or `svi` refuses such a site with the "
        "same words; `--method prior` and a run that gives the site data are unaffected."
    ),
    fixes=(
        "Observe the site: give its values in the data.",
        "Inside a `marginalize`: `marginalize` the site too (summed out, not reported).",
        "In a template: draw the site in the calling program and pass it in.",
    ),
    example="QVR414_cannot_sum_out.qvr",
)

# ------------------------------------------------------------------ 5: exports


NO_EXPORT = Rule(
    code="QVR501",
    name="no-export",
    severity=WARNING,
    summary="a file with programs but no `export`",
    explanation=(
        "`load()` and `qvr run` return the exported program; without an export they do "
        "not know which one to use."
    ),
    fixes=("Add `export NAME` for the program to run.",),
    example="QVR501_no_export.qvr",
    quick_fixes=("Add `export NAME` for the last program.",),
)

UNDEFINED_EXPORT = Rule(
    code="QVR502",
    name="undefined-export",
    severity=WARNING,
    summary="an export of a name that no declaration defines",
    explanation="The exported name must be a program or let of the file.",
    fixes=("Correct the spelling, or declare what it names.",),
    example="QVR502_undefined_export.qvr",
    quick_fixes=("Change to each close program or let name.",),
)

DUPLICATE_EXPORT = Rule(
    code="QVR503",
    name="duplicate-export",
    severity=WARNING,
    summary="the same name exported twice",
    explanation="The second export changes nothing.",
    fixes=("Remove it.",),
    example="QVR503_duplicate_export.qvr",
)

EXPORT_NOT_RUNNABLE = Rule(
    code="QVR504",
    name="export-not-runnable",
    severity=WARNING,
    summary="an export of an object or a morphism, which cannot be run",
    explanation="Only programs and lets can be exported: they are what `load()` returns.",
    fixes=("Export a program or a let that uses it.",),
    example="QVR504_export_not_runnable.qvr",
)


# ----------------------------------------------------------------- sizes

PROGRAM_TOO_LARGE = Rule(
    code="QVR601",
    name="program-too-large",
    severity=WARNING,
    summary="an exported program too large to run within the memory budget",
    explanation=(
        "Before a run allocates anything, qvr sizes it from the checked module. A program "
        "of morphisms needs its parameters, optimiser state and the activations of a "
        "forward pass at the run's batch and sequence length; a model program needs every "
        "site's values over its plates, each `marginalize` body (and the steps that read "
        "a discrete latent NUTS and SVI sum out) once for every value it sums over (nested "
        "scopes that one step reads multiply), and what the method keeps "
        "of the latent values (the guide and its draws, every NUTS draw). A program whose "
        "default run needs more than the memory budget (half the machine's available "
        "memory unless `qvr.run.memoryBudget` or `--memory-budget` says otherwise) would "
        "be refused, so the checker says so while you type, at the declaration that makes "
        "it large."
    ),
    fixes=(
        "Make the named dimension, plate, replicate, stack or repeat count smaller.",
        "Sum out fewer values, or nest fewer `marginalize` scopes whose values one step reads.",
        "Raise the memory budget if the machine really has the memory.",
    ),
    example="QVR601_too_large.qvr",
)


# ----------------------------------------------------------------- export targets

NOT_EXPORTABLE = Rule(
    code="QVR701",
    name="not-exportable",
    severity=WARNING,
    summary="a construct the chosen export target (Stan, NumPyro, PyMC) cannot express",
    explanation=(
        "`qvr export --to T` writes a checked model program in another language, and "
        "`qvr check --target T` (or the editor's `qvr.export.target` setting) says before "
        "anything is written what that language cannot say: a family it has no "
        "distribution for, a function it lacks, a draw through another program, a network "
        "of morphisms where only models export. The program is still valid QVR and runs in "
        "qvr; the warning sits at the construct the target lacks, with the reason."
    ),
    fixes=(
        "Write the construct with what the target has (another family, a function it "
        "provides), or export to another target.",
        "Keep the program in qvr: nothing is wrong with it as QVR.",
    ),
    example="QVR701_not_exportable.qvr",
)


# ----------------------------------------------------------------- grammars

GRAMMAR_TERM = Rule(
    code="QVR801",
    name="grammar-term",
    severity=ERROR,
    summary="a deduction's or grammar rule's term, category or rule that quivers refuses",
    explanation=(
        "A `deduction` builds its items from a closed set of terms: the atoms it lists, the "
        "variables of its patterns, and in a lexicon entry's logical form the variables its "
        "binders bind (`lam(x, body)` binds `x`). `atom` and `var` are the term algebra's "
        "own tags and cannot be atoms or binders; a logical form that uses a name no atom "
        "declares and no binder binds, and a category list `{NP, VP}` that names an atom "
        "the deduction does not declare, have no term to stand for. A top-level grammar "
        "`rule` takes one premise or two. A chart `parser(...)` needs rules (all schemas or "
        "all morphisms, not a mix), `terminal=` and category atoms (from `categories=`, "
        "`category` declarations or one `FreeResiduated` universe), and its `start=` must "
        "be one of the atoms. quivers refuses all of these when it compiles the file, and "
        "so does qvr while you type."
    ),
    fixes=(
        "Add the name to the deduction's `atoms`, or correct its spelling.",
        "Bind the variable with a binder (`binders lam`, then `lam(x, ...)`).",
        "Split a rule of three premises into two binary rules.",
    ),
    example="QVR801_grammar_term.qvr",
    quick_fixes=("Change to each close atom.",),
)

GRAMMAR_READ_OTHERWISE = Rule(
    code="QVR802",
    name="grammar-read-otherwise",
    severity=WARNING,
    summary="a deduction or grammar rule quivers accepts but computes otherwise than it reads",
    explanation=(
        "Some slips in a `deduction` or a grammar `rule` compile in quivers without a word "
        "and then compute something else: a `semiring=` it does not know (it knows LogProb, "
        "Viterbi, Boolean and Counting) is read as LogProb; a `start=` that no rule and no "
        "lexicon entry mentions, and no rule concludes through a variable category "
        "(`span(I, J, X)`), is a goal item that is never derived, so every sentence "
        "weighs zero; in a deduction's pattern a name that is not a declared atom is a "
        "variable that matches anything, so `Np` where the atom is `NP` makes the rule fire "
        "on every category; in a top-level rule a name that is neither one of its "
        "variables nor a declared category is a constant no category is, so the rule never "
        "fires; and a chart parser over schemas reads a number as its `start=` as S."
    ),
    fixes=(
        "Correct the spelling (the message suggests the close name).",
        "Declare the name (among the deduction's `atoms`, or with `category`).",
    ),
    example="QVR802_grammar_read_otherwise.qvr",
    quick_fixes=("Change to each close semiring, atom or category.",),
)


# ----------------------------------------------------------------- the index

RULES: tuple[Rule, ...] = tuple(
    sorted((v for v in dict(globals()).values() if isinstance(v, Rule)), key=lambda r: r.code)
)
BY_CODE: dict[str, Rule] = {r.code: r for r in RULES}
BY_NAME: dict[str, Rule] = {r.name: r for r in RULES}

#: Codes that mean the text did not parse (or the checker gave up on it), so its
#: symbols may miss uses: renames and unused hints wait until they are gone.
UNPARSED_CODES = frozenset({INTERNAL_ERROR.code, SYNTAX_ERROR.code})


def lookup(key: str) -> Rule | None:
    """The rule with this code (`QVR101`, `qvr101`, `101`) or name (`undefined-name`)."""
    k = key.strip()
    if k.isdigit():
        k = f"QVR{int(k):03d}"
    return BY_CODE.get(k.upper()) or BY_NAME.get(k.lower())
