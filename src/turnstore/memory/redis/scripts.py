"""The Lua scripts of `RedisSession` and its store: each one write, atomic in Redis.

Every script touches one session's list and the index that lists it, which the key layout puts
in one hash slot on a Redis Cluster (see keys.py). The scripts check key types first, so that no
command can fail after a write: each script is all or nothing.
"""

from __future__ import annotations

__all__ = ["ADD", "CLEAR", "POP", "PRUNE"]

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

ADD = (
    _CHECK_TYPES
    + """
local last = #ARGV
local first = 4
while first <= last do
  local chunk_end = math.min(first + 999, last)
  redis.call('RPUSH', KEYS[1], unpack(ARGV, first, chunk_end))
  first = chunk_end + 1
end
if tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return last - 3
"""
)
"""Append ARGV[4..] (in chunks: Lua's unpack has a limit), refresh the TTL, record the write.

ARGV[1] is the session id, ARGV[2] the TTL in milliseconds (0: leave it), ARGV[3] the index
score (the write's time in milliseconds)."""

POP = (
    _CHECK_TYPES
    + """
local element = redis.call('RPOP', KEYS[1])
if not element then
  return false
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  if tonumber(ARGV[2]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
  end
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return element
"""
)
"""Pop the newest element, refresh the TTL and record the write; an emptied session leaves the
index. ARGV as for `ADD`, without elements."""

CLEAR = (
    _CHECK_TYPES
    + """
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"""
)
"""Delete the session's list and its index entry. ARGV[1] is the session id."""

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
