-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: release" line.
-- Operations begun by the previous release (0.1.0) are read and finished as it wrote them
-- (decision 0031): their history keeps every event, their attempt has a field of its own,
-- waiters wait in the waiters set, a deprovision's quotas are on its instance only, and their
-- platform is their record's. Such an operation always names a service_id, which this release
-- never writes on an operation (decision 0041), finished or not: the one test of all of them.

-- True when the operation whose service_id field reads service_id (false when the field is
-- absent, as HMGET answers it) was begun by the previous release.
local function begun_by_previous_release(service_id)
  return service_id ~= false and service_id ~= nil
end
