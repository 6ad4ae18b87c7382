-- Drives metaguard-clangd from a real, headless Neovim (0.7+ APIs only):
--   nvim --headless --clean -u neovim-clangd.lua
-- with METAGUARD_CLANGD (the server) and METAGUARD_PROJECT (a project made
-- by make-clangd-project.py) in the environment. Prints every state it
-- waited for as DIAG/RELATED lines for FileCheck, or "FAIL: ..." and exits
-- with status 1 when a state does not arrive in time.
local clangd = os.getenv("METAGUARD_CLANGD")
local root = os.getenv("METAGUARD_PROJECT")
local timeout_ms = tonumber(os.getenv("METAGUARD_LSP_TIMEOUT_MS") or "120000")
local file = root .. "/src/model.cpp"
local uri = vim.uri_from_fname(file)

local function out(line)
  io.stdout:write(line .. "\n")
  io.stdout:flush()
end

local function finish(code)
  io.stdout:flush()
  os.exit(code)
end

-- The latest diagnostics clangd published for the file, and their version.
local latest = nil
local client_id = vim.lsp.start_client({
  name = "metaguard-clangd",
  cmd = { clangd, "--background-index=false", "--log=error" },
  root_dir = root,
  handlers = {
    ["textDocument/publishDiagnostics"] = function(_, result)
      if result.uri == uri then
        latest = result
      end
    end,
  },
})
if not client_id then
  out("FAIL: could not start " .. tostring(clangd))
  finish(1)
end

local function metaguard_diagnostics()
  local found = {}
  for _, d in ipairs((latest or {}).diagnostics or {}) do
    if type(d.code) == "string" and d.code:find("^metaguard%-") then
      table.insert(found, d)
    end
  end
  table.sort(found, function(a, b)
    return a.range.start.line < b.range.start.line
  end)
  return found
end

local function range_text(r)
  -- 1-based lines and columns, as in the editor and in clang's messages.
  return string.format("%d:%d-%d:%d", r.start.line + 1, r.start.character + 1,
    r["end"].line + 1, r["end"].character + 1)
end

local function print_state(stage)
  out("STAGE " .. stage)
  for _, d in ipairs(metaguard_diagnostics()) do
    out(string.format("DIAG %s %s severity=%d source=%s %s", d.code, range_text(d.range),
      d.severity, tostring(d.source), d.message))
    for _, info in ipairs(d.relatedInformation or {}) do
      out(string.format("RELATED %s %s %s", vim.fn.fnamemodify(vim.uri_to_fname(info.location.uri), ":t"),
        range_text(info.location.range), info.message))
    end
  end
end

-- Waits until clangd published diagnostics for the buffer's current text
-- (the version Neovim last sent) with `count` metaguard findings.
local function wait_for(stage, count)
  local buf = vim.api.nvim_get_current_buf()
  local ok = vim.wait(timeout_ms, function()
    local sent = vim.lsp.util.buf_versions[buf]
    return latest ~= nil and sent ~= nil and latest.version == sent
      and #metaguard_diagnostics() == count
  end, 50)
  if not ok then
    out(string.format("FAIL: stage %s: expected %d metaguard diagnostics for version %s, have %d for version %s",
      stage, count, tostring(vim.lsp.util.buf_versions[buf]), #metaguard_diagnostics(),
      tostring((latest or {}).version)))
    print_state(stage)
    finish(1)
  end
  print_state(stage)
end

vim.cmd("edit " .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
vim.lsp.buf_attach_client(buf, client_id)

-- 1. The file as saved: one finding, with its note.
wait_for("open", 1)

-- Its quick fixes: clangd offers the note's fix-it as a code action.
local finding = metaguard_diagnostics()[1]
local responses = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", {
  textDocument = { uri = uri },
  range = finding.range,
  context = { diagnostics = { finding } },
}, timeout_ms) or {}
for _, response in pairs(responses) do
  for _, action in ipairs(response.result or {}) do
    local edits = {}
    local changes = (action.edit or {}).changes or {}
    for _, edit in ipairs(changes[uri] or {}) do
      table.insert(edits, range_text(edit.range) .. " '" .. edit.newText .. "'")
    end
    out("ACTION " .. action.title .. " | " .. table.concat(edits, " ; "))
  end
end

-- 2. An unsaved edit adds a second bug: moving the dispatched model by hand.
vim.api.nvim_buf_set_lines(buf, 14, 14, false, { "  model->to(torch::kCUDA);" })
wait_for("edited", 2)

-- 3. Fix both, still unsaved: build the skeleton from its config, and drop
-- the move.
vim.api.nvim_buf_set_lines(buf, 9, 10, false,
  { "  auto encoder = metaguard::from_config<Encoder>(metaguard::load_config(dir));" })
vim.api.nvim_buf_set_lines(buf, 14, 15, false, {})
wait_for("fixed", 0)
out("MODIFIED " .. tostring(vim.api.nvim_buf_get_option(buf, "modified")))

vim.lsp.stop_client(client_id)
vim.wait(5000, function()
  return vim.lsp.get_client_by_id(client_id) == nil
end, 50)
out("DONE")
finish(0)
