-- osbq-ctl reencrypt replaces a binding's stored result with the same result sealed under the
-- current key, only if it is still the value it read: a result written meanwhile (a finish, an
-- unbind deleting it) is left alone. Compare-and-set, atomic.
-- KEYS[1] binding: the binding hash
-- ARGV[1] expected: the result as read
-- ARGV[2] replacement: its replacement
-- Returns 1 replaced, 0 changed meanwhile.
if redis.call('HGET', KEYS[1], 'result') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'result', ARGV[2])
return 1
