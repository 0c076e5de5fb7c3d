"""What a kernel's `param_source=` option may name: the network from its input to its
family's parameters. The checker validates the option from here, the runtime builds
the network it names (`qvr_core.runtime.paramnet`) and the memory estimate sizes it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ParamSource:
    name: str
    doc: str
    hidden_layer: bool = False  # sized by `hidden_dim=`
    keeps_width: bool = False  # gives as many numbers as it reads


MLP = ParamSource("mlp", "one tanh hidden layer of `hidden_dim` units (the default)", True)
LINEAR = ParamSource("linear", "affine, low rank with `rank=`")
LAYER_NORM = ParamSource(
    "layer_norm",
    "a LayerNorm with a learned gain and bias per entry (a Transformer's AddNorm)",
    keeps_width=True,
)
PARAM_SOURCES: dict[str, ParamSource] = {p.name: p for p in (MLP, LINEAR, LAYER_NORM)}
