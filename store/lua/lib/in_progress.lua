-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: in_progress" line.
-- A tenant's operations in progress, for OSBQ_POLICY's in_progress_per_tenant (docs/policies.md):
-- one counter per tenant, "<prefix>inprogress:<tenant>" with the tenant encoded as
-- store/store_keys.c encodes ids. Used only when the tenant's platform has a cap, so a broker
-- without one runs no command for it. An operation that counts records the key it counts in
-- (its 'in_progress_key'), and finish.lua gives it back there, whatever the policy says by then.
-- The tenant as a key's part, encoded as store/store_keys.c encodes ids (lib/delete_guard.lua's
-- counters use it too).
local function tenant_encoded(tenant)
  return (string.gsub(tenant, '[^A-Za-z0-9%-%._~]', function(c)
    return string.format('%%%02X', string.byte(c))
  end))
end

local function in_progress_key(prefix, tenant)
  return prefix .. 'inprogress:' .. tenant_encoded(tenant)
end

-- The refusal {'capped', operations in progress, tenant} when tenant has cap (a number) or more
-- operations in progress; nil when it may start one. Writes nothing.
local function in_progress_refusal(prefix, tenant, cap)
  local count = tonumber(redis.call('GET', in_progress_key(prefix, tenant)) or '0')
  if count >= cap then return {'capped', tostring(count), tenant} end
  return nil
end

-- Counts a new operation as tenant's; returns the counter's key, which the caller records on
-- the operation (its 'in_progress_key', written with the rest of it).
local function in_progress_take(prefix, tenant)
  local key = in_progress_key(prefix, tenant)
  redis.call('INCR', key)
  return key
end
