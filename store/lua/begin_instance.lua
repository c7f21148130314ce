-- Starts a provision, update or deprovision: takes the instance's exclusive lock and records the
-- operation, or answers why not. One round trip; nothing is written unless the answer is
-- "accepted" (or a waiter is added to an operation already running).
-- Returns {answer, operation id?, dashboard url?, metadata?, "", tenant?}; answers: accepted,
-- in_progress, done, conflict, busy, not_found, gone, changed, mismatch; or {'quota', line,
-- used} when the quota on that line (1-based) is full; or {'capped', in progress, tenant} when
-- the tenant's cap is reached; or {'halting', operation id, "", "", "", tenant, halted
-- operation, its step's worker or ""} when a deprovision halted the provision (arg_halt); or
-- {'protected'} when a deprovision meets an instance its parameters or context protect, or
-- {'delete_capped', deletes this minute, tenant} past the tenant's cap (lib/delete_guard.lua).
-- requires: begin_record (store/lua/lib/begin_record.lua: begin_record)
-- requires: delete_guard (store/lua/lib/delete_guard.lua: delete_guard_take)
-- requires: in_progress (store/lua/lib/in_progress.lua: in_progress_refusal, in_progress_take)
-- requires: join (store/lua/lib/join.lua: join)
-- requires: halt (store/lua/lib/halt.lua: halt, queue_after_halt)
-- requires: fields (store/lua/lib/fields.lua: read_fields)
-- requires: handover (store/lua/lib/handover.lua: handover_claim)
-- requires: record_counts (store/lua/lib/record_counts.lua: record_counts_move)
-- requires: events (store/lua/lib/events.lua: event_add)
local key_instance = KEYS[1]  -- the instance hash
local key_op = KEYS[2]        -- the new operation hash
local key_queue = KEYS[3]     -- the queue zset
local key_waiters = KEYS[4]   -- the new operation's waiters set
local key_bindings = KEYS[5]  -- the instance's set of binding keys
local arg_kind = ARGV[1]                  -- provision, update or deprovision
local arg_operation_id = ARGV[2]          -- the new operation's id
local arg_digest = ARGV[3]                -- the request's idempotency digest
local arg_now = ARGV[4]                   -- ms
local arg_waiting_gateway = ARGV[5]       -- the waiting gateway's id, or ""
local arg_service_id = ARGV[6]            -- service id
local arg_plan_id = ARGV[7]               -- plan id
local arg_parameters = ARGV[8]            -- JSON, or ""
local arg_context = ARGV[9]               -- JSON, or ""
local arg_maintenance_version = ARGV[10]  -- or ""
local arg_dashboard_url = ARGV[11]        -- or ""
local arg_job = ARGV[12]                  -- the encoded job
local arg_claim_deadline = ARGV[13]       -- ms
local arg_expected_plan_id = ARGV[14]     -- the expected current plan, or ""
local arg_prefix = ARGV[15]               -- the key prefix "<ns>:"
local arg_instance_id = ARGV[16]          -- instance id
local arg_api_version = ARGV[17]          -- the request's API version
local arg_quotas = ARGV[18]               -- the counters (common/policy.h) the instance holds:
                                          -- lines "<limit> <key>"; "" for none; "-" on an update
                                          -- that keeps the plan (its counters stay as they are)
local arg_platform = ARGV[19]             -- the platform asking: recorded on a new instance; an
                                          -- instance another platform made answers as if it did not
                                          -- exist (provision over a live one: conflict)
local arg_tenant = ARGV[20]               -- whose work it is (docs/reliability.md, fairness):
                                          -- recorded on a new instance; every operation of the
                                          -- instance is its instance's tenant's (this one for an
                                          -- instance recorded before tenants were)
local arg_in_progress_cap = ARGV[21]      -- the most operations the operation's tenant may have in
                                          -- progress (OSBQ_POLICY in_progress_per_tenant), or ""
                                          -- when its platform has no cap; a deprovision is counted
                                          -- but never refused
local arg_handed_worker = ARGV[22]        -- the worker a new operation is handed to (claimed for it
                                          -- here, docs/decisions/0042), or "": queued for any
                                          -- worker's claim
local arg_handed_until = ARGV[23]         -- with handed_worker: the hand-over's lease
                                          -- end, ms; or ""
local arg_halt = ARGV[24]                 -- "1": a deprovision halts a provision that holds
                                          -- the instance (the plan's halt_on_delete,
                                          -- lib/halt.lua) instead of answering busy; or ""
