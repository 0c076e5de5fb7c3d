; extends
;
; QVR in Markdown: a fenced code block tagged `qvr` is parsed with the qvr grammar.
; Add this to the markdown grammar's injections (Neovim: after/queries/markdown/;
; Helix: runtime/queries/markdown/; see docs/editors.md).

((fenced_code_block
  (info_string
    (language) @_lang)
  (code_fence_content) @injection.content)
  (#eq? @_lang "qvr")
  (#set! injection.language "qvr"))
