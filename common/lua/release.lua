-- A worker gives an operation back without an outcome (it is stopping, or the operation passed
-- its deadline): queued again and due at once, so the recovery loop resends it to another worker.
-- KEYS: 1 operation hash, 2 queue zset
-- ARGV: 1 worker id, 2 now (ms), 3 operation id
-- Returns 1, or 0 when the operation is not this worker's.
-- Appends event to the operation's history: one JSON object per line in its `history` field,
-- the oldest lines dropped past 4 KB. A field of the hash, not a key of its own: no key to
-- create per operation, and it expires with the operation.
local function add_history(op_key, event)
  local line = cjson.encode(event)
  local h = redis.call('HGET', op_key, 'history')
  if h and #h > 4096 then
    local cut = string.find(h, '\n', #h - 4096, true)
    h = cut and string.sub(h, cut + 1) or nil
  end
  redis.call('HSET', op_key, 'history', h and (h .. '\n' .. line) or line)
end
local rec = redis.call('HMGET', KEYS[1], 'state', 'worker')
if rec[1] ~= 'running' or rec[2] ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'state', 'queued')
redis.call('HDEL', KEYS[1], 'worker', 'lease_until')
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
add_history(KEYS[1], {ms = tonumber(ARGV[2]), event = 'released',
                     worker = ARGV[1]})
return 1
