"""The Lua scripts of `RedisSession`: each write is one script, which Redis runs atomically.

Every script checks the key types first, so that no command can fail after a write: a script is
all or nothing. KEYS[1] is the session's item list, KEYS[2] the index; ARGV[1] the session id,
ARGV[2] the TTL in milliseconds (0: none), ARGV[3] the time in milliseconds.
"""

from __future__ import annotations

__all__ = ["ADD_SCRIPT", "POP_SCRIPT", "REPLACE_SCRIPT"]

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


# After a write: refresh the TTL and record the write, or drop an emptied session from the index.
_RECORD_WRITE = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  if tonumber(ARGV[2]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
"""

ADD_SCRIPT = (
    _CHECK_TYPES
    + """
-- Append ARGV[4..].
local first = 4
"""
    + _push_from_first("RPUSH")
    + _RECORD_WRITE
    + """
return #ARGV - 3
"""
)
"""Append the elements ARGV[4..]; returns how many."""

POP_SCRIPT = (
    _CHECK_TYPES
    + """
local element = redis.call('RPOP', KEYS[1])
if not element then
  return false
end
"""
    + _RECORD_WRITE
    + """
return element
"""
)
"""Remove and return the newest element (nil when the list is empty)."""

REPLACE_SCRIPT = (
    _CHECK_TYPES
    + """
-- ARGV[4] = n, ARGV[5..4+n] the snapshot's elements, ARGV[5+n..] the new elements in REVERSE
-- order (LPUSH puts each one before the previous).
local n = tonumber(ARGV[4])
if n > 0 then
  local current = redis.call('LRANGE', KEYS[1], 0, n - 1)
  if #current ~= n then
    return 0
  end
  for i = 1, n do
    if current[i] ~= ARGV[4 + i] then
      return 0
    end
  end
  redis.call('LTRIM', KEYS[1], n, -1)
end
local first = 5 + n
"""
    + _push_from_first("LPUSH")
    + _RECORD_WRITE
    + """
return 1
"""
)
"""Replace the first n elements, if they are still the snapshot's, by the new ones; 1 or 0."""
