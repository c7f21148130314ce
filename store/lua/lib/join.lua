-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: join" line.
-- A request identical to the operation already running waits for it (gateway: the waiting
-- gateway's id, for a synchronous request) or gets its id ("" : asynchronous). The first
-- gateway to wait is the operation's 'waited' (the begin script wrote it); a second one moves
-- both to the operation's waiters set ('waited' becomes '*'), which finish.lua reads.
local function join(prefix, running, gateway)
  if gateway ~= '' then
    local running_key, set_key = prefix .. 'op:' .. running, prefix .. 'waiters:' .. running
    local first = redis.call('HGET', running_key, 'waited')
    if first and first ~= '*' then redis.call('SADD', set_key, first) end
    redis.call('SADD', set_key, gateway)
    redis.call('PEXPIRE', set_key, 86400000)
    redis.call('HSET', running_key, 'waited', '*')
  end
  return {'in_progress', running}
end
