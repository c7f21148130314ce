-- Prepended by cmake/EmbedScripts.cmake to every script with a "-- requires: fields" line.
-- A record read by name: HMGET answers a list in the order the fields were asked, so a script
-- reading rec[17] has to count to know which field it is. read_fields names the answer, and the
-- script reads op.lease_until. The same one HMGET; a field the hash lacks is false, as HMGET
-- answers it. A name that was not asked for raises an error instead of reading nil, so a typo
-- fails the first test that runs it.
local fields_not_read = {__index = function(_, name)
  error('read_fields: field ' .. tostring(name) .. ' was not read', 2)
end}

-- The fields names (a list) of the hash key, as a table by name.
local function read_fields(key, names)
  local values = redis.call('HMGET', key, unpack(names))
  local record = setmetatable({}, fields_not_read)
  for i = 1, #names do record[names[i]] = values[i] end
  return record
end
