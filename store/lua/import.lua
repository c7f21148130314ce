-- osbq-ctl import writes one instance of an export file in one step, so that an instance is in
-- the target whole or not at all (docs/ctl.md, "export and import"; docs/decisions/0055): its
-- hash, its bindings' hashes and its bindings set, its finished operations (expiring after the
-- retention, as finished ones do), and one more instance on each quota counter it holds (the
-- target's limits are not checked: the instance exists already, it only moves).
-- An instance id the target holds already is refused, nothing written; the same record as the
-- one it would write (the same file imported again, or SCAN's rare second sight of an instance
-- during the export) is reported as such, not as a clash (sealed values compared as sealed). A gone record (a tombstone) is
-- replaced, as a provision replaces it.
-- Returns {1} written, {2} the same record is there already, {0, its state} the id is taken.
-- requires: record_counts (store/lua/lib/record_counts.lua: record_counts_move)
-- requires: events (store/lua/lib/events.lua: event_add)
local key_instance = KEYS[1]  -- the instance hash
local key_bindings = KEYS[2]  -- the instance's set of live bindings
local key_counts = KEYS[3]    -- the live records' count (lib/record_counts.lua)
local arg_records = ARGV[1]    -- JSON {"instance": [field, value, ...], "bindings": [[key,
                               -- [field, value, ...]], ...], "operations": [[key, [...]], ...]};
                               -- keys in full and the instance's quota_keys in the target's
                               -- namespace (the store built them)
local arg_retention = ARGV[2]  -- s: how long a finished operation is kept
local arg_prefix = ARGV[3]     -- the key prefix "<ns>:"
local arg_by = ARGV[4]         -- who imported it (osbq-ctl: the OS user)
local arg_events_max = ARGV[5] -- the events the audit trail keeps (OSBQ_EVENTS_MAX), "0": none
local records, retention = cjson.decode(arg_records), tonumber(arg_retention)

-- A flat list of fields and values as a table, locks and the count's mark left out (they are
-- never exported).
local function as_table(list)
  local t, n = {}, 0
  for i = 1, #list, 2 do
    if list[i] ~= 'lock_x' and list[i] ~= 'lock_s' and list[i] ~= 'counted' then
      t[list[i]] = list[i + 1]
      n = n + 1
    end
  end
  return t, n
end

local existing = redis.call('HGETALL', key_instance)
if #existing > 0 then
  local old, old_count = as_table(existing)
  if old.state ~= 'gone' then
    local new, new_count = as_table(records.instance)
    local same = old_count == new_count
    -- Sealed values (parameters, context: decision 0058) are sealed anew by each import, with
    -- a fresh nonce; the record's digest of the request, compared too, vouches for them.
    local function sealed(value) return value and value:sub(1, 5) == 'osbq:' end
    for name, value in pairs(new) do
      if old[name] ~= value and not (sealed(old[name]) and sealed(value)) then same = false end
    end
    if same then return {2} end
    return {0, old.state or ''}
  end
end

-- A record written whole, counted in the live records' count (lib/record_counts.lua) as what
-- it holds; a 'counted' mark of the stack it came from is not written.
local function write_record(key, list, kind, absent)
  local record = as_table(list)
  local _, gen = record_counts_move(key_counts, key, kind, absent, record.state or 'gone',
                                    record.plan_id or '', record.maintenance_version or '')
  local fields = {}
  for name, value in pairs(record) do
    fields[#fields + 1], fields[#fields + 2] = name, value
  end
  if gen then fields[#fields + 1], fields[#fields + 2] = 'counted', gen end
  if not absent then redis.call('DEL', key) end
  redis.call('HSET', key, unpack(fields))
end

write_record(key_instance, records.instance, 'i', #existing == 0)
redis.call('DEL', key_bindings)
for _, binding in ipairs(records.bindings) do
  write_record(binding[1], binding[2], 'b', false)
  redis.call('SADD', key_bindings, binding[1])
end
for _, op in ipairs(records.operations) do
  redis.call('DEL', op[1])
  redis.call('HSET', op[1], unpack(op[2]))
  redis.call('EXPIRE', op[1], retention)
end
local instance = as_table(records.instance)
for key in string.gmatch(instance.quota_keys or '', '[^\n]+') do
  redis.call('INCR', key)
end
event_add(arg_prefix, arg_events_max, 'operator', 'action', 'import',
          'instance', instance.instance_id, 'plan', instance.plan_id,
          'platform', instance.platform or 'default', 'tenant', instance.tenant, 'by', arg_by,
          'bindings', tostring(#records.bindings))
return {1}
