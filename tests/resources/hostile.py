"""Programs whose sizes no machine can run (issue #18), and a small one for contrast."""

from __future__ import annotations

BASE = """\
object Tok : FinSet 8
object Emb : Real 4
object Hidden : Real {hidden}

morphism embed : Tok -> Emb [role=embed]
morphism cell : Emb * Hidden -> Hidden [role=kernel, scale=0.1] ~ Normal
morphism step : Emb -> Emb [role=kernel, scale=0.1] ~ Normal
morphism head : Hidden -> Tok [role=kernel] ~ Categorical

let backbone = embed >> {middle}scan(cell)

program lm : Tok -> Tok
    sample h <- backbone
    observe next : Tok <- head(h)
    return next

export lm
"""

SMALL = BASE.format(hidden=16, middle="step >> ")
#: `object Hidden : Real 99999999999`: 25 TB of weights in one morphism.
HUGE = BASE.format(hidden=99_999_999_999, middle="")
#: a billion applications of one small kernel.
REPEAT = BASE.format(hidden=16, middle="repeat(step, 1000000000) >> ")
#: a hundred thousand copies of a small kernel.
STACK = BASE.format(hidden=16, middle="stack(step, 100000) >> ")
