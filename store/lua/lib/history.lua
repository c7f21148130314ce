-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: history" line.
-- An operation's history: one JSON object per line in its `history` field, the oldest lines
-- dropped past 4 KB. A field of the hash, not a key of its own: no key to create per
-- operation, and it expires with the operation.

-- What the fields say is not written again (docs/decisions/0041): claim.lua leaves an
-- operation's first claim out of an empty history (started_ms, worker and attempt 1 say it),
-- finish.lua a worker's outcome (state, finished_ms, worker and description). The first other
-- event writes the first claim out before itself, so the history stays in order; osbq-ctl
-- (store_history.c) shows both as lines like the others.

-- The history h (the field's value, or false/nil) with event appended; op: the operation's
-- started_ms and worker as read before this script changed them.
local function history_with(h, event, op)
  if not h and op.started_ms then
    h = cjson.encode({ms = tonumber(op.started_ms), event = 'claimed', worker = op.worker or nil,
                      attempt = 1})
  end
  local line = cjson.encode(event)
  if h and #h > 4096 then
    local cut = string.find(h, '\n', #h - 4096, true)
    h = cut and string.sub(h, cut + 1) or nil
  end
  return h and (h .. '\n' .. line) or line
end

-- Appends event to the history of op_key (for scripts that did not read it already: the hot
-- path's read it with the rest of the operation and write it with the rest). Called before the
-- script changes the operation's worker.
local function add_history(op_key, event)
  local op = redis.call('HMGET', op_key, 'history', 'started_ms', 'worker')
  redis.call('HSET', op_key, 'history',
             history_with(op[1], event, {started_ms = op[2], worker = op[3]}))
end
