-- osbq-ctl reencrypt replaces a binding's stored result with the same result sealed under the
-- current key, only if it is still the value it read: a result written meanwhile (a finish, an
-- unbind deleting it) is left alone. Compare-and-set, atomic.
-- Returns 1 replaced, 0 changed meanwhile.
local KEY = {
  binding = KEYS[1],  -- the binding hash
}
local ARG = {
  expected = ARGV[1],     -- the result as read
  replacement = ARGV[2],  -- its replacement
}
if redis.call('HGET', KEY.binding, 'result') ~= ARG.expected then return 0 end
redis.call('HSET', KEY.binding, 'result', ARG.replacement)
return 1
