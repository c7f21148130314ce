-- osbq-ctl purge: the broker forgets an instance (with its bindings) or one binding without
-- calling any backend (docs/ctl.md, docs/decisions/0053): the backend's object was removed by
-- hand, or its platform was torn down. What a successful deprovision (unbind) does to the
-- records, in one step: quotas given back, bindings gone, each record left as a tombstone
-- (state gone, purged_ms, purged_by) that expires after the retention, so a platform's later
-- DELETE gets 410 and its GET 404.
-- Returns {1, bindings purged with it}, {0} when there is no such record or it is gone already,
-- or {2, operation id} when an operation of it runs (its lock: osbq-ctl purge --force fails it
-- first, then asks again).
-- requires: records_gone (store/lua/lib/records_gone.lua: quota_release, binding_gone)
-- requires: record_counts (store/lua/lib/record_counts.lua: record_counts_move)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
-- requires: events (store/lua/lib/events.lua: event_add)
local key_record = KEYS[1]    -- the instance's or the binding's hash
local key_bindings = KEYS[2]  -- the instance's set of live bindings
local arg_prefix = ARGV[1]     -- the key prefix "<ns>:"
local arg_binding = ARGV[2]    -- "1": the record is a binding; "0": an instance
local arg_now = ARGV[3]        -- ms
local arg_retention = ARGV[4]  -- s
local arg_by = ARGV[5]         -- who purged it (osbq-ctl: the OS user)
local arg_events_max = ARGV[6] -- the events the audit trail keeps (OSBQ_EVENTS_MAX), "0": none
local prefix, retention, bindings_set = arg_prefix, tonumber(arg_retention), key_bindings
local tombstone = {'state', 'gone', 'purged_ms', arg_now, 'purged_by', arg_by}

local record = read_fields(key_record, {'state', 'lock_x', 'lock_s', 'quota_keys', 'instance_id',
                                        'binding_id', 'plan_id', 'platform', 'tenant'})
if not record.state or record.state == 'gone' then return {0} end
if record.lock_x then return {2, record.lock_x} end

-- The purge in the audit trail (lib/events.lua), with the OS user that ran it.
local function purged(bindings)
  event_add(prefix, arg_events_max, 'operator', 'action', 'purge',
            'instance', record.instance_id, 'binding', record.binding_id, 'plan', record.plan_id,
            'platform', record.platform or 'default', 'tenant', record.tenant, 'by', arg_by,
            'bindings', bindings and tostring(bindings) or nil)
end

if arg_binding == '1' then
  binding_gone(prefix, key_record, retention, tombstone)
  redis.call('SREM', bindings_set, key_record)
  purged(nil)
  return {1, 0}
end

local bindings = redis.call('SMEMBERS', bindings_set)
-- A binding operation holds the instance shared (lock_s) and its binding exclusively.
if tonumber(record.lock_s or '0') > 0 then
  for _, bkey in ipairs(bindings) do
    local holder = redis.call('HGET', bkey, 'lock_x')
    if holder then return {2, holder} end
  end
end
for _, bkey in ipairs(bindings) do binding_gone(prefix, bkey, retention, tombstone) end
if #bindings > 0 then redis.call('DEL', bindings_set) end
-- Its quota counters, as a deprovision's finish gives them back.
quota_release(record.quota_keys, {})
record_counts_move(prefix .. 'record_counts', key_record, 'i', false, 'gone')
redis.call('HSET', key_record, unpack(tombstone))
redis.call('HDEL', key_record, 'quota_keys', 'lock_s')
redis.call('EXPIRE', key_record, retention)
purged(#bindings)
return {1, #bindings}
