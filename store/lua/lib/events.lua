-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: events" line.
-- The audit trail (docs/events.md, docs/decisions/0057): one Redis stream per namespace,
-- "<prefix>events", each entry a fact in the same script call that records it; the entry's id
-- is its time (Redis's clock, ms). The gateways keep its bounds (OSBQ_EVENTS_MAX entries,
-- OSBQ_EVENTS_MAX_AGE_S) by XTRIM now and then, not each append: XADD's own MAXLEN costs half
-- as much again as the append.

-- Appends an event of type kind ('accepted', 'ended', 'operator', 'refused') with the names
-- and values that follow, in pairs; a value false, nil or '' leaves its pair out. Nothing when
-- max is '' or '0' (events off).
local function event_add(prefix, max, kind, ...)
  if max == nil or max == '' or max == '0' then return end
  -- One table, its pairs moved down over those left out: the entry costs no second table.
  local entry, n = {'event', kind, ...}, 2
  for i = 3, select('#', ...) + 2, 2 do
    local value = entry[i + 1]
    if value and value ~= '' then
      entry[n + 1], entry[n + 2] = entry[i], value
      n = n + 2
    end
  end
  redis.call('XADD', prefix .. 'events', '*', unpack(entry, 1, n))
end
