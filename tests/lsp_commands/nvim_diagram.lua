-- Headless Neovim: open a model, ask the server for its diagram, and show a
-- program's diagram through its code lens the way docs/neovim.md maps the
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

-- The mapping of the code lens's client command onto the server command.
vim.lsp.commands['qvr.client.showDiagram'] = function(command, ctx)
  local diagram, err = execute(ctx.bufnr, 'qvr.diagram', command.arguments)
  result.lens_diagram = diagram and { text = diagram.text, nodes = #diagram.nodes } or nil
  result.lens_error = err
end

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
end)

if not ok then
  result.error = tostring(err)
end
local f = assert(io.open(out_path, 'w'))
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd('qa!')
