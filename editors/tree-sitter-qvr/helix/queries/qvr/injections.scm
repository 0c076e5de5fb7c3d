; Written by scripts/gen_tree_sitter.py from editors/tree-sitter-qvr/queries/injections.scm (as it is): do not edit.

; Comments go to the `comment` grammar where the editor has one (TODO, FIXME, NOTE).

((comment) @injection.content
  (#set! injection.language "comment"))
