; Indentation in Zed: brackets indent their contents, a construct with a body indents it
; (config.toml's increase_indent_pattern indents the line after its header).

(_ "(" ")" @end) @indent
(_ "[" "]" @end) @indent
(_ "{" "}" @end) @indent

(_
  body: (block)) @indent
