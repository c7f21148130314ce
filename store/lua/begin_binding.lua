-- Starts a bind or unbind: holds the instance in shared mode (lock_s) and the binding
-- exclusively (its lock_x), and records the operation; or answers why not. One round trip;
-- nothing is written unless the answer is "accepted" (or a waiter joins a running operation).
-- Returns {answer, operation id?, "", "", binding result JSON?, tenant?}; answers: accepted,
-- in_progress, done, conflict, busy, no_instance, instance_busy, gone, mismatch,
-- bad_predecessor; or {'capped', in progress, tenant} when the tenant's cap is reached; or
-- {'halting', operation id, "", "", "", tenant, halted operation, its step's worker or ""}
-- when an unbind halted the bind (arg_halt); or {'delete_capped', deletes this minute, tenant}
-- past the tenant's deletion cap (lib/delete_guard.lua).
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
local key_binding = KEYS[2]   -- the binding hash
local key_op = KEYS[3]        -- the new operation hash
local key_queue = KEYS[4]     -- the queue zset
local key_waiters = KEYS[5]   -- the new operation's waiters set
local key_bindings = KEYS[6]  -- the instance's set of binding keys
local arg_kind = ARGV[1]              -- bind or unbind
local arg_operation_id = ARGV[2]      -- the new operation's id
local arg_digest = ARGV[3]            -- the request's idempotency digest
local arg_now = ARGV[4]               -- ms
local arg_waiting_gateway = ARGV[5]   -- the waiting gateway's id, or ""
local arg_service_id = ARGV[6]        -- service id
local arg_plan_id = ARGV[7]           -- plan id
local arg_parameters = ARGV[8]        -- JSON, or ""
local arg_context = ARGV[9]           -- JSON, or ""
local arg_bind_resource = ARGV[10]    -- JSON, or ""
local arg_job = ARGV[11]              -- the encoded job
local arg_claim_deadline = ARGV[12]   -- ms
local arg_prefix = ARGV[13]           -- the key prefix "<ns>:"
local arg_instance_id = ARGV[14]      -- instance id
local arg_binding_id = ARGV[15]       -- binding id
local arg_api_version = ARGV[16]      -- the request's API version
local arg_predecessor_key = ARGV[17]  -- the predecessor binding's key, or ""
local arg_predecessor_id = ARGV[18]   -- the predecessor binding's id, or ""
local arg_platform = ARGV[19]         -- the platform asking: recorded on a new binding;
                                      -- another platform's instance or binding answers as if
                                      -- it did not exist
local arg_tenant = ARGV[20]           -- whose work it is when the instance has no tenant
                                      -- recorded (one from before tenants were): an instance's
                                      -- bindings are its tenant's
local arg_in_progress_cap = ARGV[21]  -- the most operations the operation's tenant may
                                      -- have in progress (OSBQ_POLICY in_progress_per_tenant),
                                      -- or "" when its platform has no cap; an unbind is
                                      -- counted but never refused
local arg_handed_worker = ARGV[22]    -- the worker a new operation is handed to (claimed
                                      -- for it here, docs/decisions/0042), or "": queued for
                                      -- any worker's claim
local arg_handed_until = ARGV[23]     -- with handed_worker: the hand-over's lease end, ms; or ""
local arg_halt = ARGV[24]             -- "1": an unbind halts a bind that holds the binding (the
                                      -- plan's halt_on_delete, lib/halt.lua) instead of
                                      -- answering busy; or ""
local arg_delete_cap = ARGV[25]       -- unbind: the most deletes of usable records its tenant
                                      -- may make a minute (OSBQ_POLICY
                                      -- deletes_per_minute_per_tenant), or "" for none
local arg_events_max = ARGV[26]       -- the events the audit trail keeps (OSBQ_EVENTS_MAX,
                                      -- lib/events.lua), "0" for none
local arg_user = ARGV[27]             -- who asked (X-Broker-API-Originating-Identity,
                                      -- decoded), or ""
local arg_request_id = ARGV[28]       -- X-Broker-API-Request-Identity, or ""
local inst, binding_key, op_key, queue, set = key_instance, key_binding, key_op, key_queue,
                                              key_bindings
local kind, op_id, digest, now = arg_kind, arg_operation_id, arg_digest, arg_now
local gateway, prefix, platform = arg_waiting_gateway, arg_prefix, arg_platform
local cap = tonumber(arg_in_progress_cap) -- nil: no cap, and no command run for one
-- Handed (lib/handover.lua): a new operation is recorded as claimed for that worker.
local handed = arg_handed_worker ~= ''

-- The instance and the binding, one HMGET each, each field into the local inst_<field> or
-- binding_<field>, in the order asked.
local inst_state, inst_lock_x, inst_service_id, inst_plan_id, inst_platform, inst_tenant =
  unpack(redis.call('HMGET', inst,
                    'state', 'lock_x', 'service_id', 'plan_id', 'platform', 'tenant'))
-- An unbind checks the binding's service and plan: read with the rest, one read of the record.
local binding_state, binding_digest, binding_lock_x, binding_last_op, binding_result,
      binding_platform, binding_service_id, binding_plan_id =
  unpack(redis.call('HMGET', binding_key,
                    'state', 'digest', 'lock_x', 'last_op', 'result', 'platform', 'service_id',
                    'plan_id'))
-- Records from before platforms were recorded belong to the default platform.
local instance_theirs = inst_state and (inst_platform or 'default') ~= platform
local binding_theirs = binding_state and (binding_platform or 'default') ~= platform

-- The keys finish.lua needs are written only when they are not the plain "<prefix>instance:<id>",
-- "<prefix>binding:<id>:<binding id>" and "<prefix>bindings:<id>" (an id store_keys.c had to
-- encode): a waiting operation stays small (begin_instance.lua does the same); `waited`, the
-- gateway that waits for the outcome, as begin_instance.lua records it; no service_id (the
-- instance's) nor attempt (claims says it), docs/decisions/0041; its platform unless it is the
-- default one, so that a poll naming the operation reads it alone (docs/decisions/0043). One
-- write of the operation and one of the binding: binding_fields (a bind's new binding) go with
-- its lock.
-- An unbind that halted the bind (lib/halt.lua) waits for it, not handed to anyone: 'after'
-- names it, and finish.lua makes the unbind due once it ended.
local after, after_due
local function record(binding_fields)
  local tenant = inst_tenant or arg_tenant
  if after then handed = false end
  local fields = {'kind', kind, 'instance', arg_instance_id, 'binding', arg_binding_id,
                  'plan_id', arg_plan_id,
                  'state', (after and 'waiting') or (handed and 'running') or 'queued',
                  'created_ms', now, 'api', arg_api_version, 'job', arg_job, 'tenant', tenant}
  local function add(name, value)
    fields[#fields + 1], fields[#fields + 2] = name, value
  end
  if inst ~= prefix .. 'instance:' .. arg_instance_id then add('instance_key', inst) end
  if binding_key ~= prefix .. 'binding:' .. arg_instance_id .. ':' .. arg_binding_id then
    add('binding_key', binding_key)
  end
  if set ~= prefix .. 'bindings:' .. arg_instance_id then add('bindings_key', set) end
  -- The binding's operations chained newest first (osbq-ctl instance reads them by id).
  if binding_last_op then add('prev_op', binding_last_op) end
  begin_record(prefix, {op_key = op_key, op_id = op_id, queue = queue, fields = fields,
                        add = add, tenant = tenant, platform = platform, gateway = gateway,
                        cap = cap, claim_deadline = arg_claim_deadline, handed = handed,
                        handed_worker = arg_handed_worker, handed_until = arg_handed_until,
                        now = now, after = after, after_due = after_due,
                        record_key = binding_key, record_fields = binding_fields})
  redis.call('HINCRBY', inst, 'lock_s', 1)
  event_add(prefix, arg_events_max, 'accepted', 'kind', kind, 'operation', op_id,
            'instance', arg_instance_id, 'binding', arg_binding_id, 'plan', arg_plan_id,
            'platform', platform, 'tenant', tenant, 'user', arg_user, 'request', arg_request_id,
            'halts', after)
  return {'accepted', op_id, '', '', '', tenant}
end

-- A refusal an auditor asks about in the audit trail (lib/events.lua), then the answer: the
-- in-progress cap (the policy's), the deletion guard, an unbind's 422 ConcurrencyError.
local function audit_refusal(reply)
  event_add(prefix, arg_events_max, 'refused', 'kind', kind, 'reason', reply[1],
            'instance', arg_instance_id, 'binding', arg_binding_id, 'plan', arg_plan_id,
            'platform', platform, 'tenant', inst_tenant or arg_tenant, 'user', arg_user,
            'request', arg_request_id)
  return reply
end

if kind == 'bind' then
  if not inst_state or inst_state == 'failed' or inst_state == 'gone' or instance_theirs then
    return {'no_instance'}
  end
  -- A binding left by another platform under this id (of an earlier instance) stays its own.
  if binding_theirs and binding_state ~= 'gone' then return {'conflict'} end
  if inst_state ~= 'provisioned' or inst_lock_x then return {'instance_busy'} end
  if arg_service_id ~= inst_service_id or arg_plan_id ~= inst_plan_id then
    return {'mismatch'}
  end
  if binding_state and binding_state ~= 'failed' and binding_state ~= 'gone' then
    if binding_digest ~= digest then return {'conflict'} end
    if binding_state == 'bound' then
      if binding_lock_x then return {'busy'} end
      return {'done', binding_last_op, '', '', binding_result or ''}
    end
    if not binding_lock_x then return {'busy'} end
    return join(prefix, binding_lock_x, gateway)
  end
  if binding_lock_x then return {'busy'} end
  if arg_predecessor_key ~= '' then
    local pred = read_fields(arg_predecessor_key, {'state', 'instance_id'})
    if pred.state ~= 'bound' or pred.instance_id ~= arg_instance_id then
      return {'bad_predecessor'}
    end
  end
  local capped = cap and in_progress_refusal(prefix, inst_tenant or arg_tenant, cap)
  if capped then return audit_refusal(capped) end
  -- A failed or deleted binding's record is replaced whole, and counted anew.
  local _, counted = record_counts_move(prefix .. 'record_counts', binding_key, 'b',
                                        not binding_state, 'binding', arg_plan_id, '')
  if binding_state then redis.call('DEL', binding_key) end
  local fields = {'binding_id', arg_binding_id, 'instance_id', arg_instance_id,
                  'service_id', arg_service_id, 'plan_id', arg_plan_id, 'state', 'binding',
                  'digest', digest, 'created_ms', now, 'platform', platform}
  local function add_unless_empty(name, value)
    if value ~= '' then fields[#fields + 1], fields[#fields + 2] = name, value end
  end
  add_unless_empty('parameters', arg_parameters)
  add_unless_empty('context', arg_context)
  add_unless_empty('bind_resource', arg_bind_resource)
  add_unless_empty('predecessor', arg_predecessor_id)
  add_unless_empty('counted', counted or '')
  redis.call('SADD', set, binding_key)
  return record(fields)
end

if kind == 'unbind' then
  if not binding_state or binding_state == 'gone' or binding_theirs then return {'gone'} end
  local halted_worker
  if binding_lock_x then
    local running = redis.call('HGET', prefix .. 'op:' .. binding_lock_x, 'kind')
    if running == 'unbind' then return join(prefix, binding_lock_x, gateway) end
    -- Spec, Unbinding: as a deprovision during a provision, it halts the bind.
    if running ~= 'bind' or arg_halt ~= '1' or inst_lock_x then
      return audit_refusal({'busy'})
    end
  end
  if inst_lock_x then return audit_refusal({'instance_busy'}) end
  -- The plan the binding was made with, or its instance's plan now: after a plan change,
  -- platforms differ in which they send (Kubernetes' service catalog sends the current one).
  if arg_service_id ~= binding_service_id or
      (arg_plan_id ~= binding_plan_id and arg_plan_id ~= inst_plan_id) then
    return {'mismatch'}
  end
  -- The deletion guard spares the unbind of a binding never usable (a bind failed or halted:
  -- the platform's orphan mitigation).
  local delete_cap = binding_state == 'bound' and tonumber(arg_delete_cap)
  local capped = delete_cap and delete_guard_take(prefix, inst_tenant or arg_tenant, delete_cap,
                                                  now)
  if capped then return audit_refusal(capped) end
  if binding_lock_x then
    after = binding_lock_x
    halted_worker, after_due = halt(prefix, queue, after, op_id, now, arg_claim_deadline)
  end
  local reply = record({})
  if not after then return reply end
  return {'halting', op_id, '', '', '', reply[6], after, halted_worker or ''}
end

return redis.error_reply('unknown operation kind ' .. kind)
