-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: delete_guard" line.
-- The deletion guard of OSBQ_POLICY (docs/policies.md, docs/decisions/0054): a tenant's
-- deprovisions and unbinds of usable records counted per minute, "<prefix>deletes:<tenant>:
-- <minute>" (the tenant encoded by lib/in_progress.lua's tenant_encoded: a script lists
-- "requires: delete_guard" before "requires: in_progress", so that one comes first), kept two
-- minutes. Used only when the tenant's platform has a cap, so a broker without one runs no
-- command for it.

local function deletes_key(prefix, tenant, now)
  return prefix .. 'deletes:' .. tenant_encoded(tenant) .. ':' .. math.floor(tonumber(now) / 60000)
end

-- The refusal {'delete_capped', deletes this minute, tenant} when tenant has deleted cap (a
-- number) usable records this minute already; nil when it may delete one, which is then
-- counted.
local function delete_guard_take(prefix, tenant, cap, now)
  local key = deletes_key(prefix, tenant, now)
  local count = tonumber(redis.call('GET', key) or '0')
  if count >= cap then return {'delete_capped', tostring(count), tenant} end
  redis.call('INCR', key)
  redis.call('PEXPIRE', key, 120000)
  return nil
end
