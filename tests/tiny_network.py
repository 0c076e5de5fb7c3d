"""A recurrent network small enough that a run of it costs little more than starting a
process: the server tests' quick runs, and the float32 model the compiled potential is
checked on (tests/inference/test_lockstep.py)."""

TINY = """\
object Tok : FinSet 8
object Emb : Real 4
object Hid : Real 4

morphism embed : Tok -> Emb [role=embed]
morphism cell : Emb * Hid -> Hid [role=kernel, scale=0.1, hidden_dim=8] ~ Normal
morphism head : Hid -> Tok [role=kernel, hidden_dim=8] ~ Categorical

let backbone = embed >> scan(cell)

program tiny : Tok -> Tok
    sample h <- backbone
    observe next : Tok <- head(h)
    return next

export tiny
"""
