-- One step of the walk that counts the live records lib/record_counts.lua's count does not hold
-- yet: after an upgrade from a release without it, or after osbq-ctl recount dropped it
-- (docs/decisions/0056). The gateways call it until it says the count is built; its cursor is
-- kept in the count's hash, so a gateway that stops leaves the walk to the others and several
-- share it. A record a script counted already (its 'counted' is the gen) is skipped; a key
-- that is not a hash is too.
-- Returns {gen, 1 when the count is built (0 while the walk goes on), records counted by this
-- step}.
-- requires: record_counts (store/lua/lib/record_counts.lua: record_counts_field, _add)
local key_counts = KEYS[1]  -- the live records' count
local arg_prefix = ARGV[1]  -- the key prefix "<ns>:"
local arg_batch = ARGV[2]   -- the keys one SCAN step looks at (its COUNT): of every kind
local counts_gen, counts_built, counts_walk =
  unpack(redis.call('HMGET', key_counts, 'gen', 'built', 'walk'))
local gen, walk = counts_gen, counts_walk
if not gen then
  -- A new count: a gen no record carries yet (the counter outlives the hash).
  gen = tostring(redis.call('INCR', arg_prefix .. 'record_counts_gen'))
  walk = '0'
  redis.call('HSET', key_counts, 'gen', gen, 'walk', walk)
end
if counts_built == gen then return {gen, 1, 0} end

-- One pass over the namespace's keys: instances and bindings are told by their key.
local cursor = string.match(walk or '0', '^(%d+)$') or '0'
local instance_at, binding_at = arg_prefix .. 'instance:', arg_prefix .. 'binding:'
local step = redis.call('SCAN', cursor, 'MATCH', arg_prefix .. '*', 'COUNT', arg_batch)
local counted = 0
for _, key in ipairs(step[2]) do
  local kind = nil
  if string.sub(key, 1, #instance_at) == instance_at then kind = 'i' end
  if string.sub(key, 1, #binding_at) == binding_at then kind = 'b' end
  local v = kind and redis.pcall('HMGET', key, 'state', 'plan_id', 'maintenance_version',
                                 'counted')
  if type(v) == 'table' and not v.err and v[1] and v[1] ~= 'gone' and v[4] ~= gen then
    record_counts_add(key_counts, record_counts_field(kind, v[1], v[2], v[3]), 1)
    redis.call('HSET', key, 'counted', gen)
    counted = counted + 1
  end
end
if step[1] ~= '0' then
  redis.call('HSET', key_counts, 'walk', step[1])
  return {gen, 0, counted}
end
redis.call('HSET', key_counts, 'built', gen)
redis.call('HDEL', key_counts, 'walk')
return {gen, 1, counted}
