-- osbq-ctl reencrypt replaces a sealed field of a record (a binding's result; the parameters,
-- context or bind_resource of an instance, a binding or an update's operation; an operation's
-- resume state) with the same value sealed under the current key, only if it is still the value
-- it read: a value written meanwhile (a finish, an update, an unbind deleting it) is left alone.
-- Compare-and-set, atomic.
-- Returns 1 replaced, 0 changed meanwhile.
local key_record = KEYS[1]       -- the record's hash
local arg_field = ARGV[1]        -- the field
local arg_expected = ARGV[2]     -- its value as read
local arg_replacement = ARGV[3]  -- its replacement
if redis.call('HGET', key_record, arg_field) ~= arg_expected then return 0 end
redis.call('HSET', key_record, arg_field, arg_replacement)
return 1
