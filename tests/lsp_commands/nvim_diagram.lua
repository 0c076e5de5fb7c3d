-- Headless Neovim: open a model, ask the server for its diagram, and show a
-- program's diagram through its code lens the way docs/editors.md maps the
-- client commands onto the server's. Writes what it saw to $QVR_NVIM_OUT.
-- Every wait is bounded by $QVR_TIMEOUT_MS.

local out_path = assert(os.getenv('QVR_NVIM_OUT'), 'QVR_NVIM_OUT')
local file = assert(os.getenv('QVR_NVIM_FILE'), 'QVR_NVIM_FILE')
local timeout = tonumber(os.getenv('QVR_TIMEOUT_MS') or '20000')

local result = {}

local function execute(bufnr, command, arguments)
  local responses = vim.lsp.buf_request_sync(
    bufnr, 'workspace/executeCommand', { command = command, arguments = arguments }, timeout)
  for _, response in pairs(responses or {}) do
    if response.err then
      return nil, response.err.message
    end
    return response.result, nil
  end
  return nil, 'no response'
end

-- The mappings of the code lenses' client commands onto the server's, as docs/editors.md
-- gives them (the test writes that page's block to $QVR_NVIM_MAPPINGS).
dofile(assert(os.getenv('QVR_NVIM_MAPPINGS'), 'QVR_NVIM_MAPPINGS'))

local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local bufnr = vim.api.nvim_get_current_buf()
  result.attached = vim.wait(timeout, function()
    return #vim.lsp.buf_get_clients(bufnr) > 0
  end, 20)

  local uri = vim.uri_from_bufnr(bufnr)
  local diagram, diagram_err = execute(bufnr, 'qvr.diagram', { { uri = uri, format = 'mermaid' } })
  result.diagram_error = diagram_err
  if diagram then
    result.format = diagram.format
    result.text = diagram.text
    result.node_ids = {}
    for _, node in ipairs(diagram.nodes) do
      table.insert(result.node_ids, node.id)
    end
    result.first_range = diagram.nodes[1] and diagram.nodes[1].range
  end

  local responses = vim.lsp.buf_request_sync(
    bufnr, 'textDocument/codeLens', { textDocument = { uri = uri } }, timeout)
  result.lenses = {}
  for client_id, response in pairs(responses or {}) do
    for _, lens in ipairs(response.result or {}) do
      table.insert(result.lenses, lens.command.title)
      local handler = vim.lsp.commands[lens.command.command]
      if lens.command.command == 'qvr.client.showDiagram' and handler then
        handler(lens.command, { bufnr = bufnr, client_id = client_id })
      end
    end
  end
  -- the mapping answers in a scratch window beside the file, once the server replies
  local shown
  result.lens_shown = vim.wait(timeout, function()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      local buf = vim.api.nvim_win_get_buf(win)
      if buf ~= bufnr and vim.bo[buf].filetype == 'mermaid' then
        shown = buf
        return true
      end
    end
    return false
  end, 20)
  if shown then
    result.lens_diagram = {
      text = table.concat(vim.api.nvim_buf_get_lines(shown, 0, -1, false), '\n'),
      buftype = vim.bo[shown].buftype,
      windows = #vim.api.nvim_list_wins(),
    }
  end
end)

if not ok then
  result.error = tostring(err)
end
local f = assert(io.open(out_path, 'w'))
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd('qa!')
