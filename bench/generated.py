"""Generated QVR sources of a chosen size, shared by the benchmarks."""

from __future__ import annotations


def generate(lines: int) -> str:
    """A valid QVR file of about `lines` lines: blocks of morphisms, a let, an exported program."""
    out = ["object Token : FinSet 256", "object Embedded : Real 64", "object Hidden : Real 64", ""]
    i = 0
    while len(out) < lines - 1:
        out += [
            f"#! Block {i}: an embedding, a cell and a head.",
            f"morphism embed_{i} : Token -> Embedded [role=embed]",
            f"morphism cell_{i} : Embedded * Hidden -> Hidden [role=kernel, scale=0.1] ~ Normal",
            f"morphism head_{i} : Hidden -> Token [role=kernel] ~ Categorical",
            f"let backbone_{i} = embed_{i} >> scan(cell_{i})",
            f"program lm_{i} : Token -> Token",
            f"    sample h <- backbone_{i}",
            f"    observe next_token : Token <- head_{i}(h)",
            "    return next_token",
            f"export lm_{i}",
            "",
        ]
        i += 1
    return "\n".join(out) + "\n"


def messy(lines: int) -> str:
    """`generate(lines)` as pasted from elsewhere: no blank lines between the groups, and
    the spacing around `:`, `->` and `>>` not the canonical one, so nearly every line
    needs a formatting edit (issue 18's 5,000-line file needed 1,110)."""
    out = []
    for line in generate(lines * 11 // 10).split("\n"):
        if line:
            out.append(line.replace(" : ", ":").replace(" -> ", "->").replace(" >> ", "  >>  "))
    return "\n".join(out) + "\n"
