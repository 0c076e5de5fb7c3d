-- The headless test's steps: open a file, wait for diagnostics, hover, write JSON, quit.
-- Every wait is bounded by $QVR_TIMEOUT_MS; the JSON says what was (or was not) seen.

local out_path = assert(os.getenv('QVR_NVIM_OUT'), 'QVR_NVIM_OUT')
local file = assert(os.getenv('QVR_NVIM_FILE'), 'QVR_NVIM_FILE')
local hover_line = tonumber(os.getenv('QVR_HOVER_LINE'))
local hover_col = tonumber(os.getenv('QVR_HOVER_COL'))
local timeout = tonumber(os.getenv('QVR_TIMEOUT_MS') or '20000')

local result = { nvim = tostring(vim.version().major) .. '.' .. tostring(vim.version().minor) }

local function finish()
  local f = assert(io.open(out_path, 'w'))
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd('qa!')
end

local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  result.filetype = vim.bo[bufnr].filetype

  result.attached = vim.wait(timeout, function()
    return #vim.lsp.buf_get_clients(bufnr) > 0
  end, 20)

  result.got_diagnostics = vim.wait(timeout, function()
    return #vim.diagnostic.get(bufnr) > 0
  end, 20)
  result.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local lsp_d = d.user_data and d.user_data.lsp or {}
    table.insert(result.diagnostics, {
      code = d.code or lsp_d.code,
      message = d.message,
      severity = d.severity,
      lnum = d.lnum,
      col = d.col,
      end_lnum = d.end_lnum,
      end_col = d.end_col,
    })
  end

  local params = {
    textDocument = vim.lsp.util.make_text_document_params(bufnr),
    position = { line = hover_line, character = hover_col },
  }
  local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', params, timeout)
  for _, response in pairs(responses or {}) do
    if response.result and response.result.contents then
      result.hover = response.result.contents
    elseif response.err then
      result.hover_error = response.err.message
    end
  end
end)

if not ok then
  result.error = tostring(err)
end
finish()
