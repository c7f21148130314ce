-- osbq-ctl export reads one instance with what belongs to it in one step, so its line in the
-- file is one instant of it (docs/ctl.md, "export and import"; docs/decisions/0055): the
-- instance hash, its live bindings' hashes (its bindings set; the credentials as stored) and its
-- finished operations still kept, from its and each binding's last_op back along prev_op.
-- An instance whose lock is held (an operation of it or of one of its bindings runs) is not
-- read: its records are about to change, and a running operation cannot move.
-- Returns {1, instance (HGETALL's list), {binding, ...}, {operation id, operation, ...}}, {0}
-- when there is no such instance or it is gone, or {2, operation id} when an operation of it
-- runs ("" when a binding operation holds it shared but no binding names it).
-- requires: fields (store/lua/lib/fields.lua: read_fields)
local key_instance = KEYS[1]  -- the instance hash
local key_bindings = KEYS[2]  -- the instance's set of live bindings
local arg_prefix = ARGV[1]   -- the key prefix "<ns>:"
local arg_ops_max = ARGV[2]  -- the most operations read (a cycle of prev_op written by hand
                             -- cannot make it loop)
local prefix, ops_max = arg_prefix, tonumber(arg_ops_max)

local inst_state, inst_lock_x, inst_lock_s, inst_last_op =
  unpack(redis.call('HMGET', key_instance, 'state', 'lock_x', 'lock_s', 'last_op'))
if not inst_state or inst_state == 'gone' then return {0} end
if inst_lock_x then return {2, inst_lock_x} end

local bindings, starts = {}, {}
if inst_last_op then starts[1] = inst_last_op end
for _, bkey in ipairs(redis.call('SMEMBERS', key_bindings)) do
  local binding = read_fields(bkey, {'lock_x', 'last_op'})
  if binding.lock_x then return {2, binding.lock_x} end
  local fields = redis.call('HGETALL', bkey)
  if #fields > 0 then
    bindings[#bindings + 1] = fields
    if binding.last_op then starts[#starts + 1] = binding.last_op end
  end
end
-- A binding operation holds the instance shared and its binding exclusively: found above.
if tonumber(inst_lock_s or '0') > 0 then return {2, ''} end

-- The operations, newest first along each chain; an unfinished one (none while no lock is
-- held) is left out, its predecessors still followed.
local ops, seen, count = {}, {}, 0
for _, id in ipairs(starts) do
  while id and not seen[id] and count < ops_max do
    seen[id] = true
    count = count + 1
    local op_key = prefix .. 'op:' .. id
    local fields = redis.call('HGETALL', op_key)
    if #fields == 0 then break end
    local op = read_fields(op_key, {'state', 'prev_op'})
    if op.state == 'succeeded' or op.state == 'failed' then
      ops[#ops + 1] = id
      ops[#ops + 1] = fields
    end
    id = op.prev_op
  end
end
return {1, redis.call('HGETALL', key_instance), bindings, ops}
