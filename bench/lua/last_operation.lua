-- Cases 3 and 5: last_operation polling. GET /v2/service_instances/<id>/last_operation over
-- the instances bench/run.sh preloaded ("<tag>-0" .. "<tag>-<count-1>": even ones provisioned,
-- odd ones still provisioning; with stride=S, "<tag>-0", "<tag>-S", ...), picked round-robin; each thread starts at its own offset so
-- the threads do not poll the same instance at the same moment. Expects 200, and counts the
-- states answered so the mix of done and in-progress instances is visible.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local bench = require("common")

local prefix, count, stride, next_index, headers
counts = {}

setup = bench.setup

function init(args)
  local opts = bench.options(args)
  prefix = "/v2/service_instances/" .. (opts.tag or "lo") .. "-"
  count = tonumber(opts.count or "10000")
  stride = tonumber(opts.stride or "1")
  next_index = ((thread_no - 1) * 7919) % count
  headers = bench.headers()
end

function request()
  local i = next_index
  next_index = (next_index + 1) % count
  return wrk.format("GET", prefix .. (i * stride) .. "/last_operation", headers)
end

function response(status, _, body)
  if status == 200 then
    if string.find(body, "succeeded", 1, true) then
      bench.count(counts, "200-succeeded")
    elseif string.find(body, "in progress", 1, true) then
      bench.count(counts, "200-in-progress")
    else
      bench.count(counts, "200-other")
    end
  else
    bench.count(counts, tostring(status))
  end
end

function done(summary, latency)
  bench.done(summary, latency, {["200-succeeded"] = true, ["200-in-progress"] = true})
end
