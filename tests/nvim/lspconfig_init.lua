-- Neovim started from the nvim-lspconfig definition qvr ships
-- (editors/nvim-lspconfig/lsp/qvr.lua): its cmd, filetypes and root markers, as
-- Neovim 0.11's `vim.lsp.enable('qvr')` reads them. Debian's Neovim is 0.7, which has
-- no `vim.lsp.config`, so the definition's fields are given to `start_client` here.

vim.g.do_filetype_lua = 1 -- Neovim 0.7: filetype.lua is opt-in (the default from 0.8)
vim.filetype.add({ extension = { qvr = 'qvr' } })

local def = dofile(os.getenv('QVR_LSPCONFIG'))

local function root_dir(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local marker = vim.fs and vim.fs.find(def.root_markers, { upward = true, path = path })[1]
  return marker and vim.fs.dirname(marker) or vim.fn.fnamemodify(path, ':p:h')
end

vim.api.nvim_create_autocmd('FileType', {
  pattern = def.filetypes,
  callback = function(args)
    local client_id = vim.lsp.start_client({ name = 'qvr', cmd = def.cmd, root_dir = root_dir(args.buf) })
    if client_id then
      vim.lsp.buf_attach_client(args.buf, client_id)
    end
  end,
})
