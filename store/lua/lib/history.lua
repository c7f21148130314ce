-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: history" line.
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
