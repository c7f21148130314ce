-- Reads what last_operation answers for an instance or a binding, in one round trip.
-- Returns {"not_found"}, {"unknown_operation", the record's last operation id or ""}, or
-- {"ok", record state, kind, state,
-- description, instance_usable, update_repeatable, created_ms, the plan of the average (an
-- update's previous plan), average ms or ""}.
-- requires: fields (store/lua/lib/fields.lua: read_fields)
-- requires: release (store/lua/lib/release.lua: begun_by_previous_release)
local key_record = KEYS[1]  -- the instance or binding hash
local arg_operation_id = ARGV[1]  -- operation id, or ""
local arg_prefix = ARGV[2]        -- the key prefix "<ns>:"
local arg_instance_id = ARGV[3]   -- instance id
local arg_binding_id = ARGV[4]    -- binding id, or ""
local arg_platform = ARGV[5]      -- the platform asking, or "" for any: another
                                  -- platform's record is not found
local record = read_fields(key_record, {'state', 'last_op', 'platform'})
if not record.state then return {'not_found'} end
-- Records from before platforms were recorded belong to the default platform.
if arg_platform and arg_platform ~= '' and (record.platform or 'default') ~= arg_platform then
  return {'not_found'}
end
local op_id = arg_operation_id ~= '' and arg_operation_id or record.last_op
if not op_id then return {'not_found'} end
local op = read_fields(arg_prefix .. 'op:' .. op_id,
                       {'kind', 'instance', 'state', 'description', 'instance_usable',
                        'update_repeatable', 'created_ms', 'plan_id', 'prev_plan_id', 'binding',
                        'platform', 'service_id'})
-- An operation is its platform's (an earlier owner's, when the id was deleted and taken by
-- another platform since): the one it names, or the default one; one begun by the previous
-- release names none, and its record decides.
local op_platform = op.platform or
                    (not begun_by_previous_release(op.service_id) and 'default') or nil
local op_theirs = op_platform and arg_platform and arg_platform ~= '' and
                  op_platform ~= arg_platform
-- A deleted binding exists only for its unbind's poll: one deleted with its instance (or whose
-- operation is gone) does not exist (spec, Polling Last Operation for Service Bindings: 404
-- "MUST be returned if the Service Binding being polled does not exist").
if arg_binding_id ~= '' and record.state == 'gone' and op.kind ~= 'unbind' then
  return {'not_found'}
end
if not op.kind or op.instance ~= arg_instance_id or (op.binding or '') ~= arg_binding_id or
    op_theirs then
  return {'unknown_operation', record.last_op or ''}
end
-- The plan's average duration sets Retry-After, which only an answer "in progress" carries:
-- a finished operation's poll (the last of each operation) does not read it. An update's steps
-- are its previous plan's. The gateway keeps the averages it read a while (docs/decisions/0043),
-- keyed by that plan, which the answer names.
local stats_plan = op.plan_id
if op.kind == 'update' and op.prev_plan_id and op.prev_plan_id ~= '' then
  stats_plan = op.prev_plan_id
end
local avg = ''
if op.state ~= 'succeeded' and op.state ~= 'failed' then
  avg = redis.call('HGET', arg_prefix .. 'stats:' .. stats_plan, op.kind) or ''
end
return {'ok', record.state, op.kind, op.state, op.description or '', op.instance_usable or '',
        op.update_repeatable or '', op.created_ms or '', stats_plan or '', avg}
