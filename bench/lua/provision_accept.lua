-- Case 1: asynchronous provision accept. Every request provisions a new instance
-- (PUT /v2/service_instances/<id>?accepts_incomplete=true) and must get 202.
-- Ids are unique across threads and runs: "<tag>-<thread>-<counter>"; bench/run.sh gives each
-- run its own tag (wrk ... -- tag=a1), since a repeated id would be answered 202/200 as an
-- idempotent re-send, not as a new acceptance.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local bench = require("common")

local prefix, counter, body, headers
counts = {}

setup = bench.setup

function init(args)
  local opts = bench.options(args)
  prefix = "/v2/service_instances/" .. (opts.tag or "a") .. "-" .. thread_no .. "-"
  body = bench.provision_body(bench.plan_instant)
  headers = bench.headers({["Content-Type"] = "application/json"})
end

function request()
  counter = (counter or 0) + 1
  return wrk.format("PUT", prefix .. counter .. "?accepts_incomplete=true", headers, body)
end

function response(status)
  bench.count(counts, tostring(status))
end

function done(summary, latency)
  bench.done(summary, latency, {["202"] = true})
end
