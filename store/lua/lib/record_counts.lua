-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: record_counts" line.
-- The count of live instances and bindings (state not gone) by kind, state, plan and
-- maintenance version, kept in one hash "<prefix>record_counts" by every script that creates
-- a record or changes one of those fields (docs/decisions/0056): osbq-ctl stats and the
-- gateways' osbq_instances gauges read it instead of walking every record.
-- The hash's 'gen' names the generation of the count; a record counted in it carries
-- 'counted' = that gen. A record that does not is not in the count yet: the first script that
-- changes it counts it as it is after the change, and count_records.lua (the gateways' walk
-- after an upgrade, or after osbq-ctl recount dropped the hash) counts the others; 'built' =
-- gen once that walk is over. Without a 'gen' (before the first walk starts) nothing is kept.
-- Fields: "<i|b>\n<state>\n<plan id>\n<maintenance version>", a count each; a line that falls
-- to 0 stays (their number is bounded by the plans, states and versions in use), so a move
-- costs two HINCRBY at most.

local function record_counts_field(kind, state, plan, version)
  return kind .. '\n' .. state .. '\n' .. (plan or '') .. '\n' .. (version or '')
end

local function record_counts_add(index, field, delta)
  redis.call('HINCRBY', index, field, delta)
end

-- Moves record key of kind ('i' or 'b') in the count, before the script writes it: from what
-- it holds now (not read when absent is true: the caller knows there is no record) to state,
-- plan and version (each nil: unchanged; version '' for none; state 'gone': not counted).
-- Returns the gen the record must carry as 'counted' when it does not yet (the caller writes
-- it with the record, or record_counts_mark), else nil; and the gen (a record the caller
-- replaces whole carries it whatever it carried). Nothing without a count.
local function record_counts_move(index, key, kind, absent, state, plan, version)
  local gen = redis.call('HGET', index, 'gen')
  if not gen then return nil, nil end
  local v = {}
  if not absent then
    v = redis.call('HMGET', key, 'state', 'plan_id', 'maintenance_version', 'counted')
  end
  local was, is = nil, nil
  if v[4] == gen and v[1] and v[1] ~= 'gone' then
    was = record_counts_field(kind, v[1], v[2], v[3])
  end
  local now = state or v[1]
  if now and now ~= 'gone' then
    is = record_counts_field(kind, now, plan or v[2], version or v[3])
  end
  if was ~= is then
    if was then record_counts_add(index, was, -1) end
    if is then record_counts_add(index, is, 1) end
  end
  if is and v[4] ~= gen then return gen, gen end
  return nil, gen
end

-- Writes the mark record_counts_move asked for (mark nil: nothing).
local function record_counts_mark(key, mark)
  if mark then redis.call('HSET', key, 'counted', mark) end
end
