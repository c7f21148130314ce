-- Shared by the wrk scripts of bench/run.sh (wrk 4.1, LuaJIT).
--
-- wrk runs one Lua state per thread plus a main one: setup() and done() run in the main state,
-- init(), request() and response() in each thread's. Counters therefore live in each thread's
-- globals, and done() collects them through the thread handles setup() kept (thread:get copies
-- tables too). done() prints one "BENCH key=value ..." line that bench/run.sh parses, and the
-- unexpected statuses, so a run with errors is reported, never hidden.
--
-- Usage in a case script:
--   local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
--   package.path = dir .. "?.lua;" .. package.path
--   local bench = require("common")
local M = {}

-- The plan ids of bench/catalog.json.
M.service_id = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f001"
M.plan_instant = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f101"
M.plan_hold = "0b5e7c1a-9d3f-4e2b-8a61-b7c4d2e9f102"

-- A provision body shaped like Cloud Foundry's (context plus the deprecated guids), so the
-- gateway parses, digests and stores what a real platform sends.
function M.provision_body(plan_id)
  return '{"service_id":"' .. M.service_id .. '","plan_id":"' .. plan_id .. '",'
    .. '"organization_guid":"7a1e3c55-0f2b-4d8e-9c6a-1b2d3e4f5a6b",'
    .. '"space_guid":"c4d5e6f7-8a9b-4c0d-8e1f-2a3b4c5d6e7f",'
    .. '"context":{"platform":"cloudfoundry",'
    .. '"organization_guid":"7a1e3c55-0f2b-4d8e-9c6a-1b2d3e4f5a6b",'
    .. '"space_guid":"c4d5e6f7-8a9b-4c0d-8e1f-2a3b4c5d6e7f",'
    .. '"instance_name":"bench"}}'
end

-- The headers given with wrk -H (Authorization, X-Broker-API-Version) plus extra ones.
-- wrk.format() does not merge wrk.headers with the headers it is given, hence the copy.
function M.headers(extra)
  local h = {}
  for k, v in pairs(wrk.headers) do h[k] = v end
  for k, v in pairs(extra or {}) do h[k] = v end
  return h
end

-- A response header by name, whatever case the server wrote it in.
function M.header(headers, name)
  local v = headers[name]
  if v ~= nil then return v end
  local lower = string.lower(name)
  for k, val in pairs(headers) do
    if string.lower(k) == lower then return val end
  end
  return nil
end

-- What a request was sent as (sent: request id -> label), found by the
-- X-Broker-API-Request-Identity the gateway echoes in its response and forgotten: returns the
-- id (nil when the response has none) and the label ("?" when unknown).
function M.answered(headers, sent)
  local id = M.header(headers, "X-Broker-API-Request-Identity")
  local label = id and sent[id] or "?"
  if id then sent[id] = nil end
  return id, label
end

-- The extra arguments after "--" on wrk's command line, as a table (key=value words).
-- wrk passes the URL as args[0]; the words after it are ours.
function M.options(args)
  local opts = {}
  for i = 1, #args do
    local k, v = string.match(args[i], "^([%w_]+)=(.*)$")
    if k then opts[k] = v end
  end
  return opts
end

-- Main state: numbers the threads (1, 2, ...) and keeps their handles for done().
local threads = {}
function M.setup(thread)
  table.insert(threads, thread)
  thread:set("thread_no", #threads)
end

-- Thread state: counts a response's status under a label ("202", "PUT 201", ...).
function M.count(counts, label)
  counts[label] = (counts[label] or 0) + 1
end

-- Main state: sums a table-valued global over every thread.
local function sum_tables(name)
  local total = {}
  for _, t in ipairs(threads) do
    for k, v in pairs(t:get(name) or {}) do total[k] = (total[k] or 0) + v end
  end
  return total
end

-- Main state: prints the BENCH line. expected is the set of labels that are not errors;
-- "unit" names what the rate counts when it is not every request (e.g. "cycles" with the
-- label that marks one, for case 3).
function M.done(summary, latency, expected, unit_label)
  local counts = sum_tables("counts")
  local bad, bad_text = 0, {}
  for label, n in pairs(counts) do
    if not expected[label] then
      bad = bad + n
      table.insert(bad_text, label .. ":" .. n)
    end
  end
  table.sort(bad_text)
  local seconds = summary.duration / 1e6
  local units = summary.requests
  if unit_label then units = counts[unit_label] or 0 end
  local e = summary.errors
  local words = {}
  for label, n in pairs(counts) do table.insert(words, label .. ":" .. n) end
  table.sort(words)
  io.write(string.format(
    "BENCH requests=%d seconds=%.3f rate=%.1f rps=%.1f p50_ms=%.3f p99_ms=%.3f max_ms=%.3f "
      .. "unexpected=%d connect_errors=%d read_errors=%d write_errors=%d timeouts=%d\n",
    summary.requests, seconds, units / seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    bad, e.connect, e.read, e.write, e.timeout))
  -- Labels hold spaces ("PUT 201"), so they get lines of their own.
  io.write("BENCH_COUNTS " .. table.concat(words, ", ") .. "\n")
  if bad > 0 then
    io.write("BENCH_UNEXPECTED " .. table.concat(bad_text, ", ") .. "\n")
  end
end

return M
