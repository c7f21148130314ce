-- Loader for case 2: provisions instances "<tag>-<i>" for i = first, first + stride, ... below
-- to, asynchronously (202), on the plan named by plan= ("instant" or "hold"); thread t of
-- threads= takes every threads-th of those ids, starting with its t-th; once they are all sent
-- it starts over, which is idempotent (202 with the same operation, or 200). Starting over
-- also sends the first id, whose request() call wrk spent checking the request's syntax.
-- bench/run.sh loads the even ids on "instant" and, once they are done, the odd ones on
-- "hold", so every other instance polled is still in progress. wrk itself runs until its -d
-- time, so bench/run.sh ends it (SIGINT) once Redis holds every instance. (Stopping a thread
-- from Lua, wrk.thread:stop(), neither ends wrk sooner nor waits for the answers in flight.)
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local bench = require("common")

local prefix, start, next_index, to, step, body, headers
counts = {}

setup = bench.setup

function init(args)
  local opts = bench.options(args)
  prefix = "/v2/service_instances/" .. (opts.tag or "lo") .. "-"
  local first = tonumber(opts.first or "0")
  local stride = tonumber(opts.stride or "1")
  to = tonumber(opts.to or "0")
  step = stride * tonumber(opts.threads or "1")
  start = first + (thread_no - 1) * stride
  next_index = start
  local plan = opts.plan == "hold" and bench.plan_hold or bench.plan_instant
  body = bench.provision_body(plan)
  headers = bench.headers({["Content-Type"] = "application/json"})
end

function request()
  if next_index >= to then next_index = start end
  local path = prefix .. next_index .. "?accepts_incomplete=true"
  next_index = next_index + step
  return wrk.format("PUT", path, headers, body)
end

function response(status)
  bench.count(counts, tostring(status))
end

function done(summary, latency)
  bench.done(summary, latency, {["202"] = true, ["200"] = true})
end
