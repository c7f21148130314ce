-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: release" line.
-- Operations begun by the previous release (0.1.0) are read and finished as it wrote them
-- (decision 0031): their history keeps every event, their attempt has a field of its own,
-- waiters wait in the waiters set, a deprovision's quotas are on its instance only, and their
-- platform is their record's. Such an operation always names a service_id, which this release
-- never writes on an operation (decision 0041), finished or not: the one test of all of them.

-- True when op (read_fields of the operation, 'service_id' among the fields read) was begun by
-- the previous release.
local function begun_by_previous_release(op)
  return op.service_id ~= false and op.service_id ~= nil
end
