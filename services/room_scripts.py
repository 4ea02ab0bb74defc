"""The Lua scripts through which processes change a room in Redis (``services/rooms_redis.py``).

Each runs whole or not at all (Redis runs one script at a time), so two processes never interleave inside one
change: a code is claimed once, a view is kept only if newer, and an answer is counted once per page and browser
whoever sends it and however often (a process sends again what it cannot be sure arrived: after a lost connection,
after a Redis restart that lost everything). A script that changes what the other processes hold publishes it on
the room's channel in the same step, so what is stored and what is said never disagree.

Times are Redis's own (``TIME``, in ms), one clock for every process and machine. Keys are built from the
prefix inside the scripts: one Redis server, not a cluster.

Keys (prefix ``explorer:``): ``rooms`` (the running codes), ``room:CODE`` (``version``, ``base``: the version whose
``view`` is whole, ``view``, ``query``: the view's query since ``base``, ``presenter``: the process presenting it or
"", ``seen``: its last heartbeat, ``left``: when it left or "", ``gone``: "1" once followers were told, ``polls``),
``poll:CODE`` (``id``, ``q``, ``state``, ``gen``, ``answers``, ``right``, ``late``, and a count per ``c:<choice>`` or
``n:<bin>``), ``poll:CODE:pages``, ``poll:CODE:browsers`` (who has answered it), ``ended:CODE`` (a day), ``claim:CODE``
(a code a process holds for its next room), ``epoch`` (drawn when Redis starts empty). Channel: ``r:CODE``.
"""

from __future__ import annotations

_NOW = "local function now_ms() local t = redis.call('TIME') return t[1] * 1000 + math.floor(t[2] / 1000) end\n"

_END = """
local function end_room(prefix, code, ttl, message)
  local existed = redis.call('SREM', prefix .. 'rooms', code)
  local room, poll = prefix .. 'room:' .. code, prefix .. 'poll:' .. code
  redis.call('DEL', room, poll, poll .. ':pages', poll .. ':browsers')
  redis.call('SET', prefix .. 'ended:' .. code, '1', 'EX', ttl)
  if existed == 1 then redis.call('PUBLISH', prefix .. 'r:' .. code, message) end
  return existed
end
"""

#: KEYS: room, ended, claim. ARGV: process, seconds. 1 if the code is now this process's to open a room under.
CLAIM = """
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0 then return 0 end
redis.call('SET', KEYS[3], ARGV[1], 'EX', ARGV[2])
return 1
"""

#: KEYS: room, rooms, claim. ARGV: code, version, base, view, query, presenter, polls, channel, message.
#: Opens the room unless it runs already (a process putting back what Redis lost, or a presenter's link
#: reopening its room); 1 if it did.
OPEN = _NOW + """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local now = now_ms()
local left = ''
if ARGV[6] == '' then left = now end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'base', ARGV[3], 'view', ARGV[4], 'query', ARGV[5],
           'presenter', ARGV[6], 'seen', now, 'left', left, 'gone', '', 'polls', ARGV[7])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('PUBLISH', ARGV[8], ARGV[9])
return 1
"""

#: KEYS: room. ARGV: version, base, view ("" for the query alone), query, channel, message.
#: 1: kept and published; 0: Redis holds this version or a newer one; -1: no such room; -2: a query alone, but
#: Redis holds another whole view than the one it belongs to (the sender then sends its view whole).
VIEW = """
local cur = tonumber(redis.call('HGET', KEYS[1], 'version'))
if cur == nil then return -1 end
if tonumber(ARGV[1]) <= cur then return 0 end
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[1], 'version', ARGV[1], 'base', ARGV[2], 'view', ARGV[3], 'query', ARGV[4])
else
  if redis.call('HGET', KEYS[1], 'base') ~= ARGV[2] then return -2 end
  redis.call('HSET', KEYS[1], 'version', ARGV[1], 'query', ARGV[4])
end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
"""

#: KEYS: room. ARGV: process, "1" (its presenter's page is there) or "" (it left), channel, message (it is back).
PRESENCE = _NOW + """
local presenter = redis.call('HGET', KEYS[1], 'presenter')
if presenter == false then return -1 end
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'presenter', ARGV[1], 'seen', now_ms(), 'left', '')
  if redis.call('HGET', KEYS[1], 'gone') == '1' then
    redis.call('HSET', KEYS[1], 'gone', '')
    redis.call('PUBLISH', ARGV[3], ARGV[4])
  end
elseif presenter == ARGV[1] then
  redis.call('HSET', KEYS[1], 'presenter', '', 'left', now_ms())
end
return 1
"""

