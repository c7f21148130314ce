-- Loader for case 2: provisions instances "<tag>-<from>" .. "<tag>-<to - 1>" asynchronously
-- (202) on the plan named by plan= ("instant" or "hold"), each thread taking every
-- <threads>-th id, then stops. The ids are fixed, so running it again only re-sends requests
-- that are idempotent (202 with the same operation, or 200): bench/run.sh does that when the
-- count of instances in Redis says some were lost when wrk stopped.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local bench = require("common")

local prefix, next_index, to, step, body, headers, last_path
counts = {}

function setup(thread)
  bench.setup(thread)
end

function init(args)
  local opts = bench.options(args)
  prefix = "/v2/service_instances/" .. (opts.tag or "lo") .. "-"
  local from = tonumber(opts.from or "0")
  to = tonumber(opts.to or "0")
  step = tonumber(opts.threads or "1")
  next_index = from + thread_no - 1
  local plan = opts.plan == "hold" and bench.plan_hold or bench.plan_instant
  body = bench.provision_body(plan)
  headers = bench.headers({["Content-Type"] = "application/json"})
end

function request()
  if next_index >= to then
    -- Done: stop this thread; wrk still wants a request, so re-send the last one (idempotent).
    wrk.thread:stop()
    return wrk.format("PUT", last_path or (prefix .. "0?accepts_incomplete=true"), headers, body)
  end
  last_path = prefix .. next_index .. "?accepts_incomplete=true"
  next_index = next_index + step
  return wrk.format("PUT", last_path, headers, body)
end

function response(status)
  bench.count(counts, tostring(status))
end

function done(summary, latency)
  bench.done(summary, latency, {["202"] = true, ["200"] = true})
end
