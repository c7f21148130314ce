-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: history" line.
-- An operation's history: one JSON object per line in its `history` field, the oldest lines
-- dropped past 4 KB. A field of the hash, not a key of its own: no key to create per
-- operation, and it expires with the operation.

-- The history h (the field's value, or false/nil) with event appended.
local function history_with(h, event)
  local line = cjson.encode(event)
  if h and #h > 4096 then
    local cut = string.find(h, '\n', #h - 4096, true)
    h = cut and string.sub(h, cut + 1) or nil
  end
  return h and (h .. '\n' .. line) or line
end

-- Appends event to the history of op_key (for scripts that did not read it already: the hot
-- path's read it with the rest of the operation and write it with the rest).
local function add_history(op_key, event)
  redis.call('HSET', op_key, 'history', history_with(redis.call('HGET', op_key, 'history'), event))
end
