"""The Lua scripts of `RedisSession` and its store: each one write, atomic in Redis.

Every script touches one session's list and the index that lists it, which the key layout puts
in one hash slot on a Redis Cluster (see keys.py). The scripts check key types (and the TTL)
first, so that no command can fail after a write: each script is all or nothing.

For the session's scripts KEYS[1] is the session's item list, KEYS[2] its index; ARGV[1] the
session id, ARGV[2] the TTL in milliseconds (0: none).

A write records the session's activity in the index with the server's clock (`TIME`), read when
the write is done: a prune compares the index with its cutoff, so a write that a prune's cutoff
precedes is never read as idle by that prune, however long the write took to reach the server.
(A script that reads `TIME` and then writes needs effects replication: the default since
Redis 5.)
"""

from __future__ import annotations

__all__ = ["ADD", "CLEAR", "IMPORT", "MAX_TTL_SECONDS", "POP", "PRUNE", "REPLACE"]

MAX_TTL_SECONDS = 1000 * 365 * 24 * 3600
"""The longest `ttl` accepted: 1,000 years (Redis refuses expiry times past a 64-bit limit)."""

# ARGV[2] is the TTL in milliseconds (0: none), checked before anything is written.
_CHECK_TTL = f"""
local ttl = tonumber(ARGV[2])
if not ttl or ttl < 0 or ttl > {MAX_TTL_SECONDS * 1000} or ttl ~= math.floor(ttl) then
  return redis.error_reply('ERR invalid ttl ' .. tostring(ARGV[2]) .. ' ms: nothing was written')
end
"""

# KEYS[1] is the item list, KEYS[2] the index.
_CHECK_TYPES = """
local list_type = redis.call('TYPE', KEYS[1]).ok
if list_type ~= 'none' and list_type ~= 'list' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[1] .. ' holds a ' .. list_type .. ', not a list')
end
local index_type = redis.call('TYPE', KEYS[2]).ok
if index_type ~= 'none' and index_type ~= 'zset' then
  return redis.error_reply('WRONGTYPE ' .. KEYS[2] .. ' holds a ' .. index_type .. ', not a zset')
end
"""


def _push_from_first(command: str) -> str:
    """Lua that pushes ARGV[first..] with `command`, in chunks (Lua's unpack has a limit)."""
    return f"""
local last = #ARGV
while first <= last do
  local chunk_end = math.min(first + 999, last)
  redis.call('{command}', KEYS[1], unpack(ARGV, first, chunk_end))
  first = chunk_end + 1
end
"""


# The last step of every write: record it in the index at the server's time in milliseconds
# (the session's last activity), or drop an emptied session from the index. ARGV[1] is the
# session id; `ttl` (ARGV[2], checked first; 0 on import) refreshes the list's expiry.
_INDEX_WRITE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  local clock = redis.call('TIME')
  local now_ms = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  if ttl > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('ZADD', KEYS[2], now_ms, ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
"""

ADD = (
    _CHECK_TTL
    + _CHECK_TYPES
    + """
local first = 3
"""
    + _push_from_first("RPUSH")
    + _INDEX_WRITE
    + """
return #ARGV - 2
"""
)
"""Append ARGV[3..], refresh the TTL, record the write; returns how many."""

POP = (
    _CHECK_TTL
    + _CHECK_TYPES
    + """
local length = redis.call('LLEN', KEYS[1])
local index = -1
local found = false
while -index <= length do
  local element = redis.call('LINDEX', KEYS[1], index)
  local bar = string.find(element, '|', 1, true)
  if bar and string.match(string.sub(element, 1, bar - 1), '^%-?%d+$') then
    local body = string.sub(element, bar + 1)
    if string.match(body, '^%s*{') and pcall(cjson.decode, body) then
      found = element
      break
    end
  end
  index = index - 1
end
if not found then
  return false
end
redis.call('LSET', KEYS[1], index, ARGV[3])
redis.call('LREM', KEYS[1], -1, ARGV[3])
"""
    + _INDEX_WRITE
    + """
return found
"""
)
"""Pop the newest VALID element ("<ms>|<JSON object>"), refresh the TTL and record the write; an
emptied session leaves the index. Corrupt elements are skipped and left in place, as on every
backend: the valid one is swapped for the unique marker ARGV[3], which LREM then removes."""

CLEAR = (
    _CHECK_TYPES
    + """
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"""
)
"""Delete the session's list and its index entry. ARGV[1] is the session id."""

REPLACE = (
    _CHECK_TTL
    + _CHECK_TYPES
    + """
-- ARGV[3] = n, ARGV[4..3+n] the snapshot's elements, ARGV[4+n..] the new elements in REVERSE
-- order (LPUSH puts each one before the previous).
local n = tonumber(ARGV[3])
if n > 0 then
  local current = redis.call('LRANGE', KEYS[1], 0, n - 1)
  if #current ~= n then
    return 0
  end
  for i = 1, n do
    if current[i] ~= ARGV[3 + i] then
      return 0
    end
  end
  redis.call('LTRIM', KEYS[1], n, -1)
end
local first = 4 + n
"""
    + _push_from_first("LPUSH")
    + _INDEX_WRITE
    + """
return 1
"""
)
"""Replace the first n elements, if they are still the snapshot's, by the new ones; 1 or 0.

The atomic replacement of `RedisSession.replace_history`: like every script here it touches one
session's list and its index, so on a Redis Cluster it runs in one hash slot."""

IMPORT = (
    _CHECK_TYPES
    + """
-- ARGV[3]: the export's last activity of the session in milliseconds, or '' (none: the
-- server's time once written, as for any write).
local activity = false
if ARGV[3] ~= '' then
  activity = tonumber(ARGV[3])
end
if ARGV[2] == '1' then
  redis.call('DEL', KEYS[1])
elseif activity and redis.call('EXISTS', KEYS[1]) == 1 then
  -- Appending to a session that exists: the later of its activity and the export's.
  local current = redis.call('ZSCORE', KEYS[2], ARGV[1])
  if current and tonumber(current) > activity then
    activity = tonumber(current)
  end
end
local first = 4
"""
    + _push_from_first("RPUSH")
    + """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if not activity then
    local clock = redis.call('TIME')
    activity = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
  end
  redis.call('ZADD', KEYS[2], activity, ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return #ARGV - 3
"""
)
"""The CLI import's write of one session: with ARGV[2] == '1' the list is cleared first, in the
same script (`--replace`); then ARGV[4..] are appended, keeping any expiry. The session's index
score (its last activity) is ARGV[3], the export's (the later of it and the current score when
appending), or the server's time when ARGV[3] is ''. ARGV[1] is the session id. A session's
creation time on Redis is its first item's, which the elements carry."""

PRUNE = """
local removed = 0
for i, sid in ipairs(ARGV) do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    removed = removed + redis.call('ZREM', KEYS[#KEYS], sid)
  end
end
return removed
"""
"""Drop index entries whose list no longer exists (expired or emptied).

KEYS are the lists of ARGV's session ids, then the one index that lists them all."""
