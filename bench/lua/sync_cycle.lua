-- Case 3: full synchronous cycles. Each cycle provisions a new instance synchronously
-- (PUT without accepts_incomplete: 201 once the worker has run it) and then deprovisions it
-- synchronously (DELETE ?service_id&plan_id: 200).
--
-- wrk's request() does not know which connection it is writing to, and wrk 4.1 passes no
-- per-request data to response(). So every request carries its instance id in
-- X-Broker-API-Request-Identity, which the gateway echoes: a 201 puts the id on this thread's
-- list of instances to deprovision, and request() sends a DELETE for one of them before it
-- starts a new instance. A DELETE thus always follows its own PUT's answer, and each
-- connection alternates between the two as long as the answers come back. (wrk calls request()
-- once more than it sends, to check the request's syntax: that one PUT never leaves.)
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local bench = require("common")

local prefix, counter, body, put_headers, delete_query
local to_delete, first, last = {}, 1, 0 -- FIFO of provisioned ids
local kind_of = {}                       -- id -> "PUT" or "DELETE" while in flight
counts = {}

setup = bench.setup

function init(args)
  local opts = bench.options(args)
  prefix = (opts.tag or "c") .. "-" .. thread_no .. "-"
  body = bench.provision_body(bench.plan_instant)
  put_headers = bench.headers({["Content-Type"] = "application/json"})
  delete_query = "?service_id=" .. bench.service_id .. "&plan_id=" .. bench.plan_instant
end

function request()
  local id
  if first <= last then
    id = to_delete[first]
    to_delete[first] = nil
    first = first + 1
    kind_of[id] = "DELETE"
    return wrk.format("DELETE", "/v2/service_instances/" .. id .. delete_query,
                      bench.headers({["X-Broker-API-Request-Identity"] = id}))
  end
  counter = (counter or 0) + 1
  id = prefix .. counter
  kind_of[id] = "PUT"
  put_headers["X-Broker-API-Request-Identity"] = id
  return wrk.format("PUT", "/v2/service_instances/" .. id, put_headers, body)
end

function response(status, headers)
  local id, kind = bench.answered(headers, kind_of)
  bench.count(counts, kind .. " " .. status)
  if kind == "PUT" and status == 201 then
    last = last + 1
    to_delete[last] = id
  end
end

function done(summary, latency)
  bench.done(summary, latency, {["PUT 201"] = true, ["DELETE 200"] = true}, "DELETE 200")
end
