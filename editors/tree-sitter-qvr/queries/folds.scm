; Folds (Neovim): every construct with an indented body, and the braced blocks of
; quivers 0.4 - 0.10.

(_
  body: (block)) @fold

[
  (braced_steps)
  (token_block)
] @fold