#: KEYS: the rooms this process presents. ARGV: process. Its heartbeat for each.
BEAT = _NOW + """
local now = now_ms()
for _, room in ipairs(KEYS) do
  if redis.call('HGET', room, 'presenter') == ARGV[1] then redis.call('HSET', room, 'seen', now) end
end
return 1
"""

#: KEYS: rooms. ARGV: prefix, grace ms, heartbeat timeout ms, end_after ms, ended ttl s.
#: A presenter whose process has not beaten within the timeout has left (when it last beat). A room whose
#: presenter has been gone the grace is told so once; one gone end_after ends. Any process may run it, as often.
SWEEP = _NOW + _END + """
local prefix, now, ended = ARGV[1], now_ms(), 0
for _, code in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local room = prefix .. 'room:' .. code
  local h = redis.call('HMGET', room, 'presenter', 'seen', 'left', 'gone', 'version')
  if h[1] == false then
    redis.call('SREM', KEYS[1], code)
  else
    local left = h[3]
    if h[1] ~= '' and now - tonumber(h[2]) > tonumber(ARGV[3]) then
      left = h[2]
      redis.call('HSET', room, 'presenter', '', 'left', left)
    end
    if left ~= '' then
      if now - tonumber(left) >= tonumber(ARGV[4]) then
        ended = ended + end_room(prefix, code, ARGV[5], cjson.encode({t = 'ended', c = code, p = ''}))
      elseif h[4] ~= '1' and tonumber(h[5]) > 0 and now - tonumber(left) >= tonumber(ARGV[2]) then
        redis.call('HSET', room, 'gone', '1')
        redis.call('PUBLISH', prefix .. 'r:' .. code, cjson.encode({t = 'presence', c = code, p = '', here = false}))
      end
    end
  end
end
return ended
"""

#: ARGV: prefix, code, ttl s, message. The presenter ended the room.
END = _END + """
return end_room(ARGV[1], ARGV[2], ARGV[3], ARGV[4])
"""

#: KEYS: poll, its pages, its browsers, room. ARGV: id, question, state, gen, channel, message.
#: A newer poll replaces the room's (its answers forgotten); the same poll only moves forward (open, closed,
#: revealed). 1 if it changed.
SET_POLL = """
if redis.call('EXISTS', KEYS[4]) == 0 then return -1 end
local cur = tonumber(redis.call('HGET', KEYS[1], 'id') or '0')
local id = tonumber(ARGV[1])
if id < cur then return 0 end
if id > cur then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  redis.call('HSET', KEYS[1], 'id', id, 'q', ARGV[2], 'state', ARGV[3], 'gen', ARGV[4], 'answers', 0, 'right', 0,
             'late', 0)
  redis.call('HSET', KEYS[4], 'polls', id)
else
  local order = {open = 1, closed = 2, revealed = 3}
  if order[ARGV[3]] <= order[redis.call('HGET', KEYS[1], 'state')] then return 0 end
  redis.call('HSET', KEYS[1], 'state', ARGV[3])
end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
"""

#: KEYS: poll, its pages, its browsers. ARGV: poll id, page, browser, where ("c:<i>" or "n:<bin>"), right ("1"/""),
#: late ("1"/""), channel, code. "ok": counted now, and the counts published; "counted": this page's answer was
#: counted before (sent again); "missing": no poll (Redis lost it: the room's processes put it back); "over",
#: "closed", "browser": refused, as the page's own process would have refused it.
ANSWER = """
local h = redis.call('HMGET', KEYS[1], 'id', 'state')
if h[1] == false then return 'missing' end
if tonumber(h[1]) ~= tonumber(ARGV[1]) then return 'over' end
if redis.call('SISMEMBER', KEYS[2], ARGV[2]) == 1 then return 'counted' end
if h[2] ~= 'open' then return 'closed' end
if redis.call('SISMEMBER', KEYS[3], ARGV[3]) == 1 then return 'browser' end
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
redis.call('HINCRBY', KEYS[1], 'answers', 1)
redis.call('HINCRBY', KEYS[1], ARGV[4], 1)
if ARGV[5] == '1' then redis.call('HINCRBY', KEYS[1], 'right', 1) end
if ARGV[6] == '1' then redis.call('HINCRBY', KEYS[1], 'late', 1) end
redis.call('PUBLISH', ARGV[7], cjson.encode({t = 'counts', c = ARGV[8], p = '', b = ARGV[3],
                                             h = redis.call('HGETALL', KEYS[1])}))
return 'ok'
"""
