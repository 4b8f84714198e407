//! The Lua scripts (docs/decisions.md "Redis key layout and scripts", "Redis round trips per
//! call"). Each limiter or breaker operation that talks to Redis is one `EVALSHA` of one of these
//! scripts; Redis runs a script atomically, so a grant takes all six gates or none and a breaker
//! transition is never interleaved. A script also carries the buffered writes of its scope
//! (progress mark, breaker successes of its source) and applies them first.
//!
//! Numbers travel as decimal strings; times are microseconds of Redis `TIME` (plus, in
//! `test-time` builds only, the scope's offset key, always the last of `KEYS`). Replies are flat
//! arrays of strings.

use std::sync::LazyLock;

use fred::types::scripts::Script;

/// Reads the clock. In `test-time` builds the scope's offset key (last of `KEYS`) is added.
#[cfg(not(feature = "test-time"))]
const NOW: &str = r"
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
";

/// In `test-time` builds the key holds either an offset added to `TIME`, or `=<µs>`: a frozen
/// clock that only `advance_time` moves (`RedisConnection::freeze_time`).
#[cfg(feature = "test-time")]
const NOW: &str = r"
local function now_us()
  local v = redis.call('GET', KEYS[#KEYS])
  if v and string.sub(v, 1, 1) == '=' then return tonumber(string.sub(v, 2)) end
  local t = redis.call('TIME')
  local us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  return us + (tonumber(v) or 0)
end
";

/// Test builds only: moves the clock of `KEYS[1]` (offset or frozen) by `ARGV[1]` µs.
#[cfg(feature = "test-time")]
pub(crate) static ADVANCE_TIME: LazyLock<Script> = LazyLock::new(|| {
    Script::from_lua(
        r"
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == '=' then
  redis.call('SET', KEYS[1], '=' .. string.format('%d', tonumber(string.sub(v, 2)) + tonumber(ARGV[1])))
else
  redis.call('INCRBY', KEYS[1], ARGV[1])
end
return {}
",
    )
});

/// Test builds only: freezes the clock of `KEYS[1]` at its current reading (`TIME` plus any
/// offset); a frozen clock stays as it is.
#[cfg(feature = "test-time")]
pub(crate) static FREEZE_TIME: LazyLock<Script> = LazyLock::new(|| {
    Script::from_lua(
        r"
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 1) == '=' then return {} end
local t = redis.call('TIME')
local us = tonumber(t[1]) * 1000000 + tonumber(t[2]) + (tonumber(v) or 0)
redis.call('SET', KEYS[1], '=' .. string.format('%d', us))
return {}
",
    )
});

/// The breaker state machine helpers, shared by the breaker script and the limiter script (which
/// carries buffered breaker successes and reports the breaker state of its source). State hash
/// `S`: `ph` c/o/h, `until` µs, `hp` probe held, `po` probe owner, `pe` probe expiry µs, `ep`
/// epoch, `cf` consecutive failures, `op` opens (the cooldown exponent, reset on close), `lc`
/// last cooldown s, `oc` opens since the key was created (never reset). Bucket hash `B`:
/// `c:<second>` calls, `f:<second>` failures. `WS` = window in seconds.
const BRK_LIB: &str = r"
local function bfmt(n) return string.format('%d', n) end
local function brk_load(S)
  local v = redis.call('HMGET', S, 'ph', 'until', 'hp', 'po', 'pe', 'ep', 'cf', 'op', 'lc', 'oc')
  return { ph = v[1] or 'c', untl = tonumber(v[2] or '0'), hp = (v[3] == '1'), po = v[4] or '',
    pe = tonumber(v[5] or '0'), ep = tonumber(v[6] or '0'), cf = tonumber(v[7] or '0'),
    op = tonumber(v[8] or '0'), lc = tonumber(v[9] or '0'), oc = tonumber(v[10] or '0') }
end
local function brk_save(S, b)
  local hp = '0'
  if b.hp then hp = '1' end
  redis.call('HSET', S, 'ph', b.ph, 'until', bfmt(b.untl), 'hp', hp, 'po', b.po, 'pe', bfmt(b.pe),
    'ep', bfmt(b.ep), 'cf', bfmt(b.cf), 'op', bfmt(b.op), 'lc', string.format('%.17g', b.lc),
    'oc', bfmt(b.oc))
end
-- Open -> half-open after the cooldown; an expired probe lease is reclaimed. True if changed.
local function brk_refresh(b, now)
  if b.ph == 'o' and now >= b.untl then
    b.ph = 'h'
    b.hp = false
    return true
  elseif b.ph == 'h' and b.hp and now >= b.pe then
    b.hp = false
    return true
  end
  return false
end
-- Drops buckets older than the window; returns (calls, failures) of the rest.
local function brk_window(B, WS, now)
  local cur = math.floor(now / 1000000)
  local all = redis.call('HGETALL', B)
  local calls, fails = 0, 0
  for i = 1, #all, 2 do
    local sec = tonumber(string.sub(all[i], 3))
    if sec == nil or sec + WS <= cur then
      redis.call('HDEL', B, all[i])
    elseif string.sub(all[i], 1, 1) == 'c' then
      calls = calls + tonumber(all[i + 1])
    else
      fails = fails + tonumber(all[i + 1])
    end
  end
  return calls, fails
end
-- One window sample in the bucket of time `at`. A new bucket prunes the old ones (so the hash
-- holds at most one window of buckets); counting always goes through brk_window.
local function brk_sample(B, WS, now, at, failed)
  local cur = bfmt(math.floor(at / 1000000))
  local n = redis.call('HINCRBY', B, 'c:' .. cur, 1)
  if failed then redis.call('HINCRBY', B, 'f:' .. cur, 1) end
  if n == 1 then brk_window(B, WS, now) end
end
local function brk_may_write(b, ep, is_probe, owner)
  if ep ~= b.ep then return false end
  if b.ph == 'c' then return not is_probe end
  if b.ph == 'h' then return is_probe and b.hp and b.po == owner end
  return false
end
-- Applies carried non-probe successes `ep:count:age_us,...` in recording order (each as
-- record_success would have at its time). True if `b` changed.
local function brk_apply(B, WS, b, now, list)
  if list == nil or list == '' then return false end
  local changed, fresh = false, false
  for ep, c, age in string.gmatch(list, '(%d+):(%d):(%d+)') do
    if brk_may_write(b, tonumber(ep), false, '') then
      if b.cf ~= 0 then
        b.cf = 0
        changed = true
      end
      if c == '1' then
        local at = now - tonumber(age)
        local n = redis.call('HINCRBY', B, 'c:' .. bfmt(math.floor(at / 1000000)), 1)
        if n == 1 then fresh = true end
      end
    end
  end
  if fresh then brk_window(B, WS, now) end
  return changed
end
";

/// Limiter: KEYS = state (hash: usage counters `i:`/`r:`/`t:<source>`, `gi`/`gr`/`gt`, `seq`),
/// permits (hash: id → record), win (zset: id by grant time), lease (zset: id by lease expiry),
/// progress (string: µs of the last mark), [breaker state, breaker buckets of the op's source,]
/// time offset.
/// `ARGV[1]` = op (`acquire`, `finish`, `stats`, `mark`, `age`), `ARGV[2]` = lease TTL µs,
/// `ARGV[3]` = age µs of a carried progress mark (`''` = none), `ARGV[4]` = breaker window seconds
/// (`''` = no breaker keys), `ARGV[5]` = carried breaker successes; op arguments from `ARGV[6]`;
/// the last of `ARGV` = carried exits of finished calls (`permit_id:actual_tokens,…`, `''` =
/// none), each a settle and release applied before the op.
/// With breaker keys every reply ends with the source's breaker phase and epoch.
const LIMITER_BODY: &str = r"
local K_STATE, K_PERM, K_WIN, K_LEASE, K_PROG = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local WINDOW = 60000000
local op = ARGV[1]

local function fmt(n) return string.format('%d', n) end
local function flag(x) if x then return 1 end return 0 end
local function parse(raw)
  if not raw then return nil end
  local e, t, g, w, s, st, rl, src = string.match(raw, '^(%d+) (%d+) (%d+) (%d) (%d) (%d) (%d) (.*)$')
  if not e then return nil end
  return { est = tonumber(e), tokens = tonumber(t), granted = tonumber(g), inwin = (w == '1'),
    slot = (s == '1'), settled = (st == '1'), released = (rl == '1'), src = src }
end
local function load(id) return parse(redis.call('HGET', K_PERM, id)) end
local function store(id, r)
  if (not r.inwin) and (not r.slot) then
    redis.call('HDEL', K_PERM, id)
  else
    redis.call('HSET', K_PERM, id, string.format('%d %d %d %d %d %d %d %s', r.est, r.tokens,
      r.granted, flag(r.inwin), flag(r.slot), flag(r.settled), flag(r.released), r.src))
  end
end
-- Counters never go below zero.
local function add(field, delta)
  if delta == 0 then return end
  local v = redis.call('HINCRBY', K_STATE, field, fmt(delta))
  if v < 0 then redis.call('HSET', K_STATE, field, '0') end
end
local function free_slot(id, r)
  if not r.slot then return end
  r.slot = false
  add('i:' .. r.src, -1)
  add('gi', -1)
  redis.call('ZREM', K_LEASE, id)
end
-- Settles (actual '' = no settle) and, with rel, releases permit id: at most one settle,
-- none after the release, the release idempotent.
local function finish_one(id, actual, rel)
  local r = load(id)
  if not r then return end
  if actual ~= '' and not r.settled and not r.released then
    r.settled = true
    local old = r.tokens
    local new = r.tokens + tonumber(actual) - r.est
    if new < 0 then new = 0 end
    r.tokens = new
    if r.inwin then
      add('t:' .. r.src, new - old)
      add('gt', new - old)
    end
  end
  if rel and not r.released then
    r.released = true
    free_slot(id, r)
  end
  store(id, r)
end
-- Ages entries out of the 60 s window, then reclaims expired leases (whether or not settled).
local function maintain(now)
  local old = redis.call('ZRANGEBYSCORE', K_WIN, '-inf', fmt(now - WINDOW))
  for _, id in ipairs(old) do
    redis.call('ZREM', K_WIN, id)
    local r = load(id)
    if r and r.inwin then
      add('r:' .. r.src, -1)
      add('t:' .. r.src, -r.tokens)
      add('gr', -1)
      add('gt', -r.tokens)
      r.inwin = false
      store(id, r)
    end
  end
  local expired = redis.call('ZRANGEBYSCORE', K_LEASE, '-inf', fmt(now))
  for _, id in ipairs(expired) do
    redis.call('ZREM', K_LEASE, id)
    local r = load(id)
    if r and r.slot then
      free_slot(id, r)
      store(id, r)
    end
  end
end
local function age_out(r, now) return string.format('%.6f', math.max(0, r.granted + WINDOW - now) / 1000000) end
-- Seconds until one more request fits under `limit` (src = nil: all sources).
local function hint_rpm(src, used, limit, now)
  local must_free = used + 1 - limit
  if must_free < 1 then return '' end
  local n = 0
  for _, id in ipairs(redis.call('ZRANGE', K_WIN, 0, -1)) do
    local r = load(id)
    if r and (src == nil or r.src == src) then
      n = n + 1
      if n == must_free then return age_out(r, now) end
    end
  end
  return ''
end
-- Seconds until `est` more tokens fit under `limit`.
local function hint_tpm(src, used, limit, est, now)
  if est > limit then return '' end
  local remaining = used + est
  for _, id in ipairs(redis.call('ZRANGE', K_WIN, 0, -1)) do
    local r = load(id)
    if r and (src == nil or r.src == src) then
      remaining = remaining - r.tokens
      if remaining <= limit then return age_out(r, now) end
    end
  end
  return ''
end

local now = now_us()
-- A carried progress mark, stamped at the time it was made (never moves progress back).
if ARGV[3] ~= '' then
  local stamp = now - tonumber(ARGV[3])
  local last = tonumber(redis.call('GET', K_PROG) or '')
  if (not last) or stamp > last then redis.call('SET', K_PROG, fmt(stamp)) end
end
-- Carried breaker successes of the op's source; its phase and epoch end the reply.
local brk = nil
if ARGV[4] ~= '' then
  local S, B = KEYS[6], KEYS[7]
  local b = brk_load(S)
  local changed = brk_refresh(b, now)
  if brk_apply(B, tonumber(ARGV[4]), b, now, ARGV[5]) then changed = true end
  if changed then brk_save(S, b) end
  brk = { b.ph, bfmt(b.ep) }
end
-- Carried exits of finished calls, in the order they ended.
if ARGV[#ARGV] ~= '' then
  for id, act in string.gmatch(ARGV[#ARGV], '(%d+):(%d+)') do finish_one(id, act, true) end
end
local function reply(t)
  if brk then
    t[#t + 1] = brk[1]
    t[#t + 1] = brk[2]
  end
  return t
end

if op == 'acquire' then
  local ttl, src, est = tonumber(ARGV[2]), ARGV[6], tonumber(ARGV[7])
  local sc, sr, st = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
  local gc, gr, gt = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
  maintain(now)
  local u = redis.call('HMGET', K_STATE, 'i:' .. src, 'r:' .. src, 't:' .. src, 'gi', 'gr', 'gt')
  local si, sru, stu = tonumber(u[1] or '0'), tonumber(u[2] or '0'), tonumber(u[3] or '0')
  local gi, gru, gtu = tonumber(u[4] or '0'), tonumber(u[5] or '0'), tonumber(u[6] or '0')
  if sc > 0 and si >= sc then return reply({ 'deny', 'source_concurrency', '' }) end
  if sr > 0 and sru >= sr then return reply({ 'deny', 'source_rpm', hint_rpm(src, sru, sr, now) }) end
  if st > 0 and stu + est > st then return reply({ 'deny', 'source_tpm', hint_tpm(src, stu, st, est, now) }) end
  if gc > 0 and gi >= gc then return reply({ 'deny', 'global_concurrency', '' }) end
  if gr > 0 and gru >= gr then return reply({ 'deny', 'global_rpm', hint_rpm(nil, gru, gr, now) }) end
  if gt > 0 and gtu + est > gt then return reply({ 'deny', 'global_tpm', hint_tpm(nil, gtu, gt, est, now) }) end
  local id = string.format('%015d', redis.call('HINCRBY', K_STATE, 'seq', 1))
  store(id, { est = est, tokens = est, granted = now, inwin = true, slot = true, settled = false,
    released = false, src = src })
  redis.call('ZADD', K_WIN, fmt(now), id)
  redis.call('ZADD', K_LEASE, fmt(now + ttl), id)
  redis.call('HSET', K_STATE, 'i:' .. src, fmt(si + 1), 'r:' .. src, fmt(sru + 1),
    't:' .. src, fmt(stu + est), 'gi', fmt(gi + 1), 'gr', fmt(gru + 1), 'gt', fmt(gtu + est))
  return reply({ 'ok', id })
elseif op == 'finish' then
  maintain(now)
  finish_one(ARGV[6], ARGV[7], ARGV[8] == '1')
  return reply({ 'ok' })
elseif op == 'stats' then
  maintain(now)
  local src = ARGV[6]
  local u
  if src == '' then
    u = redis.call('HMGET', K_STATE, 'gt', 'gr', 'gi')
  else
    u = redis.call('HMGET', K_STATE, 't:' .. src, 'r:' .. src, 'i:' .. src)
  end
  return reply({ u[1] or '0', u[2] or '0', u[3] or '0', tostring(redis.call('HLEN', K_PERM)) })
elseif op == 'mark' then
  -- Only what it carries: the mark in ARGV[3] (age 0 for a mark sent at once), the exits.
  return reply({ 'ok' })
elseif op == 'age' then
  local last = tonumber(redis.call('GET', K_PROG) or '')
  if not last then
    redis.call('SET', K_PROG, fmt(now))
    last = now
  end
  return reply({ string.format('%.6f', math.max(0, now - last) / 1000000) })
end
return redis.error_reply('unknown limiter op')
";

/// Breaker: KEYS = state, buckets (see [`BRK_LIB`]), time offset. `ARGV[1]` = op (`enter`,
/// `success`, `failure`, `release`, `snap`, `flush`); `ARGV[2..8]` = config; `ARGV[9]` = carried
/// successes of this source (applied first); op arguments from `ARGV[10]`. Every reply ends with
/// the phase and epoch after the op (`snap` reports them in its own fields).
const BREAKER_BODY: &str = r"
local S, B = KEYS[1], KEYS[2]
local op = ARGV[1]
local FT, FR, MC, WS = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local CD, CDM, PTTL = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])

local function fmt(n) return string.format('%d', n) end
local function cooldown_for(k)
  return math.min(CD * (2 ^ math.min(k, 1023)), CDM)
end
local function open(b, now)
  local dur = cooldown_for(b.op)
  b.op = b.op + 1
  b.oc = b.oc + 1
  local untl = now + math.floor(dur * 1000000)
  if b.ph == 'o' and b.untl > untl then untl = b.untl end
  b.ph = 'o'
  b.untl = untl
  b.hp = false
  b.ep = b.ep + 1
  b.lc = dur
end
local function close_circuit(b)
  b.ph = 'c'
  b.hp = false
  b.ep = b.ep + 1
  b.cf = 0
  b.op = 0
  redis.call('DEL', B)
end

local now = now_us()
local b = brk_load(S)
local changed = brk_refresh(b, now)
if brk_apply(B, WS, b, now, ARGV[9]) then changed = true end
local function done(t)
  if changed then brk_save(S, b) end
  t[#t + 1] = b.ph
  t[#t + 1] = fmt(b.ep)
  return t
end
if op == 'enter' then
  local owner = ARGV[10]
  if b.ph == 'c' then
    return done({ '1', '0', fmt(b.ep), '' })
  elseif b.ph == 'o' then
    return done({ '0', '0', fmt(b.ep), string.format('%.6f', math.max(0, b.untl - now) / 1000000) })
  elseif b.hp then
    return done({ '0', '0', fmt(b.ep), '0' })
  end
  b.hp = true
  b.po = owner
  b.pe = now + PTTL
  changed = true
  return done({ '1', '1', fmt(b.ep), '' })
elseif op == 'success' then
  local ep, is_probe, owner, count = tonumber(ARGV[10]), ARGV[11] == '1', ARGV[12], ARGV[13] == '1'
  if brk_may_write(b, ep, is_probe, owner) then
    if b.ph == 'h' then
      close_circuit(b)
      changed = true
    else
      if b.cf ~= 0 then
        b.cf = 0
        changed = true
      end
      if count then brk_sample(B, WS, now, now, false) end
    end
  end
  return done({ 'ok' })
elseif op == 'failure' then
  local ep, is_probe, owner = tonumber(ARGV[10]), ARGV[11] == '1', ARGV[12]
  local counted, force = ARGV[13] == '1', ARGV[14] == '1'
  if brk_may_write(b, ep, is_probe, owner) then
    changed = true
    if not counted then
      if b.ph == 'h' then b.hp = false end
    elseif b.ph == 'h' then
      open(b, now)
    else
      b.cf = b.cf + 1
      brk_sample(B, WS, now, now, true)
      if force then
        open(b, now)
      else
        local calls, fails = brk_window(B, WS, now)
        local evidence = calls >= MC
        local rate = 0
        if calls > 0 then rate = fails / calls end
        local healthy = evidence and rate < FR
        if (evidence and rate >= FR) or (b.cf >= FT and not healthy) then open(b, now) end
      end
    end
  end
  return done({ 'ok' })
elseif op == 'release' then
  local ep, owner = tonumber(ARGV[10]), ARGV[11]
  if b.ep == ep and b.ph == 'h' and b.hp and b.po == owner then
    b.hp = false
    changed = true
  end
  return done({ 'ok' })
elseif op == 'flush' then
  return done({ 'ok' })
elseif op == 'snap' then
  if changed then brk_save(S, b) end
  local calls, fails = brk_window(B, WS, now)
  local state, untl, cd = 'closed', '', cooldown_for(b.op)
  if b.ph == 'o' then
    state = 'open'
    untl = string.format('%.6f', b.untl / 1000000)
    cd = b.lc
  elseif b.ph == 'h' then
    state = 'half_open'
  end
  return { state, fmt(b.ep), fmt(b.cf), fmt(calls), fmt(fails), untl, string.format('%.17g', cd),
    fmt(b.oc) }
end
return redis.error_reply('unknown breaker op')
";

/// The limiter script (loaded once per server, reloaded on `NOSCRIPT`).
pub(crate) static LIMITER: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(format!("{NOW}{BRK_LIB}{LIMITER_BODY}")));

/// The breaker script.
pub(crate) static BREAKER: LazyLock<Script> =
    LazyLock::new(|| Script::from_lua(format!("{NOW}{BRK_LIB}{BREAKER_BODY}")));
