-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: handover" line.
-- A hand-over (docs/decisions/0042): a gateway that knows a worker with a free slot when it
-- begins an operation has the begin script claim the new operation for that worker, which then
-- runs its step without a claim call. The record is the one claim.lua's first claim leaves, so
-- progress.lua, finish.lua, another worker's claim, the recovery loop and osbq-ctl take it as
-- claimed.

-- Adds to a new operation's fields, through add(name, value), what claim.lua's first claim
-- writes for worker with a lease until until_ms, claimed at now; no history line (decision 0041:
-- started_ms, worker and claims say it). The caller records the state as 'running'. Returns
-- the score of the operation's queue entry: its lease end, so the recovery loop finds a lost
-- handed job as it finds a claimed one whose worker died.
local function handover_claim(add, worker, until_ms, now)
  add('worker', worker)
  add('lease_until', until_ms)
  add('claims', '1')
  add('started_ms', now)
  return until_ms
end
