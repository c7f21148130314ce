-- Case 1: GET /v2/catalog with the broker's Authorization and X-Broker-API-Version headers
-- (given with wrk -H). The same script loads nginx and bench/bare_mhd.c, which ignore the
-- headers and answer the same bytes: the three rates differ only in the server.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = dir .. "?.lua;" .. package.path
local bench = require("common")

local request_bytes
counts = {}

setup = bench.setup

function init()
  request_bytes = wrk.format("GET", "/v2/catalog", bench.headers())
end

function request()
  return request_bytes
end

function response(status)
  bench.count(counts, tostring(status))
end

function done(summary, latency)
  bench.done(summary, latency, {["200"] = true})
end
