-- The headless test's steps: open a file, wait for diagnostics, hover at each position,
-- pull diagnostics when this Neovim can (0.10+), write JSON, quit.
-- Every wait is bounded by $QVR_TIMEOUT_MS; the JSON says what was (or was not) seen.

local out_path = assert(os.getenv('QVR_NVIM_OUT'), 'QVR_NVIM_OUT')
local file = assert(os.getenv('QVR_NVIM_FILE'), 'QVR_NVIM_FILE')
-- "line:col;line:col": where to hover, 0-based.
local hover_at = os.getenv('QVR_HOVERS') or ''
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

  local function hover(line, col)
    local params = {
      textDocument = vim.lsp.util.make_text_document_params(bufnr),
      position = { line = line, character = col },
    }
    local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/hover', params, timeout)
    for _, response in pairs(responses or {}) do
      if response.result and response.result.contents then
        return response.result.contents
      elseif response.err then
        return { error = response.err.message }
      end
    end
    return vim.NIL
  end
  result.hovers = {}
  for line, col in hover_at:gmatch('(%d+):(%d+)') do
    table.insert(result.hovers, hover(tonumber(line), tonumber(col)))
  end

  -- Pull diagnostics: asked for only when this Neovim's client offers them.
  local caps = vim.lsp.protocol.make_client_capabilities()
  result.pull_supported = caps.textDocument.diagnostic ~= nil
  local client = vim.lsp.buf_get_clients(bufnr)[1] or vim.lsp.get_active_clients()[1]
  result.server_pulls = client ~= nil and client.server_capabilities.diagnosticProvider ~= nil
  if result.pull_supported then
    local params = { textDocument = vim.lsp.util.make_text_document_params(bufnr) }
    local responses = vim.lsp.buf_request_sync(bufnr, 'textDocument/diagnostic', params, timeout)
    for _, response in pairs(responses or {}) do
      if response.result then
        local codes = {}
        for _, item in ipairs(response.result.items or {}) do
          table.insert(codes, item.code)
        end
        result.pulled = { kind = response.result.kind, codes = codes }
      end
    end
  end
end)

if not ok then
  result.error = tostring(err)
end
finish()
