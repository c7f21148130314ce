-- Reads what last_operation answers for an instance or a binding, in one round trip.
-- KEYS[1] record: the instance or binding hash
-- ARGV[1] operation_id: operation id, or ""
-- ARGV[2] prefix: the key prefix "<ns>:"
-- ARGV[3] instance_id: instance id
-- ARGV[4] binding_id: binding id, or ""
-- ARGV[5] platform: the platform asking, or "" for any: another platform's record is not found
-- Returns {"not_found"}, {"unknown_operation", the record's last operation id or ""}, or
-- {"ok", record state, kind, state,
-- description, instance_usable, update_repeatable, created_ms, plan_id, average ms or ""}.
local rec = redis.call('HMGET', KEYS[1], 'state', 'last_op', 'platform')
if not rec[1] then return {'not_found'} end
-- Records from before platforms were recorded belong to the default platform.
if ARGV[5] and ARGV[5] ~= '' and (rec[3] or 'default') ~= ARGV[5] then return {'not_found'} end
local op_id = ARGV[1] ~= '' and ARGV[1] or rec[2]
if not op_id then return {'not_found'} end
local op = redis.call('HMGET', ARGV[2] .. 'op:' .. op_id, 'kind', 'instance', 'state',
                      'description', 'instance_usable', 'update_repeatable', 'created_ms',
                      'plan_id', 'prev_plan_id', 'binding')
if not op[1] or op[2] ~= ARGV[3] or (op[10] or '') ~= ARGV[4] then
  return {'unknown_operation', rec[2] or ''}
end
local stats_plan = op[8]
if op[1] == 'update' and op[9] and op[9] ~= '' then stats_plan = op[9] end
local avg = redis.call('HGET', ARGV[2] .. 'stats:' .. stats_plan, op[1]) or ''
return {'ok', rec[1], op[1], op[3], op[4] or '', op[5] or '', op[6] or '', op[7] or '',
        op[8] or '', avg}
