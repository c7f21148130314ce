-- Case 4: full synchronous lifecycles. Each instance goes through four synchronous requests,
-- each sent once the previous one was answered: provision (PUT, 201), bind (PUT, 201), unbind
-- (DELETE, 200), deprovision (DELETE, 200), on the instant plan (sim, 0 ms).
--
-- As in sync_cycle.lua, wrk 4.1 tells response() nothing about the request it answers, so each
-- request carries its instance id in X-Broker-API-Request-Identity, which the gateway echoes;
-- an instance has at most one request in flight, so the id tells which step was answered. The
-- next step goes on this thread's FIFO and request() sends it before starting a new instance.
-- Arguments after "--": tag=<id prefix>, plan=<plan id> (default the instant plan; the
-- scale_out case's cpu plan, bench/scale_out.py).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local bench = require("common")

local prefix, counter, body, bind_body, json_headers, query
local pending, first, last = {}, 1, 0 -- FIFO of {id, step}
local step_of = {}                     -- id -> the step in flight
local next_step = {provision = "bind", bind = "unbind", unbind = "deprovision"}
local expected_status = {provision = 201, bind = 201, unbind = 200, deprovision = 200}
counts = {}

setup = bench.setup

function init(args)
  local opts = bench.options(args)
  prefix = (opts.tag or "l") .. "-" .. thread_no .. "-"
  local plan = opts.plan or bench.plan_instant
  body = bench.provision_body(plan)
  bind_body = '{"service_id":"' .. bench.service_id .. '","plan_id":"' .. plan .. '"}'
  json_headers = bench.headers({["Content-Type"] = "application/json"})
  query = "?service_id=" .. bench.service_id .. "&plan_id=" .. plan
end

local function send(id, step)
  step_of[id] = step
  local instance = "/v2/service_instances/" .. id
  local binding = instance .. "/service_bindings/" .. id .. "-b"
  if step == "provision" or step == "bind" then
    json_headers["X-Broker-API-Request-Identity"] = id
    return wrk.format("PUT", step == "provision" and instance or binding, json_headers,
                      step == "provision" and body or bind_body)
  end
  return wrk.format("DELETE", (step == "unbind" and binding or instance) .. query,
                    bench.headers({["X-Broker-API-Request-Identity"] = id}))
end

function request()
  if first <= last then
    local item = pending[first]
    pending[first] = nil
    first = first + 1
    return send(item[1], item[2])
  end
  counter = (counter or 0) + 1
  return send(prefix .. counter, "provision")
end

function response(status, headers)
  local id, step = bench.answered(headers, step_of)
  bench.count(counts, step .. " " .. status)
  if status == expected_status[step] and next_step[step] then
    last = last + 1
    pending[last] = {id, next_step[step]}
  end
end

function done(summary, latency)
  bench.done(summary, latency, {["provision 201"] = true, ["bind 201"] = true,
                                ["unbind 200"] = true, ["deprovision 200"] = true},
             "deprovision 200")
end
