; Comments go to the `comment` grammar where the editor has one (TODO, FIXME, NOTE).

((comment) @injection.content
  (#set! injection.language "comment"))
