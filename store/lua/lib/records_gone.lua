-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: records_gone" line.
-- What an instance's end does to what it holds, the same whether a deprovision ended it
-- (finish.lua) or an operator purged it (purge.lua, docs/decisions/0053). Scripts that require
-- it require record_counts after it (lib/record_counts.lua: a binding gone leaves the count).

-- Gives back the quota counters keys_text names (one key a line; begin_instance.lua took them),
-- except those in keep (a set of keys).
local function quota_release(keys_text, keep)
  for key in string.gmatch(keys_text or '', '[^\n]+') do
    if not keep[key] and tonumber(redis.call('DECR', key)) <= 0 then redis.call('DEL', key) end
  end
end

-- A binding that goes with its instance, or is purged: fields written (its state, and a purge's
-- tombstone fields), its credentials and lock dropped, kept until retention (s). Its last
-- operation, a poll of which reads the operation alone (docs/decisions/0043), says the binding
-- went: that poll asks last_operation.lua, which answers 404.
local function binding_gone(prefix, binding_key, retention, fields)
  record_counts_move(prefix .. 'record_counts', binding_key, 'b', false, 'gone')
  local last_op = redis.call('HGET', binding_key, 'last_op')
  if last_op and redis.call('EXISTS', prefix .. 'op:' .. last_op) == 1 then
    redis.call('HSET', prefix .. 'op:' .. last_op, 'record_gone', '1')
  end
  redis.call('HSET', binding_key, unpack(fields))
  redis.call('HDEL', binding_key, 'result', 'lock_x')
  redis.call('EXPIRE', binding_key, retention)
end
