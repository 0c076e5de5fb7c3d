-- The Neovim configuration docs/neovim.md gives, as the headless test loads it.
-- The only difference from a user's init.lua: the server command comes from
-- $QVR_LSP_CMD (the test's Python), not from PATH.

vim.g.do_filetype_lua = 1 -- Neovim 0.7: filetype.lua is opt-in (the default from 0.8)
vim.filetype.add({ extension = { qvr = 'qvr' } })

local cmd = vim.split(os.getenv('QVR_LSP_CMD') or 'qvr-lsp', ' ', { trimempty = true })

local function root_dir(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local marker = vim.fs and vim.fs.find({ '.git', 'pyproject.toml' }, { upward = true, path = path })[1]
  return marker and vim.fs.dirname(marker) or vim.fn.fnamemodify(path, ':p:h')
end

vim.api.nvim_create_autocmd('FileType', {
  pattern = 'qvr',
  callback = function(args)
    local config = {
      name = 'qvr-lsp',
      cmd = cmd,
      root_dir = root_dir(args.buf),
      init_options = { qvr = { strict = false } },
    }
    if vim.lsp.start then -- Neovim 0.8+
      vim.lsp.start(config)
    else -- Neovim 0.7
      local client_id = vim.lsp.start_client(config)
      if client_id then
        vim.lsp.buf_attach_client(args.buf, client_id)
      end
    end
  end,
})
