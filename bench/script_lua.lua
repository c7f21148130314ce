-- What the Lua of the hot scripts costs alone, outside Redis (issue 29, docs/benchmarks.md
-- "osbq's own Redis work per lifecycle"): each script of store/lua/ as cmake/EmbedScripts.cmake
-- builds it (its "-- requires:" libraries prepended), run N times in Lua 5.1 (the interpreter
-- Redis embeds) with redis.call answered from a table of canned replies, so the time is the
-- scripts' own Lua and nothing of Redis: not the commands, nor Redis's conversion of each
-- redis.call's arguments and reply. Beside bench/script_cost.py's per-call figures it says how
-- much of a call is Lua.
--
-- usage: lua5.1 bench/script_lua.lua [N]   (default 200000; apt-get install lua5.1)
local n = tonumber(arg[1] or '200000')
local source_dir = (arg[0]:match('^(.*)/bench/[^/]*$') or '.') .. '/store/lua/'

local function read(path)
  local f = assert(io.open(path))
  local text = f:read('*a')
  f:close()
  return text
end

-- As cmake/EmbedScripts.cmake: each required library prepended, in the order of the lines.
local function build(name)
  local text = read(source_dir .. name .. '.lua')
  for lib in text:gmatch('\n%-%- requires: ([a-z_]+)') do
    text = read(source_dir .. 'lib/' .. lib .. '.lua') .. text
  end
  return assert(loadstring('local KEYS, ARGV = ...\n' .. text, name))
end

local id = '0f8e2a4c-1b7d-4e55-9a3c-6d2f8b1e7a90'
local binding_id = '7c1d9e2f-3a4b-4c5d-8e6f-9a0b1c2d3e4f'
local job = string.rep('j', 180)
local now = '1764280000000'

-- Replies by command and key; Redis answers a missing field of HMGET with false.
local function none(count)
  local t = {}
  for i = 1, count do t[i] = false end
  return t
end
local function op_record(kind, binding)
  return {'running', 'worker-1', kind, false, 'plan-1', false, false, false, now, false, false,
          false, false, id, binding or false, 'default/org-1', '1764280060000', false, false,
          false, now, false, false}
end
local replies -- set per case: key -> HMGET reply
local calls = 0
redis = {
  call = function(command, key)
    calls = calls + 1
    if command == 'HMGET' then return replies[key] or error('no reply for ' .. key) end
    if command == 'HINCRBY' or command == 'DECR' then return 0 end
    if command == 'SMEMBERS' then return {} end
    if command == 'HGET' or command == 'GET' then return false end
    return 1
  end,
  error_reply = function(text) return {err = text} end,
}
cjson = {encode = function() return '{}' end}

local instance_key = 't:instance:' .. id
local binding_key = 't:binding:' .. id .. ':' .. binding_id
local cases = {
  {
    label = 'begin_instance provision', script = 'begin_instance',
    keys = {instance_key, 't:op:o1', 't:queue', 't:waiters:o1', 't:bindings:' .. id},
    argv = {'provision', 'o1', 'digest', now, 'gw-1', 'svc-1', 'plan-1', '{}', '{}', '', '', job,
            '1764280030000', '', 't:', id, '2.17', '', 'default', 'default/org-1', '',
            'worker-1', '1764280060000'},
    replies = {[instance_key] = none(12)},
  },
  {
    label = 'begin_binding bind', script = 'begin_binding',
    keys = {instance_key, binding_key, 't:op:o2', 't:queue', 't:waiters:o2',
            't:bindings:' .. id},
    argv = {'bind', 'o2', 'digest', now, 'gw-1', 'svc-1', 'plan-1', '{}', '{}', '', job,
            '1764280030000', 't:', id, binding_id, '2.17', '', '', 'default', 'default/org-1',
            '', 'worker-1', '1764280060000'},
    replies = {[instance_key] = {'provisioned', false, 'svc-1', 'plan-1', false,
                                 'default/org-1'},
               [binding_key] = none(8)},
  },
  {
    label = 'finish provision', script = 'finish',
    keys = {'t:op:o1', 't:queue', 't:waiters:o1'},
    argv = {'worker-1', '1', 'Provisioned.', '', '', '1', '1', now, '604800', 't:', 'o1', '', ''},
    replies = {['t:op:o1'] = op_record('provision')},
  },
  {
    label = 'finish bind', script = 'finish',
    keys = {'t:op:o2', 't:queue', 't:waiters:o2'},
    argv = {'worker-1', '1', 'Bound.', '', '', '1', '1', now, '604800', 't:', 'o2',
            '{"credentials":{"uri":"redis://u:p@h:6379/0"}}', ''},
    replies = {['t:op:o2'] = op_record('bind', binding_id)},
  },
}

print(string.format('%-26s %12s %18s', 'script', 'us per call', 'redis.call per call'))
for _, case in ipairs(cases) do
  local script, keys, argv = build(case.script), case.keys, case.argv
  replies = case.replies
  local answer = script(keys, argv)
  assert(answer == 1 or (type(answer) == 'table' and answer[1] == 'accepted'),
         case.label .. ': not the path measured')
  calls = 0
  collectgarbage('collect')
  local started = os.clock()
  for _ = 1, n do script(keys, argv) end
  local seconds = os.clock() - started
  print(string.format('%-26s %12.2f %18.1f', case.label, seconds / n * 1e6, calls / n))
end
