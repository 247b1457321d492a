-- leasehold-fence: one fenced write to Redis, atomically.
--
-- Redis runs a script to completion with no other command interleaved, so
-- the check of the token and the write it guards are one step: no
-- check-then-write race lets a stale writer through.
--
-- KEYS[1]  the data key
-- KEYS[2]  the fence key: the highest accepted token for (data key, lock),
--          a decimal string (format v1), kept in the same hash slot as the
--          data key. A later format will start its values with "v<N>:", so
--          this script refuses one (LEASEHOLD_NEWER) instead of misreading it
-- KEYS[3]  the rejection log of the data key (a list, newest first)
-- ARGV[1]  lock name
-- ARGV[2]  token, decimal u64 without leading zeros
-- ARGV[3]  how many rejection records to keep
-- ARGV[4]  op: SET | HSET | DEL
-- ARGV[5..] op arguments: SET value | HSET field value | DEL (none)
--
-- Returns {1, token} when the write was done, {0, highest} when refused.
--
-- Lua numbers are doubles: integers above 2^53 are not exact, so
-- 2^53 + 1 would read as 2^53 and compare wrongly. Tokens are checked as
-- strings first and anything above 2^53 is refused with an error reply
-- starting "LEASEHOLD_TOKEN_RANGE", before anything is written.

local TOKEN_MAX = '9007199254740992' -- 2^53, 16 digits

local function token_of(s)
  if type(s) ~= 'string' or not (s == '0' or string.match(s, '^[1-9]%d*$')) then
    return nil, 'is not a decimal integer'
  end
  if #s > #TOKEN_MAX or (#s == #TOKEN_MAX and s > TOKEN_MAX) then
    return nil, 'exceeds 2^53 (Lua compares numbers as doubles)'
  end
  return tonumber(s)
end

local lock, token_s, kept_s, op = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

-- Validate everything before the first write: an error after a write
-- would not undo it.
local token, why = token_of(token_s)
if not token then
  return redis.error_reply('LEASEHOLD_TOKEN_RANGE token ' .. tostring(token_s) .. ' ' .. why)
end
local kept = tonumber(kept_s)
if not kept or kept < 1 then
  return redis.error_reply('LEASEHOLD_ARGS rejections kept must be >= 1')
end
local args = { SET = 1, HSET = 2, DEL = 0 }
if args[op] == nil or #ARGV ~= 4 + args[op] then
  return redis.error_reply('LEASEHOLD_ARGS unknown op or wrong argument count: ' .. tostring(op))
end

local highest_s = redis.call('GET', KEYS[2])
if highest_s then
  local highest = token_of(highest_s)
  if not highest then
    local newer = string.match(highest_s, '^v(%d+):')
    if newer then
      return redis.error_reply('LEASEHOLD_NEWER the fence key is format v' .. newer ..
        ', newer than this adapter reads (v1): use the leasehold-fence release that wrote it,' ..
        ' or a newer one; nothing was written')
    end
    return redis.error_reply('LEASEHOLD_CORRUPT fence key holds ' .. highest_s)
  end
  if token < highest then
    local t = redis.call('TIME')
    local at_ms = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
    -- "presented highest at_unix_ms lock": the lock goes last so it may hold spaces.
    redis.call('LPUSH', KEYS[3], token_s .. ' ' .. highest_s .. ' ' .. at_ms .. ' ' .. lock)
    redis.call('LTRIM', KEYS[3], 0, kept - 1)
    return { 0, highest_s }
  end
end

-- The op first: if it fails (WRONGTYPE) the script stops and the fence
-- is not raised for a write that did not happen.
if op == 'SET' then
  redis.call('SET', KEYS[1], ARGV[5])
elseif op == 'HSET' then
  redis.call('HSET', KEYS[1], ARGV[5], ARGV[6])
else
  redis.call('DEL', KEYS[1])
end
redis.call('SET', KEYS[2], token_s)
return { 1, token_s }
