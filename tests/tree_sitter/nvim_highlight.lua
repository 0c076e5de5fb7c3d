-- Headless Neovim with the compiled QVR parser and its queries on the runtimepath, and
-- docs/editors.md's block that starts tree-sitter highlighting on `.qvr` buffers: open a
-- file, let the FileType autocommand start the highlighter, and write what it captures at
-- each asked position (and the highlight group each capture gets) to JSON. Nothing here
-- waits: parsing and querying are synchronous.

local out_path = assert(os.getenv('QVR_TS_OUT'), 'QVR_TS_OUT')
local runtime = assert(os.getenv('QVR_TS_RUNTIME'), 'QVR_TS_RUNTIME')
local setup = assert(os.getenv('QVR_TS_SETUP'), 'QVR_TS_SETUP')
local file = assert(os.getenv('QVR_TS_FILE'), 'QVR_TS_FILE')
-- "row:col;row:col", 0-based byte columns
local positions = os.getenv('QVR_TS_POSITIONS') or ''

local version = vim.version()
local result = { nvim = version.major .. '.' .. version.minor, captures = {}, groups = {} }

local ok, err = pcall(function()
  vim.opt.runtimepath:prepend(runtime)
  dofile(setup) -- the documented FileType autocommand
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  vim.cmd('setfiletype qvr') -- what the documented filetype detection does

  -- the parser is found as parser/qvr.so on the runtimepath
  local parser = vim.treesitter.get_parser(buf, 'qvr')
  local highlighter = vim.treesitter.highlighter.active[buf]
  result.highlighting = highlighter ~= nil
  if not highlighter then
    return -- the documented block started nothing
  end
  local root = parser:parse()[1]:root()
  result.has_error = root:has_error()

  -- the highlights query the highlighter read from queries/qvr/highlights.scm
  local hl_query = highlighter:get_query('qvr')
  local query = hl_query:query()
  result.query_loaded = query ~= nil

  for spec in positions:gmatch('[^;]+') do
    local row, col = spec:match('(%d+):(%d+)')
    row, col = tonumber(row), tonumber(col)
    local found = {}
    for id, node in query:iter_captures(root, buf, row, row + 1) do
      local start_row, start_col, end_row, end_col = node:range()
      local after_start = start_row < row or (start_row == row and start_col <= col)
      local before_end = end_row > row or (end_row == row and end_col > col)
      if after_start and before_end then
        local name = query.captures[id]
        table.insert(found, name)
        -- the highlight group the highlighter draws this capture with (0.7: through
        -- its table of captures; later versions: @capture groups)
        local group_ok, group = pcall(function()
          return vim.fn.synIDattr(vim.fn.synIDtrans(hl_query.hl_cache[id]), 'name')
        end)
        if group_ok and group ~= '' then
          result.groups[name] = group
        end
      end
    end
    result.captures[spec] = found
  end
end)

if not ok then
  result.error = tostring(err)
end
local f = assert(io.open(out_path, 'w'))
f:write(vim.fn.json_encode(result))
f:close()
vim.cmd('qa!')