local arg_deletion_protection = ARGV[25]  -- provision, update: "1" when the parameters and
                                          -- context in force after it ask that the instance be
                                          -- not deleted, "0" when not, "" not said (an older
                                          -- gateway: an update keeps what the instance has)
local arg_delete_cap = ARGV[26]           -- deprovision: the most deletes of usable records its
                                          -- tenant may make a minute (OSBQ_POLICY
                                          -- deletes_per_minute_per_tenant), or "" for none
local arg_events_max = ARGV[27]           -- the events the audit trail keeps (OSBQ_EVENTS_MAX,
                                          -- lib/events.lua), "0" for none
local arg_user = ARGV[28]                 -- who asked (X-Broker-API-Originating-Identity,
                                          -- decoded), or ""
local arg_request_id = ARGV[29]           -- X-Broker-API-Request-Identity, or ""
local inst, op_key, queue = key_instance, key_op, key_queue
local kind, op_id, digest, now = arg_kind, arg_operation_id, arg_digest, arg_now
local gateway, prefix, platform = arg_waiting_gateway, arg_prefix, arg_platform
local cap = tonumber(arg_in_progress_cap) -- nil: no cap, and no command run for one
-- Handed (lib/handover.lua): a new operation is recorded as claimed for that worker.
local handed = arg_handed_worker ~= ''

-- The instance in one HMGET, each field into the local inst_<field>, in the order asked (a
-- deprovision checks its service, an update or a deprovision reads its quotas: read with the
-- rest, one read of the record).
local inst_state, inst_digest, inst_lock_x, inst_lock_s, inst_last_op, inst_plan_id,
      inst_dashboard_url, inst_metadata, inst_platform, inst_tenant, inst_service_id,
      inst_quota_keys, inst_deletion_protection =
  unpack(redis.call('HMGET', inst,
                    'state', 'digest', 'lock_x', 'lock_s', 'last_op', 'plan_id', 'dashboard_url',
                    'metadata', 'platform', 'tenant', 'service_id', 'quota_keys',
                    'deletion_protection'))
local lock_s = tonumber(inst_lock_s or '0')
-- Records from before platforms were recorded belong to the default platform.
local theirs = inst_state and (inst_platform or 'default') ~= platform

