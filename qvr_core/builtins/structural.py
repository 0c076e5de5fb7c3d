"""The fixed vocabulary of quivers' structural compression (0.25.2, `structural/`,
`dsl/compiler/structural.py`): what signatures, encoders, decoders and losses accept."""

from __future__ import annotations

#: A signature's sort kinds.
SORT_KINDS = ("object", "index", "data")
#: Operator names the framework keeps for itself (a bound variable, a data leaf).
RESERVED_OPERATORS = ("BoundVar", "Data")
#: An encoder's options (besides a factory's own keyword arguments).
ENCODER_OPTIONS = ("factory",)
#: quivers' encoder factories, each with the options it takes besides `factory`.
ENCODER_FACTORIES: dict[str, tuple[str, ...]] = {
    "rnn_encoder": ("dim",),
    "transformer_encoder": ("dim",),
    "bow_encoder": ("dim",),
    "tree_lstm_encoder": ("dim",),
    "gnn_encoder": ("iterations", "dim", "readout"),
}
#: A decoder's options: how deep it expands a code.
DECODER_OPTIONS = ("depth",)
#: A decoder's depth when none is given.
DEFAULT_DECODER_DEPTH = 8
#: A loss's options.
LOSS_OPTIONS = ("weight", "on", "global")
#: What `on=` may attach a loss to, with what each call names.
LOSS_ATTACHMENTS: dict[str, tuple[str, ...]] = {
    "program": ("program",),
    "deduction": ("deduction",),
    "encoder": ("encoder",),
    "decoder": ("decoder",),
    "rule": ("rule", "deduction"),
    "chart": ("deduction",),
}
