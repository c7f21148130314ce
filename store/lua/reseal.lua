-- osbq-ctl reencrypt replaces a binding's stored result with the same result sealed under the
-- current key, only if it is still the value it read: a result written meanwhile (a finish, an
-- unbind deleting it) is left alone. Compare-and-set, atomic.
-- Returns 1 replaced, 0 changed meanwhile.
local key_binding = KEYS[1]  -- the binding hash
local arg_expected = ARGV[1]     -- the result as read
local arg_replacement = ARGV[2]  -- its replacement
if redis.call('HGET', key_binding, 'result') ~= arg_expected then return 0 end
redis.call('HSET', key_binding, 'result', arg_replacement)
return 1