-- Quotas: every counter counts the instances that hold it (their 'quota_keys' field); taking
-- one checks all first, so a refusal writes nothing. finish.lua gives them back.
local function parse_quotas(spec)
  local list = {}
  for limit, key in string.gmatch(spec, '(%d+) ([^\n]+)') do
    list[#list + 1] = {key = key, limit = tonumber(limit)}
  end
  return list
end

local function quota_refusal(list, held)
  for i, q in ipairs(list) do
    if not held[q.key] then
      local used = tonumber(redis.call('GET', q.key) or '0')
      if used >= q.limit then return {'quota', tostring(i), tostring(used)} end
    end
  end
  return nil
end

-- Counts the instance against every quota of list it does not hold yet; returns what it took.
local function quota_take(list, held)
  local taken = {}
  for _, q in ipairs(list) do
    if not held[q.key] then
      redis.call('INCR', q.key)
      taken[#taken + 1] = q.key
    end
  end
  return table.concat(taken, '\n')
end

local function quota_key_list(list)
  local keys = {}
  for _, q in ipairs(list) do keys[#keys + 1] = q.key end
  return table.concat(keys, '\n')
end

-- Only what finish.lua cannot find elsewhere is recorded, so an operation that waits for
-- hours stays small: the instance's and its bindings' keys are written only when they are not
-- plain "<prefix>instance:<id>" and "<prefix>bindings:<id>" (an id store_keys.c had to encode);
-- parameters, context and maintenance version only for an update, whose finish applies them
-- (a provision wrote them to the instance already), and its digest, which an identical update
-- joins by (a provision's or deprovision's is the instance's); the previous plan only when
-- it differs; `waited`, the id of the gateway that waits for the outcome (finish.lua wakes
-- it; a second one that joins moves both to the waiters set); no service_id (the instance's)
-- nor attempt (claims says it), docs/decisions/0041. Its platform unless it is the default one,
-- so that a poll naming the operation reads it alone (docs/decisions/0043).
-- One write of the operation and one of the instance: inst_fields (a provision's new
-- instance) go with the lock.
local quotas_held -- a deprovision's: the instance's quota counters, or nil when it holds none
-- A deprovision that halted the provision (lib/halt.lua) waits for it, not handed to anyone:
-- 'after' names it, and finish.lua makes the deprovision due once it ended.
local after, after_due
local function record(plan_id, prev_plan, inst_fields)
  local tenant = inst_tenant or arg_tenant
  if after then handed = false end
  local fields = {'kind', kind, 'instance', arg_instance_id, 'plan_id', plan_id,
                  'state', (after and 'waiting') or (handed and 'running') or 'queued',
                  'created_ms', now,
                  'api', arg_api_version, 'job', arg_job, 'tenant', tenant}
  local function add(name, value)
    fields[#fields + 1], fields[#fields + 2] = name, value
  end
  if inst ~= prefix .. 'instance:' .. arg_instance_id then add('instance_key', inst) end
  if key_bindings ~= prefix .. 'bindings:' .. arg_instance_id then
    add('bindings_key', key_bindings)
  end
  if prev_plan ~= '' and prev_plan ~= plan_id then add('prev_plan_id', prev_plan) end
  -- The instance's operations chained newest first (osbq-ctl instance reads them by id).
  if inst_last_op then add('prev_op', inst_last_op) end
  if kind == 'update' then
    add('digest', digest)
    if arg_parameters ~= '' then add('parameters', arg_parameters) end
    if arg_context ~= '' then add('context', arg_context) end
    if arg_maintenance_version ~= '' then add('maintenance_version', arg_maintenance_version) end
    if arg_deletion_protection ~= '' then add('deletion_protection', arg_deletion_protection) end
  end
  if quotas_held then add('quotas_held', quotas_held) end
  begin_record(prefix, {op_key = op_key, op_id = op_id, queue = queue, fields = fields,
                        add = add, tenant = tenant, platform = platform, gateway = gateway,
                        cap = cap, claim_deadline = arg_claim_deadline, handed = handed,
                        handed_worker = arg_handed_worker, handed_until = arg_handed_until,
                        now = now, after = after, after_due = after_due,
                        record_key = inst, record_fields = inst_fields})
  event_add(prefix, arg_events_max, 'accepted', 'kind', kind, 'operation', op_id,
            'instance', arg_instance_id, 'plan', plan_id, 'platform', platform, 'tenant', tenant,
            'user', arg_user, 'request', arg_request_id, 'halts', after)
  return {'accepted', op_id, inst_dashboard_url or '', inst_metadata or '', '', tenant}
end

-- A refusal an auditor asks about in the audit trail (lib/events.lua), then the answer: a
-- quota or the in-progress cap (the policy's), the deletion guard, a delete's 422
-- ConcurrencyError ('busy').
local function audit_refusal(reply)
  event_add(prefix, arg_events_max, 'refused', 'kind', kind, 'reason', reply[1],
            'instance', arg_instance_id, 'plan', arg_plan_id ~= '' and arg_plan_id or inst_plan_id,
            'platform', platform, 'tenant', inst_tenant or arg_tenant, 'user', arg_user,
            'request', arg_request_id)
  return reply
end

-- The identical provision or update in progress: joined, its 202 carrying the dashboard as the
-- first one did (spec: "MUST return it with the initial response").
local function join_with_dashboard()
  local joined = join(prefix, inst_lock_x, gateway)
  joined[3] = inst_dashboard_url or ''
  return joined
end

if kind == 'provision' then
  -- Another platform's id stays its own until deleted (a failed one too: its platform may
  -- still deprovision it).
  if theirs and inst_state ~= 'gone' then return {'conflict'} end
  if inst_state and inst_state ~= 'failed' and inst_state ~= 'gone' then
    if inst_digest ~= digest then return {'conflict'} end
    if inst_state == 'provisioned' then
      if inst_lock_x or lock_s > 0 then return {'busy'} end
      return {'done', inst_last_op, inst_dashboard_url or '', inst_metadata or ''}
    end
    -- provisioning: the lock holder is the provision itself
    if not inst_lock_x then return {'busy'} end
    return join_with_dashboard()
  end
  if inst_lock_x or lock_s > 0 then return {'busy'} end
  local quotas = parse_quotas(arg_quotas)
  local refused = quota_refusal(quotas, {})
  if not refused and cap then refused = in_progress_refusal(prefix, arg_tenant, cap) end
  if refused then return audit_refusal(refused) end
  -- A failed or deleted instance's record is replaced whole, and counted anew.
  local _, counted = record_counts_move(prefix .. 'record_counts', inst, 'i', not inst_state,
                                        'provisioning', arg_plan_id, arg_maintenance_version)
  if inst_state then redis.call('DEL', inst) end
  local fields = {'instance_id', arg_instance_id, 'service_id', arg_service_id,
                  'plan_id', arg_plan_id, 'state', 'provisioning', 'digest', digest,
                  'created_ms', now, 'platform', platform, 'tenant', arg_tenant}
  local taken = quota_take(quotas, {})
  local function add_unless_empty(name, value)
    if value ~= '' then fields[#fields + 1], fields[#fields + 2] = name, value end
  end
  add_unless_empty('quota_keys', taken)
  add_unless_empty('parameters', arg_parameters)
  add_unless_empty('context', arg_context)
  add_unless_empty('maintenance_version', arg_maintenance_version)
  add_unless_empty('dashboard_url', arg_dashboard_url)
  if arg_deletion_protection == '1' then add_unless_empty('deletion_protection', '1') end
  add_unless_empty('counted', counted or '')
  inst_dashboard_url = arg_dashboard_url
  inst_tenant = arg_tenant
  return record(arg_plan_id, '', fields)
end

if kind == 'update' then
  if inst_state ~= 'provisioned' or theirs then return {'not_found'} end
  if inst_lock_x then
    local running = read_fields(prefix .. 'op:' .. inst_lock_x, {'kind', 'digest'})
    if running.kind == 'update' and running.digest == digest then
      return join_with_dashboard()
    end
    return {'busy'}
  end
  if lock_s > 0 then return {'busy'} end
  local expected = arg_expected_plan_id
  if expected ~= '' and expected ~= inst_plan_id then return {'changed'} end
  local target = arg_plan_id ~= '' and arg_plan_id or inst_plan_id
  local capped = cap and in_progress_refusal(prefix, inst_tenant or arg_tenant, cap)
  if arg_quotas == '-' then
    if capped then return audit_refusal(capped) end
    return record(target, inst_plan_id, {})
  end
  -- A plan change counts against the new plan's quotas now; finish.lua gives back the old
  -- plan's on success, or what was taken here on failure.
  local held = {}
  for key in string.gmatch(inst_quota_keys or '', '[^\n]+') do
    held[key] = true
  end
  local quotas = parse_quotas(arg_quotas)
  local refused = quota_refusal(quotas, held) or capped
  if refused then return audit_refusal(refused) end
  local reply = record(target, inst_plan_id, {})
  redis.call('HSET', op_key, 'quota_taken', quota_take(quotas, held), 'quota_keys',
             quota_key_list(quotas))
  return reply
end

if kind == 'deprovision' then
  if not inst_state or inst_state == 'gone' or theirs then return {'gone'} end
  -- The job runs the backend of the plan it names: it must be the instance's.
  if arg_plan_id ~= inst_plan_id or arg_service_id ~= inst_service_id then
    return {'mismatch', '', '', ''}
  end
  local halted_worker
  if inst_lock_x then
    local running = redis.call('HGET', prefix .. 'op:' .. inst_lock_x, 'kind')
    if running == 'deprovision' then return join(prefix, inst_lock_x, gateway) end
    -- Spec, Deprovisioning: a delete accepted during the provision "MUST have the net effect of
    -- halting the current creation process and beginning the deletion".
    if running ~= 'provision' or arg_halt ~= '1' or lock_s > 0 then
      return audit_refusal({'busy'})
    end
    after = inst_lock_x
    halted_worker, after_due = halt(prefix, queue, after, op_id, now, arg_claim_deadline)
  end
  if lock_s > 0 then return audit_refusal({'busy'}) end
  -- The deletion guard spares a delete of an instance never usable (a provision failed or
  -- halted: the platform's orphan mitigation).
  if inst_state == 'provisioned' then
    if inst_deletion_protection == '1' then return audit_refusal({'protected'}) end
    local delete_cap = tonumber(arg_delete_cap)
    local capped = delete_cap and delete_guard_take(prefix, inst_tenant or arg_tenant, delete_cap,
                                                    now)
    if capped then return audit_refusal(capped) end
  end
  -- The quotas finish.lua gives back, as read here (the lock keeps them as they are): it need
  -- not read the instance for them.
  if inst_quota_keys then quotas_held = inst_quota_keys end
  local reply = record(inst_plan_id, inst_plan_id, {})
  if not after then return reply end
  return {'halting', op_id, '', '', '', reply[6], after, halted_worker or ''}
end

return redis.error_reply('unknown operation kind ' .. kind)
