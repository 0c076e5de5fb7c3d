---@brief
---
--- https://github.com/qvr-lang/qvr
---
--- The QVR language server: diagnostics with dimensions, hover types, completion,
--- code lenses that draw the model and run inference.
---
--- Install it with `pip install qvr` (or `:MasonInstall qvr`), which puts `qvr-lsp`
--- on your PATH. Neovim does not know `.qvr` files; add
--- `vim.filetype.add({ extension = { qvr = 'qvr' } })`.
---
--- A definition for nvim-lspconfig's `lsp/` folder (Neovim 0.11+:
--- `vim.lsp.enable('qvr')`); tests/packaging/test_release.py holds it to the set-up
--- docs/editors.md gives.

---@type vim.lsp.Config
return {
  cmd = { 'qvr-lsp' },
  filetypes = { 'qvr' },
  root_markers = { '.git' },
}
