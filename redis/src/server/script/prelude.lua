-- locklab's copy of redis-server 7.0's Lua sandbox.
--
-- This chunk runs once in every Lua VM the simulator creates (chunk name
-- "=locklab", which the error handler uses to recognise our own frames). It
-- builds the two worlds a Redis script can live in:
--
--   * the EVAL world: KEYS, ARGV, `redis` (with the debugger stubs), and
--     `__redis__err__handler`;
--   * the FUNCTION world: `redis` without KEYS/ARGV, plus a separate set of
--     globals seen only while FUNCTION LOAD runs the library's top level
--     (just `redis.register_function`, `redis.log` and the version fields).
--
-- Redis locks its globals with a patched Lua ("readonly tables"). Stock Lua
-- has no such thing, so we give scripts *proxies*: empty tables whose
-- metatable reads through to the real table and refuses every write with
-- Redis's own message. The real tables never leave this chunk.
--
-- Every builtin we replace that can raise an error is wrapped by a Rust
-- trampoline (`C`). That matters for a subtle reason: `return f(x)` is a tail
-- call, and a tail call into a *Lua* function erases the caller's frame, so
-- the error would lose the script's line number. A tail call into a C
-- function keeps it, just as redis-server's C builtins do. Inside a
-- trampolined function the script is therefore three levels up:
-- error(msg, 3).

local rust, config = ...
local C = rust.c

local G = _G
local type, select, error, tonumber, rawequal = type, select, error, tonumber, rawequal
local raw_tostring, raw_rawget, raw_rawset, raw_next = tostring, rawget, rawset, next
local raw_setmetatable, raw_getmetatable, raw_ipairs = setmetatable, getmetatable, ipairs
local raw_pcall, raw_xpcall, setfenv = pcall, xpcall, setfenv
local raw_loadstring = loadstring
local getinfo, dbg_getmetatable = debug.getinfo, debug.getmetatable
local string_lib, table_lib, math_lib, coroutine_lib = string, table, math, coroutine
local sub, byte, find, format, lower, gsub = string.sub, string.byte, string.find, string.format, string.lower, string.gsub
local floor = math.floor
local concat = table.concat
local INTERNAL = "=locklab"

-- Strings as C sees them: up to the first NUL (redis-server builds its error
-- and status texts with C string functions).
local function cstr(s)
  local z = find(s, "\0", 1, true)
  if z then return sub(s, 1, z - 1) end
  return s
end

-- sdstrim(s, "\r\n"): strip CR/LF from both ends.
local function trim_crlf(s)
  s = gsub(s, "^[\r\n]+", "")
  s = gsub(s, "[\r\n]+$", "")
  return s
end

-- luaPushErrorBuff: "-CODE message" or "message" becomes the error table
-- {err = "CODE message"} that redis.pcall returns and redis.call raises.
local function error_table(buf)
  buf = cstr(buf)
  local code, msg
  if byte(buf, 1) == 45 then -- '-'
    local sp = find(buf, " ", 1, true)
    if sp then
      code, msg = sub(buf, 2, sp - 1), sub(buf, sp + 1)
    else
      code, msg = "ERR", sub(buf, 2)
    end
  else
    code, msg = "ERR", buf
  end
  return { err = code .. " " .. trim_crlf(msg) }
end

-- luaPushError + luaError.
local function raise(msg)
  error(error_table(msg), 0)
end

-- luaL_typename for argument i of n (a missing argument is "no value").
local function argtype(n, i, v)
  if i > n then return "no value" end
  return type(v)
end

-- C's (int) cast of a double, as x86-64 performs it (out of range: INT_MIN).
local function to_cint(x)
  if x ~= x or x >= 2147483648 or x <= -2147483649 then return -2147483648 end
  if x >= 0 then return floor(x) end
  return -floor(-x)
end

-- luaL_checkint: (int) (ptrdiff_t) d, the double made a 64-bit integer
-- (NaN and out of range: LLONG_MIN) and then cut to its low 32 bits, so
-- 2^32 + 2 is 2 and 2^53 is 0.
local function to_luaint(x)
  if x ~= x or x >= 9223372036854775808 or x < -9223372036854775808 then return 0 end
  local t = x >= 0 and floor(x) or -floor(-x)
  local m = math_lib.fmod(t, 4294967296)
  if m < 0 then m = m + 4294967296 end
  if m >= 2147483648 then m = m - 4294967296 end
  return m
end

-- The name luaL_argerror gives the builtin a wrapper stands for: the one its
-- caller's call instruction names (getfuncname), '?' when a C function such
-- as pcall called it. Level 1 is this, 2 the wrapper, 3 the trampoline.
local function cname()
  local ar = getinfo(3, "n")
  return ar and ar.name or "?"
end

--------------------------------------------------------------------------
-- Readonly tables
--------------------------------------------------------------------------

local REAL = raw_setmetatable({}, { __mode = "k" })    -- proxy -> real table
local FAKE_MT = raw_setmetatable({}, { __mode = "k" }) -- proxy -> what getmetatable says

local function readonly_error()
  error("Attempt to modify a readonly table", 2)
end

local function protect(real)
  local proxy = raw_setmetatable({}, { __index = real, __newindex = readonly_error })
  REAL[proxy] = real
  return proxy
end

-- luaProtectedTableError: the __index of the globals table.
local function missing_global(_, k)
  local tk = type(k)
  if tk ~= "string" and tk ~= "number" then
    error("Second argument to luaProtectedTableError must be a string or number", 2)
  end
  error("Script attempted to access nonexistent global variable '" .. cstr(k .. "") .. "'", 2)
end

-- Strings keep their methods, but through the readonly `string`.
local string_proxy = protect(string_lib)
local string_mt = raw_getmetatable("")
string_mt.__index = string_proxy
local string_mt_proxy = protect(string_mt)

--------------------------------------------------------------------------
-- Deterministic tostring
--------------------------------------------------------------------------

-- redis-server prints real addresses ("table: 0x7f..."), which differ on
-- every run; the simulator must replay exactly, so each run numbers the
-- objects it prints instead.
local RUN = 0
local ids, id_count, id_run = nil, 0, -1
local nan_text = rust.nan_text

local function tostring_impl(v)
  local tv = type(v)
  if tv == "table" or tv == "function" or tv == "thread" or tv == "userdata" then
    local mt = dbg_getmetatable(v)
    if mt == nil or raw_rawget(mt, "__tostring") == nil then
      if id_run ~= RUN then
        ids, id_count, id_run = raw_setmetatable({}, { __mode = "k" }), 0, RUN
      end
      local s = ids[v]
      if s == nil then
        id_count = id_count + 1
        s = tv .. ": 0x" .. format("%08x", 0x00a00000 + id_count * 0x40)
        ids[v] = s
      end
      return s
    end
  elseif tv == "number" and v ~= v then
    return nan_text(v)
  end
  return raw_tostring(v)
end

local function tostring_w(...)
  if select("#", ...) == 0 then error("bad argument #1 to '" .. cname() .. "' (value expected)", 3) end
  return tostring_impl((...))
end

--------------------------------------------------------------------------
-- Builtins that must see through proxies
--------------------------------------------------------------------------

local function getmetatable_w(...)
  if select("#", ...) == 0 then error("bad argument #1 to 'getmetatable' (value expected)", 3) end
  local v = ...
  if v ~= nil and REAL[v] ~= nil then return FAKE_MT[v] end
  local mt = raw_getmetatable(v)
  if mt == string_mt then return string_mt_proxy end
  return mt
end

local function setmetatable_w(...)
  local n = select("#", ...)
  local t, mt = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'setmetatable' (table expected, got " .. argtype(n, 1, t) .. ")", 3)
  end
  local tm = type(mt)
  if n < 2 or (tm ~= "nil" and tm ~= "table") then
    error("bad argument #2 to 'setmetatable' (nil or table expected)", 3)
  end
  local cur = dbg_getmetatable(t)
  if cur ~= nil and raw_rawget(cur, "__metatable") ~= nil then
    error("cannot change a protected metatable", 3)
  end
  if REAL[t] ~= nil then error("Attempt to modify a readonly table", 0) end
  return raw_setmetatable(t, mt)
end

local function next_w(...)
  local n = select("#", ...)
  local t, k = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'next' (table expected, got " .. argtype(n, 1, t) .. ")", 3)
  end
  return raw_next(REAL[t] or t, k)
end

local function pairs_w(...)
  local n = select("#", ...)
  local t = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'pairs' (table expected, got " .. argtype(n, 1, t) .. ")", 3)
  end
  local real = REAL[t]
  if real ~= nil then
    return function(_, k) return raw_next(real, k) end, t, nil
  end
  return raw_next, t, nil
end

local function ipairs_w(...)
  local n = select("#", ...)
  local t = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'ipairs' (table expected, got " .. argtype(n, 1, t) .. ")", 3)
  end
  return raw_ipairs(t)
end

local function rawget_w(...)
  local n = select("#", ...)
  local t, k = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'rawget' (table expected, got " .. argtype(n, 1, t) .. ")", 3)
  end
  if n < 2 then error("bad argument #2 to 'rawget' (value expected)", 3) end
  return raw_rawget(REAL[t] or t, k)
end

local function rawset_w(...)
  local n = select("#", ...)
  local t, k, v = ...
  if type(t) ~= "table" then
    error("bad argument #1 to 'rawset' (table expected, got " .. argtype(n, 1, t) .. ")", 3)
  end
  if n < 2 then error("bad argument #2 to 'rawset' (value expected)", 3) end
  if n < 3 then error("bad argument #3 to 'rawset' (value expected)", 3) end
  if REAL[t] ~= nil then error("Attempt to modify a readonly table", 0) end
  if k == nil then error("table index is nil", 0) end
  if k ~= k then error("table index is NaN", 0) end
  return raw_rawset(t, k, v)
end

-- Redis's own pcall (luaRedisPcall): an error table with an `err` string is
-- reported as that string, as Redis 6 scripts expect.
-- The scripts' pcall is that, in the VM (`__redis_pcall`): one C function,
-- so error levels under it count as on redis-server.
local pcall_w = G.__redis_pcall
G.__redis_pcall = nil

-- 5.1's xpcall insists on its handler argument.
local function xpcall_w(...)
  if select("#", ...) < 2 then error("bad argument #2 to 'xpcall' (value expected)", 3) end
  return raw_xpcall(...)
end

-- luaL_where(L, 1) from inside a trampolined function: the position of
-- whoever called the trampoline, the frame above our own frames (and the
-- tail calls between them) and the trampoline's C frame; none when that
-- caller is a C function itself (pcall, a resume).
local function where_caller()
  local level = 2
  local i = getinfo(level, "S")
  while i and (i.source == INTERNAL or i.what == "tail") do
    level = level + 1
    i = getinfo(level, "S")
  end
  if i == nil then return "" end
  i = getinfo(level + 1, "Sl")
  if i and i.what ~= "C" and i.source ~= INTERNAL and i.currentline > 0 then
    return i.short_src .. ":" .. i.currentline .. ": "
  end
  return ""
end

-- coroutine.wrap as 5.1's auxwrap: a string error gets the caller's position.
local raw_cocreate, raw_coresume = coroutine_lib.create, coroutine_lib.resume
local function wrap_result(ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == "string" or type(e) == "number" then e = where_caller() .. e end
  error(e, 0)
end
local function cowrap_w(...)
  local f = ...
  if type(f) ~= "function" then
    error("bad argument #1 to 'wrap' (Lua function expected)", 3)
  end
  local co = raw_cocreate(f)
  return C(function(...) return wrap_result(raw_coresume(co, ...)) end)
end

-- luaO_chunkid, for the one message we have to build ourselves.
local function chunkid(source)
  source = cstr(source)
  local c = byte(source, 1)
  if c == 61 then -- '='
    return sub(source, 2, 60)
  elseif c == 64 then -- '@'
    source = sub(source, 2)
    local room = 60 - 8
    if #source > room then return "..." .. sub(source, #source - room + 1) end
    return source
  end
  local len = (find(source, "[\r\n]")) or (#source + 1)
  len = len - 1
  local room = 60 - 17
  if len > room then len = room end
  if len < #source then return '[string "' .. sub(source, 1, len) .. '..."]' end
  return '[string "' .. source .. '"]'
end

-- Redis's Lua refuses precompiled chunks: they go to the text parser, which
-- stops at the first byte.
local function compile(src, chunkname, env)
  if byte(src, 1) == 27 then
    return nil, chunkid(chunkname) .. ":1: unexpected symbol near 'char(27)'"
  end
  local f, err = raw_loadstring(src, chunkname)
  if f == nil then return nil, err end
  setfenv(f, env)
  return f
end

local function make_loadstring(env)
  return function(...)
    local n = select("#", ...)
    local s, name = ...
    local ts = type(s)
    if ts == "number" then
      s = s .. ""
    elseif ts ~= "string" then
      error("bad argument #1 to 'loadstring' (string expected, got " .. argtype(n, 1, s) .. ")", 3)
    end
    local tn = type(name)
    if name == nil then
      name = s
    elseif tn == "number" then
      name = name .. ""
    elseif tn ~= "string" then
      error("bad argument #2 to 'loadstring' (string expected, got " .. tn .. ")", 3)
    end
    return compile(s, name, env)
  end
end

local function make_load(env)
  return function(...)
    local n = select("#", ...)
    local reader, name = ...
    if type(reader) ~= "function" then
      error("bad argument #1 to 'load' (function expected, got " .. argtype(n, 1, reader) .. ")", 3)
    end
    local tn = type(name)
    if name == nil then
      name = "=(load)"
    elseif tn == "number" then
      name = name .. ""
    elseif tn ~= "string" then
      error("bad argument #2 to 'load' (string expected, got " .. tn .. ")", 3)
    end
    local parts = {}
    local ok, err = raw_pcall(function()
      while true do
        local piece = reader()
        if piece == nil then return end
        local tp = type(piece)
        if tp == "number" then
          piece = piece .. ""
        elseif tp ~= "string" then
          error("reader function must return a string", 0)
        end
        if piece == "" then return end
        parts[#parts + 1] = piece
      end
    end)
    if not ok then return nil, err end
    return compile(concat(parts), name, env)
  end
end

-- Redis lets scripts call collectgarbage, but one script stopping the
-- collector must not starve every later one (they share this VM), so "stop",
-- "restart" and the tuning options are accepted and ignored.
local raw_collectgarbage = collectgarbage
local GC_OPTIONS = { stop = true, restart = true, collect = true, count = true, step = true,
                     setpause = true, setstepmul = true }
local function collectgarbage_w(...)
  local n = select("#", ...)
  local opt, arg = ...
  if opt == nil then
    opt = "collect"
  elseif type(opt) == "number" then
    opt = opt .. ""
  elseif type(opt) ~= "string" then
    error("bad argument #1 to 'collectgarbage' (string expected, got " .. argtype(n, 1, opt) .. ")", 3)
  end
  if not GC_OPTIONS[opt] then
    error("bad argument #1 to 'collectgarbage' (invalid option '" .. cstr(opt) .. "')", 3)
  end
  if opt == "stop" or opt == "restart" then return 0 end
  if opt == "setpause" or opt == "setstepmul" then return 200 end
  if opt == "step" then
    local k = tonumber(arg)
    if arg ~= nil and k == nil then
      error("bad argument #2 to 'collectgarbage' (number expected, got " .. argtype(n, 2, arg) .. ")", 3)
    end
    return raw_collectgarbage("step", k or 0)
  end
  return raw_collectgarbage(opt)
end

--------------------------------------------------------------------------
-- math.random: Redis's own, on the deterministic redisLrand48 generator
--------------------------------------------------------------------------

local lrand48, srand48 = rust.lrand48, rust.srand48

local function random_w(...)
  local n = select("#", ...)
  -- Redis draws the number before it looks at the arguments.
  local r = (lrand48() % 2147483647) / 2147483647
  if n == 0 then return r end
  -- Its switch on lua_gettop(L) refuses three arguments before reading any.
  if n > 2 then error("wrong number of arguments", 3) end
  local a, b = ...
  local l = tonumber(a)
  if l == nil then
    error("bad argument #1 to '" .. cname() .. "' (number expected, got " .. argtype(n, 1, a) .. ")", 3)
  end
  l = to_luaint(l)
  if n == 1 then
    if not (1 <= l) then error("bad argument #1 to '" .. cname() .. "' (interval is empty)", 3) end
    return floor(r * l) + 1
  elseif n == 2 then
    local u = tonumber(b)
    if u == nil then
      error("bad argument #2 to '" .. cname() .. "' (number expected, got " .. argtype(n, 2, b) .. ")", 3)
    end
    u = to_luaint(u)
    if not (l <= u) then error("bad argument #2 to '" .. cname() .. "' (interval is empty)", 3) end
    -- `u-l+1` is C int arithmetic: it wraps past INT_MAX.
    return floor(r * to_luaint(u - l + 1)) + l
  end
  error("wrong number of arguments", 3)
end

local function randomseed_w(...)
  local n = select("#", ...)
  local a = ...
  local s = tonumber(a)
  if s == nil then
    error("bad argument #1 to '" .. cname() .. "' (number expected, got " .. argtype(n, 1, a) .. ")", 3)
  end
  srand48(to_luaint(s))
end

math_lib.random = C(random_w)
math_lib.randomseed = C(randomseed_w)

--------------------------------------------------------------------------
-- bit (LuaBitOp), as Redis bundles it
--------------------------------------------------------------------------

local bitop = rust.bitop

-- barg: the argument as an unsigned 32-bit value (LuaBitOp's 2^52+2^51 trick).
local function barg(fname, n, i, v)
  local x = tonumber(v)
  if x == nil then
    error("bad argument #" .. i .. " to '" .. fname .. "' (number expected, got " .. argtype(n, i, v) .. ")", 4)
  end
  return (x + 6755399441055744) % 4294967296
end

local function bit_fold(fname, op)
  return C(function(...)
    local n = select("#", ...)
    local acc = barg(fname, n, 1, (...))
    for i = 2, n do acc = bitop(op, acc, barg(fname, n, i, (select(i, ...)))) end
    return bitop("ret", acc, 0)
  end)
end

local function bit_shift(fname, op)
  return C(function(...)
    local n = select("#", ...)
    local a, s = ...
    local b = barg(fname, n, 1, a)
    return bitop(op, b, barg(fname, n, 2, s) % 32)
  end)
end

local bit_lib = {
  tobit = C(function(...) return bitop("ret", barg("tobit", select("#", ...), 1, (...)), 0) end),
  bnot = C(function(...) return bitop("bnot", barg("bnot", select("#", ...), 1, (...)), 0) end),
  band = bit_fold("band", "band"),
  bor = bit_fold("bor", "bor"),
  bxor = bit_fold("bxor", "bxor"),
  lshift = bit_shift("lshift", "lshift"),
  rshift = bit_shift("rshift", "rshift"),
  arshift = bit_shift("arshift", "arshift"),
  rol = bit_shift("rol", "rol"),
  ror = bit_shift("ror", "ror"),
  bswap = C(function(...) return bitop("bswap", barg("bswap", select("#", ...), 1, (...)), 0) end),
  tohex = C(function(...)
    local n = select("#", ...)
    local a, w = ...
    local b = barg("tohex", n, 1, a)
    local digits = 8
    if n >= 2 then
      digits = barg("tohex", n, 2, w)
      if digits >= 2147483648 then digits = digits - 4294967296 end
    end
    return rust.tohex(b, digits)
  end),
}

--------------------------------------------------------------------------
-- struct (lua_struct.c), as Redis bundles it: the work in Rust
-- (structlib.rs); here each argument as the C functions would read it, and
-- their errors raised with the script's position and the name it called.
--------------------------------------------------------------------------

local struct_call = rust.struct

-- The results as they came (no unpack: 7,997 of them is within a C
-- function's limit, not within unpack's), or the error raised.
local function struct_result(name, tag, ...)
  if tag == "ok" then return ... end
  local a, b = ...
  if tag == "arg" then
    error(where_caller() .. "bad argument #" .. a .. " to '" .. name .. "' (" .. b .. ")", 0)
  end
  error(where_caller() .. a, 0)
end

local function struct_fn(op)
  return C(function(...)
    local name = cname()
    local n = select("#", ...)
    local types, numbers, texts = {}, {}, {}
    for i = 1, n do
      local v = (select(i, ...))
      local t = type(v)
      types[i] = t
      if t == "number" or t == "string" then
        numbers[i] = tonumber(v)
        texts[i] = v .. ""
      end
    end
    return struct_result(name, struct_call(op, n, { types = types, numbers = numbers, texts = texts }))
  end)
end

local struct_lib = {
  pack = struct_fn("pack"),
  unpack = struct_fn("unpack"),
  size = struct_fn("size"),
}

--------------------------------------------------------------------------
-- The redis.* API
--------------------------------------------------------------------------

local HOST_CALL, HOST_PCALL = rust.call, rust.pcall
local in_script = rust.in_script

local function status_reply(...)
  local s = ...
  if select("#", ...) ~= 1 or type(s) ~= "string" then
    return error_table("wrong number or type of arguments")
  end
  return { ok = s }
end

local function error_reply(...)
  local s = ...
  if select("#", ...) ~= 1 or type(s) ~= "string" then
    return error_table("wrong number or type of arguments")
  end
  s = cstr(s)
  if byte(s, 1) ~= 45 then s = "-" .. s end
  return error_table(s)
end

local sha1 = rust.sha1hex
local note_log = rust.note_log
local function sha1hex(...)
  if select("#", ...) ~= 1 then raise("wrong number of arguments") end
  local s = ...
  local t = type(s)
  if t == "number" then
    s = s .. ""
  elseif t ~= "string" then
    s = ""
  end
  return sha1(s)
end

-- redis.log: validated like redis-server; the simulator keeps no log file.
local function log(...)
  local n = select("#", ...)
  if n < 2 then raise("redis.log() requires two arguments or more.") end
  local level = tonumber((...))
  if level == nil then raise("First argument must be a number (log level).") end
  level = to_cint(level)
  if level < 0 or level > 3 then raise("Invalid debug level.") end
  local total = 0
  for i = 2, n do
    local v = select(i, ...)
    if type(v) == "string" or type(v) == "number" then total = total + #tostring(v) end
  end
  note_log(total)
end

local set_resp3 = rust.set_resp3
local function setresp(...)
  if not in_script() then raise("redis.setresp can only be called inside a script invocation") end
  if select("#", ...) ~= 1 then raise("redis.setresp() requires one argument.") end
  local resp = to_cint(tonumber((...)) or 0)
  if resp ~= 2 and resp ~= 3 then raise("RESP version must be 2 or 3.") end
  set_resp3(resp == 3)
end

local function set_repl(...)
  if not in_script() then raise("redis.set_repl can only be called inside a script invocation") end
  if select("#", ...) ~= 1 then raise("redis.set_repl() requires two arguments.") end
  local flags = to_cint(tonumber((...)) or 0)
  if flags < 0 or flags > 3 then
    raise("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
  end
end

local acl_known = rust.acl_known
local function acl_check_cmd(...)
  if not in_script() then raise("redis.acl_check_cmd can only be called inside a script invocation") end
  local known, err = acl_known(...)
  if known == nil then raise(err) end
  if not known then raise("Invalid command passed to redis.acl_check_cmd()") end
  return true
end

local function add_common(t)
  t.call = HOST_CALL
  t.pcall = HOST_PCALL
  t.log = C(log)
  t.LOG_DEBUG, t.LOG_VERBOSE, t.LOG_NOTICE, t.LOG_WARNING = 0, 1, 2, 3
  t.REDIS_VERSION = config.version
  t.REDIS_VERSION_NUM = config.version_num
  t.setresp = C(setresp)
  t.sha1hex = C(sha1hex)
  t.error_reply = C(error_reply)
  t.status_reply = C(status_reply)
  t.set_repl = C(set_repl)
  t.REPL_NONE, t.REPL_AOF, t.REPL_SLAVE, t.REPL_REPLICA, t.REPL_ALL = 0, 1, 2, 2, 3
  t.acl_check_cmd = C(acl_check_cmd)
  return t
end

local eval_redis = add_common({})
eval_redis.breakpoint = function() return false end -- no debugger session
eval_redis.debug = function() end
eval_redis.replicate_commands = function() return true end
local function_redis = add_common({})

--------------------------------------------------------------------------
-- The error handler
--------------------------------------------------------------------------

-- __redis__err__handler, with one addition: our own Lua frames (the
-- proxies' metamethods) stand in for redis-server's C functions, so they are
-- skipped when looking for the script's line.
local LAST_ERR = nil
-- The kill's error, where the count hook saw the kill: the run's error
-- whatever the error handler makes of the abort that follows (an abort
-- raised inside native work, `s .. i`, reaches it with no frame to name).
local KILL_ERR = nil
local function err_handler(err)
  local level = 2
  local function frame()
    while true do
      local i = getinfo(level, "nSl")
      level = level + 1
      if i == nil or i.source ~= INTERNAL then return i end
    end
  end
  local i = frame()
  if i and i.what == "C" then
    i = frame()
  elseif i and type(err) == "string" and i.currentline > 0 then
    -- A runtime error the VM raised in this Lua frame: real Lua always
    -- prefixes those with the position, omnilua forgets a few
    -- ("table index is nil").
    local where = i.short_src .. ":" .. i.currentline .. ":"
    if sub(err, 1, #where) ~= where then err = where .. " " .. err end
  end
  if type(err) ~= "table" then
    err = { err = "ERR " .. tostring_impl(err) }
  end
  if i then
    err.source = i.source
    err.line = i.currentline
  end
  LAST_ERR = err
  return err
end

--------------------------------------------------------------------------
-- The two worlds
--------------------------------------------------------------------------

coroutine_lib.wrap = C(cowrap_w)

--------------------------------------------------------------------------
-- Native work in the budget, and bounded pattern recursion
--------------------------------------------------------------------------

-- The VM's instruction budget counts Lua instructions, not the work a
-- builtin does inside one: `s:find("y", 1, true)` on a 4 MB string, or
-- `table.sort` of a million items, is one instruction. Every string a
-- script makes (`..`, sub, format, rep, gsub, upper, table.concat, a
-- reply's) is charged by the vendored VM for its bytes when it is made;
-- the builtins whose work makes no string are wrapped here to charge it
-- (rust.charge counts it as instructions, so the budget and SCRIPT KILL see
-- it at once, and stops the run, uncatchably, past the budget): bytes
-- scanned, items sorted, joined, unpacked or shifted, rep's iterations.
-- Pattern matching is charged by the matcher itself, step by step, so a
-- plain find (or a pattern without specials, which lstrlib also searches
-- with memchr) is charged for the bytes it scanned. Lua 5.1's matcher recurses once per pattern item with a
-- suffix (and per capture), natively: a pattern that would recurse deeper
-- than rust.pattern_ok allows is refused with Lua 5.2's "pattern too
-- complex" instead of overflowing the stack.
local C_unpack
do
  local RAW = {
    find = string_lib.find, match = string_lib.match, gmatch = string_lib.gmatch,
    gsub = string_lib.gsub, rep = string_lib.rep, byte = string_lib.byte,
    sort = table_lib.sort, concat = table_lib.concat, insert = table_lib.insert,
    remove = table_lib.remove, unpack = unpack,
  }
  local charge, pattern_ok = rust.charge, rust.pattern_ok
  local BYTES = config.bytes_per_unit
  -- Charge the values a builtin returned (unpack, byte): pushing one and
  -- passing it on costs about ten instructions' worth.
  local function counted(...)
    charge(10 * select("#", ...))
    return ...
  end
  local function pass(...) return ... end
  local SPECIALS = "[%^%$%*%+%?%.%(%[%%%-]"
  local function check_pattern(p)
    local tp = type(p)
    if (tp == "string" or tp == "number") and not pattern_ok(p .. "") then
      error("pattern too complex", 3)
    end
  end
  local function find_w(...)
    local s, p, init, plain = ...
    if type(s) == "string" and type(p) == "string" and (plain or not find(p, SPECIALS)) then
      -- A plain search (memchr-fast, but uncounted by the VM): charge the
      -- bytes it scanned.
      local a, b = RAW.find(...)
      if a == nil then
        charge(#s / BYTES)
        return nil
      end
      charge(a / BYTES)
      return a, b
    end
    check_pattern(p)
    return pass(RAW.find(...))
  end
  local function match_w(...)
    local _, p = ...
    check_pattern(p)
    return pass(RAW.match(...))
  end
  local function gmatch_w(...)
    local _, p = ...
    check_pattern(p)
    return pass(RAW.gmatch(...))
  end
  local function gsub_w(...)
    local _, p = ...
    check_pattern(p)
    -- The matcher charges its steps and the VM the result's bytes; each
    -- replacement made costs about three instructions' worth more.
    local r, n = RAW.gsub(...)
    charge(3 * n)
    return r, n
  end
  local function len_of(s)
    local ts = type(s)
    if ts == "string" then return #s end
    if ts == "number" then return #(s .. "") end
    return 0
  end
  local function rep_w(...)
    local s, n = ...
    local ts = type(s)
    -- Only what rep will build is charged: a string (or number) `s`, and
    -- `n` as 5.1's luaL_checkint reads it (2^31 is INT_MIN: nothing), so a
    -- table is refused as redis-server refuses it, not charged first.
    if (ts == "string" or ts == "number") and type(n) == "number" then n = to_luaint(n) else n = 0 end
    if n > 0 then
      -- Its iterations and its result's bytes, charged before the result
      -- is built, so a budget ends it before the memory is taken (the VM
      -- charges the bytes again as it makes the string: rep writes them,
      -- then the string copies them); past the memory ceiling the VM's
      -- own memory stop answers instead, also before building.
      local bytes = len_of(s) * n
      if bytes <= config.memory_limit then charge(n / 2 + bytes / BYTES) end
    end
    return pass(RAW.rep(...))
  end
  local function byte_w(...)
    return counted(RAW.byte(...))
  end
  local function unpack_w(...)
    return counted(RAW.unpack(...))
  end
  -- insert(t, pos, v) and remove(t, pos) shift the items after pos.
  local function insert_w(...)
    local t = ...
    if select("#", ...) >= 3 and type(t) == "table" then charge(#t) end
    return pass(RAW.insert(...))
  end
  local function remove_w(...)
    local t = ...
    if select("#", ...) >= 2 and type(t) == "table" then charge(#t) end
    return pass(RAW.remove(...))
  end
  local function sort_w(...)
    local t = ...
    if type(t) == "table" then
      local n = #t
      if n > 1 then charge(n * (floor(math_lib.log(n) / math_lib.log(2)) + 1)) end
    end
    return pass(RAW.sort(...))
  end
  local function concat_w(...)
    local t = ...
    if type(t) == "table" then charge(#t) end
    return pass(RAW.concat(...))
  end
  string_lib.find, string_lib.match, string_lib.gmatch, string_lib.gsub =
    C(find_w), C(match_w), C(gmatch_w), C(gsub_w)
  string_lib.rep, string_lib.byte = C(rep_w), C(byte_w)
  table_lib.sort, table_lib.concat = C(sort_w), C(concat_w)
  table_lib.insert, table_lib.remove = C(insert_w), C(remove_w)
  C_unpack = C(unpack_w)
end

-- SCRIPT KILL / FUNCTION KILL: redis-server's luaMaskCountHook, every
-- config.tick_interval instructions. When the host asked for a kill,
-- remember where the script was (for the error's location) and have the
-- run stopped; rust.kill makes the VM's own abort fire, which pcall cannot
-- catch.
local tick, kill = rust.tick, rust.kill
debug.sethook(function()
  if tick() then
    local level, i = 2, nil
    while true do
      i = getinfo(level, "Sl")
      if i == nil or (i.source ~= INTERNAL and i.what ~= "C") then break end
      level = level + 1
    end
    local e = { err = "ERR Script killed by user with SCRIPT KILL..." }
    if i then e.source, e.line = i.source, i.currentline end
    LAST_ERR, KILL_ERR = e, e
    kill()
  end
end, "", config.tick_interval)

--------------------------------------------------------------------------
-- cjson (lua_cjson 2.1.0, as Redis bundles it), written in Lua
--------------------------------------------------------------------------

-- The encoder and decoder follow lua_cjson.c: the same array detection
-- (lua_array_length and its sparse-array rule), `%.14g` numbers, the same
-- escapes ('/' too), and the same error texts. Errors are raised three
-- levels up, as the other trampolined builtins do, so a script sees
-- "user_script:N: Cannot serialise ..." and pcall sees the bare text. Two
-- visible differences: cjson.null is a table (lua_cjson's is a light
-- userdata, which a reply turns into nil), and an object's keys come out
-- in this VM's table order.

local cjson_cfg = {
  encode_max_depth = 1000,
  decode_max_depth = 1000,
  encode_invalid_numbers = false,
  encode_keep_buffer = true,
  encode_number_precision = 14,
  decode_invalid_numbers = true,
}
local cjson_null = raw_setmetatable({}, { __newindex = readonly_error })
local cjson_proxy

local JSON_ESCAPES = {
  ['"'] = '\\"', ["\\"] = "\\\\", ["/"] = "\\/",
  ["\b"] = "\\b", ["\f"] = "\\f", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
}
for b = 0, 31 do
  local c = string_lib.char(b)
  if JSON_ESCAPES[c] == nil then JSON_ESCAPES[c] = format("\\u%04x", b) end
end
JSON_ESCAPES["\127"] = "\\u007f"

local function json_string(s)
  return '"' .. gsub(s, '[%c"\\/]', JSON_ESCAPES) .. '"'
end

local function encode_fail(v, reason)
  error("Cannot serialise " .. type(v) .. ": " .. reason, 0)
end

local function json_number(v)
  if v ~= v or v == math_lib.huge or v == -math_lib.huge then
    if not cjson_cfg.encode_invalid_numbers then encode_fail(v, "must not be NaN or Inf") end
    if cjson_cfg.encode_invalid_numbers == "null" then return "null" end
  end
  return format("%." .. cjson_cfg.encode_number_precision .. "g", v)
end

-- lua_array_length: the array length, or -1 for an object.
local function array_length(t)
  local max, items = 0, 0
  local k = raw_next(t)
  while k ~= nil do
    if type(k) == "number" and k >= 1 and floor(k) == k then
      if k > max then max = k end
      items = items + 1
    else
      return -1
    end
    k = raw_next(t, k)
  end
  if max > items * 2 and max > 10 then
    error("Cannot serialise table: excessively sparse array", 0)
  end
  return max
end

local json_encode_value

local function json_encode_table(t, depth, out)
  depth = depth + 1
  if depth > cjson_cfg.encode_max_depth then
    error("Cannot serialise, excessive nesting (" .. depth .. ")", 0)
  end
  local len = array_length(t)
  if len > 0 then
    out[#out + 1] = "["
    for i = 1, len do
      if i > 1 then out[#out + 1] = "," end
      json_encode_value(raw_rawget(t, i), depth, out)
    end
    out[#out + 1] = "]"
    return
  end
  out[#out + 1] = "{"
  local first = true
  local k, v = raw_next(t)
  while k ~= nil do
    if not first then out[#out + 1] = "," end
    first = false
    local tk = type(k)
    if tk == "string" then
      out[#out + 1] = json_string(k)
    elseif tk == "number" then
      out[#out + 1] = '"' .. json_number(k) .. '"'
    else
      encode_fail(k, "table key must be a number or string")
    end
    out[#out + 1] = ":"
    json_encode_value(v, depth, out)
    k, v = raw_next(t, k)
  end
  out[#out + 1] = "}"
end

json_encode_value = function(v, depth, out)
  local tv = type(v)
  if tv == "string" then
    out[#out + 1] = json_string(v)
  elseif tv == "number" then
    out[#out + 1] = json_number(v)
  elseif tv == "boolean" then
    out[#out + 1] = v and "true" or "false"
  elseif rawequal(v, cjson_null) or v == nil then
    out[#out + 1] = "null"
  elseif tv == "table" then
    json_encode_table(v, depth, out)
  else
    encode_fail(v, "type not supported")
  end
end

local function cjson_encode(...)
  if select("#", ...) ~= 1 then error("bad argument #1 to 'encode' (expected 1 argument)", 3) end
  local out = {}
  local ok, err = raw_pcall(json_encode_value, (...), 0, out)
  if not ok then error(err, 3) end
  return concat(out)
end

-- The decoder: a cursor over the text, tokens named as lua_cjson names them.
local function cjson_decode(...)
  if select("#", ...) ~= 1 then error("bad argument #1 to 'decode' (expected 1 argument)", 3) end
  local s = (...)
  if type(s) == "number" then s = raw_tostring(s) end
  if type(s) ~= "string" then
    error("bad argument #1 to 'decode' (string expected, got " .. type(s) .. ")", 3)
  end
  local pos, depth = 1, 0
  local function fail(expected, found, at)
    error("Expected " .. expected .. " but found " .. found .. " at character " .. at, 0)
  end
  -- The next token: kind, value, where it starts.
  local function token()
    pos = find(s, "[^ \t\n\r]", pos) or #s + 1
    local at = pos
    local c = sub(s, pos, pos)
    if c == "" then return "T_END", nil, at end
    local single = ({ ["{"] = "T_OBJ_BEGIN", ["}"] = "T_OBJ_END", ["["] = "T_ARR_BEGIN",
      ["]"] = "T_ARR_END", [":"] = "T_COLON", [","] = "T_COMMA" })[c]
    if single then
      pos = pos + 1
      return single, nil, at
    end
    if c == '"' then
      local parts, i = {}, pos + 1
      while true do
        local j = find(s, '["\\]', i)
        -- A string's errors are placed where they are found, not where
        -- the string starts.
        if not j then return "T_ERROR", "unexpected end of string", #s + 1 end
        parts[#parts + 1] = sub(s, i, j - 1)
        if sub(s, j, j) == '"' then
          pos = j + 1
          return "T_STRING", concat(parts), at
        end
        local e = sub(s, j + 1, j + 1)
        local simple = ({ b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" })[e]
        if simple then
          parts[#parts + 1] = simple
          i = j + 2
        elseif e == "u" then
          local hex = sub(s, j + 2, j + 5)
          local cp = #hex == 4 and not find(hex, "[^%x]") and tonumber(hex, 16)
          if not cp then return "T_ERROR", "invalid unicode escape code", j end
          i = j + 6
          if cp >= 0xD800 and cp <= 0xDBFF and sub(s, i, i + 1) == "\\u" then
            local lo = tonumber(sub(s, i + 2, i + 5), 16)
            if lo and lo >= 0xDC00 and lo <= 0xDFFF then
              cp = 0x10000 + (cp - 0xD800) * 0x400 + (lo - 0xDC00)
              i = i + 6
            end
          end
          local ch = string_lib.char
          if cp < 0x80 then
            parts[#parts + 1] = ch(cp)
          elseif cp < 0x800 then
            parts[#parts + 1] = ch(0xC0 + floor(cp / 64), 0x80 + cp % 64)
          elseif cp < 0x10000 then
            parts[#parts + 1] = ch(0xE0 + floor(cp / 4096), 0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
          else
            parts[#parts + 1] = ch(0xF0 + floor(cp / 262144), 0x80 + floor(cp / 4096) % 64,
              0x80 + floor(cp / 64) % 64, 0x80 + cp % 64)
          end
        else
          return "T_ERROR", "invalid escape code", j
        end
      end
    end
    if find(c, "[-%d]") then
      local num = string_lib.match(s, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      local v = num and tonumber(num)
      if not v then return "T_ERROR", "invalid number", at end
      pos = pos + #num
      return "T_NUMBER", v, at
    end
    for word, kind, v in string_lib.gmatch("true T_BOOLEAN 1 false T_BOOLEAN 0 null T_NULL 0", "(%a+) (%S+) (%d)") do
      if sub(s, pos, pos + #word - 1) == word then
        pos = pos + #word
        if kind == "T_NULL" then return kind, cjson_null, at end
        return kind, v == "1", at
      end
    end
    return "T_ERROR", "invalid token", at
  end
  local function found(kind, v)
    if kind == "T_ERROR" then return v end
    return kind
  end
  local value
  local function descend(at)
    depth = depth + 1
    if depth > cjson_cfg.decode_max_depth then
      error("Found too many nested data structures (" .. depth .. ") at character " .. at, 0)
    end
  end
  local function object(at)
    descend(at)
    local t = {}
    local kind, v, where = token()
    if kind == "T_OBJ_END" then depth = depth - 1 return t end
    while true do
      if kind ~= "T_STRING" then fail("object key string", found(kind, v), where) end
      local key = v
      kind, v, where = token()
      if kind ~= "T_COLON" then fail("colon", found(kind, v), where) end
      raw_rawset(t, key, value("value"))
      kind, v, where = token()
      if kind == "T_OBJ_END" then depth = depth - 1 return t end
      if kind ~= "T_COMMA" then fail("comma or object end", found(kind, v), where) end
      kind, v, where = token()
    end
  end
  local function array(at)
    descend(at)
    local t, n = {}, 0
    local save = pos
    local kind, v, where = token()
    if kind == "T_ARR_END" then depth = depth - 1 return t end
    pos = save
    while true do
      n = n + 1
      raw_rawset(t, n, value("value"))
      kind, v, where = token()
      if kind == "T_ARR_END" then depth = depth - 1 return t end
      if kind ~= "T_COMMA" then fail("comma or array end", found(kind, v), where) end
    end
  end
  value = function(what)
    local kind, v, where = token()
    if kind == "T_OBJ_BEGIN" then return object(where) end
    if kind == "T_ARR_BEGIN" then return array(where) end
    if kind == "T_STRING" or kind == "T_NUMBER" or kind == "T_BOOLEAN" or kind == "T_NULL" then return v end
    fail(what, found(kind, v), where)
  end
  local ok, result = raw_pcall(function()
    local v = value("value")
    local kind, tv, where = token()
    if kind ~= "T_END" then fail("the end", found(kind, tv), where) end
    return v
  end)
  if not ok then error(result, 3) end
  return result
end

-- Settings: each returns its value, and sets it when given one.
local function cjson_setting(name, check)
  return C(function(...)
    if select("#", ...) > 0 then
      local v = ...
      if check then v = check(v) end
      cjson_cfg[name] = v
    end
    return cjson_cfg[name]
  end)
end
local function positive(v)
  local n = tonumber(v)
  if n == nil or n < 1 then error("bad argument #1 to 'cjson' (expected integer between 1 and 2147483647)", 4) end
  return floor(n)
end

local cjson_lib = {
  encode = C(cjson_encode),
  decode = C(cjson_decode),
  null = cjson_null,
  _NAME = "cjson",
  _VERSION = "2.1.0",
  encode_max_depth = cjson_setting("encode_max_depth", positive),
  decode_max_depth = cjson_setting("decode_max_depth", positive),
  encode_keep_buffer = cjson_setting("encode_keep_buffer"),
  encode_invalid_numbers = cjson_setting("encode_invalid_numbers"),
  encode_number_precision = cjson_setting("encode_number_precision", positive),
  decode_invalid_numbers = cjson_setting("decode_invalid_numbers"),
  encode_sparse_array = C(function() return false, 2, 10 end),
}
-- cjson.new: lua_cjson makes an instance with its own settings; here every
-- instance is the one module (scripts in Redis only ever use the global).
cjson_lib.new = C(function() return cjson_proxy end)
cjson_proxy = protect(cjson_lib)

--------------------------------------------------------------------------
-- cmsgpack (lua_cmsgpack 0.4.0, as Redis bundles it), written in Lua
--------------------------------------------------------------------------

-- MessagePack as lua_cmsgpack writes it: integers in the smallest
-- encoding, other numbers as a float32 when that loses nothing and a
-- float64 otherwise, a table as an array when its keys are exactly 1..n
-- and as a map otherwise, nesting cut at 16 levels (deeper values are
-- nil, which is how it survives circular references).

local char = string_lib.char
local MP_MAX_NESTING = 16

local function be_bytes(n, width)
  local out = {}
  for i = width, 1, -1 do
    out[i] = char(n % 256)
    n = floor(n / 256)
  end
  return concat(out)
end

-- IEEE 754 bytes of x (big-endian), width 4 or 8.
local function ieee(x, width)
  local ebits, mbits, bias = 8, 23, 127
  if width == 8 then ebits, mbits, bias = 11, 52, 1023 end
  local sign = 0
  if x < 0 or (x == 0 and 1 / x < 0) then sign, x = 1, -x end
  local e, m
  if x ~= x then
    e, m = 2 ^ ebits - 1, 2 ^ (mbits - 1)
  elseif x == math_lib.huge then
    e, m = 2 ^ ebits - 1, 0
  elseif x == 0 then
    e, m = 0, 0
  else
    local fr, ex = math_lib.frexp(x)
    e = ex + bias - 1
    if e <= 0 then
      m = floor(x / 2 ^ (1 - bias) * 2 ^ mbits + 0.5)
      e = 0
    else
      m = floor((fr * 2 - 1) * 2 ^ mbits + 0.5)
    end
  end
  if e >= 2 ^ ebits - 1 then e, m = 2 ^ ebits - 1, 0 end -- too big: infinity
  local hi = sign * 2 ^ ebits + floor(e)
  -- hi holds sign and exponent; the mantissa follows.
  local bits = hi * 2 ^ mbits + m
  if width == 4 then return be_bytes(bits, 4) end
  -- 64 bits do not fit a double's integer range: split into two halves.
  local top = hi * 2 ^ (mbits - 32) + floor(m / 2 ^ 32)
  return be_bytes(top, 4) .. be_bytes(m % 2 ^ 32, 4)
end

local function from_ieee(s, i, width)
  local b = { byte(s, i, i + width - 1) }
  local ebits, mbits, bias = 8, 23, 127
  if width == 8 then ebits, mbits, bias = 11, 52, 1023 end
  local sign = b[1] >= 128 and -1 or 1
  local e, m
  if width == 4 then
    e = (b[1] % 128) * 2 + floor(b[2] / 128)
    m = ((b[2] % 128) * 256 + b[3]) * 256 + b[4]
  else
    e = (b[1] % 128) * 16 + floor(b[2] / 16)
    m = b[2] % 16
    for k = 3, 8 do m = m * 256 + b[k] end
  end
  if e == 2 ^ ebits - 1 then
    if m == 0 then return sign * math_lib.huge end
    return 0 / 0
  end
  if e == 0 then return sign * m * 2 ^ (1 - bias - mbits) end
  return sign * (1 + m / 2 ^ mbits) * 2 ^ (e - bias)
end

local mp_encode

local function mp_int(n)
  if n >= 0 then
    if n < 128 then return char(n) end
    if n < 256 then return "\204" .. char(n) end
    if n < 65536 then return "\205" .. be_bytes(n, 2) end
    if n < 4294967296 then return "\206" .. be_bytes(n, 4) end
    return "\207" .. be_bytes(n, 8)
  end
  if n >= -32 then return char(256 + n) end
  if n >= -128 then return "\208" .. char(256 + n) end
  if n >= -32768 then return "\209" .. be_bytes(65536 + n, 2) end
  if n >= -2147483648 then return "\210" .. be_bytes(4294967296 + n, 4) end
  -- Two's complement in 64 bits, by halves.
  local hi = floor(n / 4294967296)
  local lo = n - hi * 4294967296
  return "\211" .. be_bytes(hi + 4294967296, 4) .. be_bytes(lo, 4)
end

local function mp_number(n)
  if n == floor(n) and n >= -9223372036854775808 and n < 18446744073709551616 then
    return mp_int(n)
  end
  local f = ieee(n, 4)
  if from_ieee(f, 1, 4) == n then return "\202" .. f end
  return "\203" .. ieee(n, 8)
end

local function mp_len(n, fix, base16, base32, fixmax)
  if n <= fixmax then return char(fix + n) end
  if n < 65536 then return base16 .. be_bytes(n, 2) end
  return base32 .. be_bytes(n, 4)
end

-- table_is_an_array: keys exactly 1..n.
local function mp_array_len(t)
  local count, max = 0, 0
  local k = raw_next(t)
  while k ~= nil do
    if type(k) ~= "number" or k <= 0 or floor(k) ~= k then return nil end
    if k > max then max = k end
    count = count + 1
    k = raw_next(t, k)
  end
  if max == count then return max end
  return nil
end

mp_encode = function(v, level, out)
  local tv = type(v)
  if tv == "string" then
    local n = #v
    if n < 32 then
      out[#out + 1] = char(160 + n)
    elseif n < 256 then
      out[#out + 1] = "\217" .. char(n)
    elseif n < 65536 then
      out[#out + 1] = "\218" .. be_bytes(n, 2)
    else
      out[#out + 1] = "\219" .. be_bytes(n, 4)
    end
    out[#out + 1] = v
  elseif tv == "boolean" then
    out[#out + 1] = v and "\195" or "\194"
  elseif tv == "number" then
    out[#out + 1] = mp_number(v)
  elseif tv == "table" and level < MP_MAX_NESTING then
    local n = mp_array_len(v)
    if n then
      out[#out + 1] = mp_len(n, 144, "\220", "\221", 15)
      for i = 1, n do mp_encode(raw_rawget(v, i), level + 1, out) end
    else
      local count = 0
      local k = raw_next(v)
      while k ~= nil do
        count = count + 1
        k = raw_next(v, k)
      end
      out[#out + 1] = mp_len(count, 128, "\222", "\223", 15)
      local key, val = raw_next(v)
      while key ~= nil do
        mp_encode(key, level + 1, out)
        mp_encode(val, level + 1, out)
        key, val = raw_next(v, key)
      end
    end
  else
    out[#out + 1] = "\192"
  end
end

local function mp_pack(...)
  local n = select("#", ...)
  if n == 0 then error("bad argument #0 to 'pack' (MessagePack pack needs input.)", 3) end
  local out = {}
  for i = 1, n do mp_encode((select(i, ...)), 0, out) end
  return concat(out)
end

-- Decode one object at i; returns the value and the next position, or
-- errors with lua_cmsgpack's "Missing bytes in input." text.
local function be_int(s, i, width)
  local n = 0
  for k = i, i + width - 1 do n = n * 256 + byte(s, k) end
  return n
end

local mp_decode
local function need(s, i, width)
  if i + width - 1 > #s then error("Missing bytes in input.", 0) end
end

local function mp_decode_n(s, i, count, map)
  local t = {}
  for k = 1, count do
    if map then
      local key, val
      key, i = mp_decode(s, i)
      val, i = mp_decode(s, i)
      if key ~= nil then raw_rawset(t, key, val) end
    else
      local val
      val, i = mp_decode(s, i)
      raw_rawset(t, k, val)
    end
  end
  return t, i
end

mp_decode = function(s, i)
  need(s, i, 1)
  local c = byte(s, i)
  i = i + 1
  if c < 128 then return c, i end
  if c >= 224 then return c - 256, i end
  if c >= 160 and c < 192 then
    local n = c - 160
    need(s, i, n)
    return sub(s, i, i + n - 1), i + n
  end
  if c >= 144 and c < 160 then return mp_decode_n(s, i, c - 144, false) end
  if c >= 128 and c < 144 then return mp_decode_n(s, i, c - 128, true) end
  if c == 192 then return nil, i end
  if c == 194 then return false, i end
  if c == 195 then return true, i end
  local widths = { [204] = 1, [205] = 2, [206] = 4, [207] = 8, [208] = 1, [209] = 2, [210] = 4, [211] = 8 }
  local w = widths[c]
  if w then
    need(s, i, w)
    local n = be_int(s, i, w)
    if c >= 208 and n >= 2 ^ (8 * w - 1) then n = n - 2 ^ (8 * w) end
    return n, i + w
  end
  if c == 202 or c == 203 then
    local width = c == 202 and 4 or 8
    need(s, i, width)
    return from_ieee(s, i, width), i + width
  end
  local strw = { [217] = 1, [218] = 2, [219] = 4, [196] = 1, [197] = 2, [198] = 4 }
  if strw[c] then
    need(s, i, strw[c])
    local n = be_int(s, i, strw[c])
    i = i + strw[c]
    need(s, i, n)
    return sub(s, i, i + n - 1), i + n
  end
  if c == 220 or c == 221 or c == 222 or c == 223 then
    local w2 = (c == 220 or c == 222) and 2 or 4
    need(s, i, w2)
    return mp_decode_n(s, i + w2, be_int(s, i, w2), c >= 222)
  end
  error("Bad data format in input.", 0)
end

-- mp_unpack_full: `limit` objects (0: all) from `offset` (0-based); the
-- next offset (-1 at the end) first when `with_offset`.
local function mp_unpack_full(s, limit, offset, with_offset)
  if type(s) ~= "string" then error("bad argument #1 to 'unpack' (string expected, got " .. type(s) .. ")", 4) end
  local i, results, count = offset + 1, {}, 0
  local ok, err = raw_pcall(function()
    while i <= #s and (limit == 0 or count < limit) do
      local v
      v, i = mp_decode(s, i)
      count = count + 1
      results[count] = v
    end
  end)
  if not ok then error(err, 4) end
  if with_offset then
    local nxt = i - 1
    if i > #s then nxt = -1 end
    return nxt, unpack(results, 1, count)
  end
  return unpack(results, 1, count)
end

local cmsgpack_lib = {
  pack = C(mp_pack),
  unpack = C(function(s) return mp_unpack_full(s, 0, 0, false) end),
  unpack_one = C(function(s, offset) return mp_unpack_full(s, 1, tonumber(offset) or 0, true) end),
  unpack_limit = C(function(s, limit, offset)
    return mp_unpack_full(s, tonumber(limit) or 0, tonumber(offset) or 0, true)
  end),
  _NAME = "cmsgpack",
  _VERSION = "lua-cmsgpack 0.4.0",
  _COPYRIGHT = "Copyright (C) 2012, Salvatore Sanfilippo",
  _DESCRIPTION = "MessagePack C implementation for Lua",
}
local cmsgpack_proxy = protect(cmsgpack_lib)

local table_proxy, math_proxy = protect(table_lib), protect(math_lib)
local coroutine_proxy, bit_proxy = protect(coroutine_lib), protect(bit_lib)
local struct_proxy = protect(struct_lib)
local C_tostring, C_getmetatable, C_setmetatable = C(tostring_w), C(getmetatable_w), C(setmetatable_w)
local C_next, C_pairs, C_ipairs = C(next_w), C(pairs_w), C(ipairs_w)
local C_rawget, C_rawset = C(rawget_w), C(rawset_w)

-- The globals every script sees (Redis's allow lists, minus struct, which
-- the simulator does not bundle).
local function base_globals(env)
  local g = {
    _G = env,
    _VERSION = "Lua 5.1",
    assert = assert,
    bit = bit_proxy,
    cjson = cjson_proxy,
    cmsgpack = cmsgpack_proxy,
    collectgarbage = C(collectgarbage_w),
    coroutine = coroutine_proxy,
    error = error,
    gcinfo = gcinfo,
    getmetatable = C_getmetatable,
    ipairs = C_ipairs,
    next = C_next,
    pairs = C_pairs,
    pcall = pcall_w,
    rawequal = rawequal,
    rawget = C_rawget,
    rawset = C_rawset,
    select = select,
    setmetatable = C_setmetatable,
    string = string_proxy,
    struct = struct_proxy,
    table = table_proxy,
    math = math_proxy,
    tonumber = tonumber,
    tostring = C_tostring,
    type = type,
    unpack = C_unpack,
    xpcall = C(xpcall_w),
  }
  g.loadstring = C(make_loadstring(env))
  g.load = C(make_load(env))
  return g
end

-- EVAL: globals GE behind the proxy PE.
local PE_mt = { __index = nil, __newindex = readonly_error }
local PE = raw_setmetatable({}, PE_mt)
local GE = base_globals(PE)
GE.redis = protect(eval_redis)
GE.__redis__err__handler = err_handler
GE.KEYS, GE.ARGV = {}, {}
raw_setmetatable(GE, { __index = missing_global })
PE_mt.__index = GE
REAL[PE] = GE
FAKE_MT[PE] = protect({ __index = missing_global })

-- FUNCTION: globals GF behind PF; while a library loads, PF reads LIB_API.
local PF_mt = { __index = nil, __newindex = readonly_error }
local PF = raw_setmetatable({}, PF_mt)
local GF = base_globals(PF)
GF.redis = protect(function_redis)
raw_setmetatable(GF, { __index = missing_global })
PF_mt.__index = GF
REAL[PF] = GF
FAKE_MT[PF] = FAKE_MT[PE]

local LOADING = nil
local FLAG_NAMES = { "no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys" }

local function isstring(v)
  local t = type(v)
  return t == "string" or t == "number"
end

local function valid_name(name)
  return name ~= "" and find(name, "^[%w_]+$") ~= nil
end

local function read_flags(t)
  local flags = {}
  local j = 1
  while true do
    local v = t[j]
    if v == nil then break end
    if not isstring(v) then return nil end
    local s = lower(cstr(v .. ""))
    local found = false
    for bit_index, name in raw_ipairs(FLAG_NAMES) do
      if s == name then
        flags[bit_index] = true
        found = true
        break
      end
    end
    if not found then return nil end
    j = j + 1
  end
  return flags
end

-- redis.register_function, both calling conventions, with 7.0's checks in
-- 7.0's order.
local function register_function(...)
  if LOADING == nil then
    raise("redis.register_function can only be called on FUNCTION LOAD command")
  end
  local n = select("#", ...)
  if n < 1 or n > 2 then raise("wrong number of arguments to redis.register_function") end
  local name, desc, callback, flags
  if n == 1 then
    local args = ...
    if type(args) ~= "table" then
      raise("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
    end
    for k, v in raw_next, args do
      if not isstring(k) then raise("named argument key given to redis.register_function is not a string") end
      local key = lower(cstr(k .. ""))
      if key == "function_name" then
        if not isstring(v) then raise("function_name argument given to redis.register_function must be a string") end
        name = v .. ""
      elseif key == "description" then
        if not isstring(v) then raise("description argument given to redis.register_function must be a string") end
        desc = v .. ""
      elseif key == "callback" then
        if type(v) ~= "function" then raise("callback argument given to redis.register_function must be a function") end
        callback = v
      elseif key == "flags" then
        if type(v) ~= "table" then
          raise("flags argument to redis.register_function must be a table representing function flags")
        end
        flags = read_flags(v)
        if flags == nil then raise("unknown flag given") end
      else
        raise("unknown argument given to redis.register_function")
      end
    end
    if name == nil then raise("redis.register_function must get a function name argument") end
    if callback == nil then raise("redis.register_function must get a callback argument") end
  else
    local a, b = ...
    if not isstring(a) then raise("first argument to redis.register_function must be a string") end
    if type(b) ~= "function" then raise("second argument to redis.register_function must be a function") end
    name, callback = a .. "", b
  end
  if not valid_name(name) then
    raise("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
  end
  if LOADING.names[name] then raise("Function already exists in the library") end
  LOADING.names[name] = true
  local f = flags or {}
  LOADING.list[#LOADING.list + 1] = {
    name = name,
    description = desc,
    callback = callback,
    no_writes = f[1] == true,
    allow_oom = f[2] == true,
    allow_stale = f[3] == true,
    no_cluster = f[4] == true,
    allow_cross_slot_keys = f[5] == true,
  }
end

local lib_redis = {
  register_function = C(register_function),
  log = C(log),
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = config.version,
  REDIS_VERSION_NUM = config.version_num,
}
raw_setmetatable(lib_redis, { __index = missing_global })
local LIB_API = raw_setmetatable({ redis = protect(lib_redis) }, { __index = missing_global })

--------------------------------------------------------------------------
-- Entry points for Rust
--------------------------------------------------------------------------

local entry = {}

function entry.compile_eval(src)
  return compile(src, "@user_script", PE)
end

-- KEYS and ARGV (or a function's two arguments) are fresh tables every
-- time, made by the host: scripts may scribble on them.
function entry.run_eval(f, keys, argv)
  RUN = RUN + 1
  LAST_ERR, KILL_ERR = nil, nil
  GE.KEYS, GE.ARGV = keys, argv
  return raw_xpcall(f, err_handler)
end

-- FCALL: the callback gets the two tables as arguments. (5.1's xpcall
-- passes no arguments, hence the little trampoline and its upvalues.)
local CUR_CB, CUR_KEYS, CUR_ARGV
local function fcall_body()
  local cb, keys, argv = CUR_CB, CUR_KEYS, CUR_ARGV
  CUR_CB, CUR_KEYS, CUR_ARGV = nil, nil, nil
  return cb(keys, argv)
end

function entry.run_fcall(callback, keys, argv)
  RUN = RUN + 1
  LAST_ERR, KILL_ERR = nil, nil
  PF_mt.__index = GF
  CUR_CB = callback
  CUR_KEYS, CUR_ARGV = keys, argv
  return raw_xpcall(fcall_body, err_handler)
end

-- FUNCTION LOAD: compile and run the library's top level against LIB_API.
-- Returns true, {registered...} or false, kind ("compile"/"run"), message.
function entry.load_library(code)
  RUN = RUN + 1
  local f, err = compile(code, "@user_function", PF)
  if f == nil then return false, "compile", err end
  LOADING = { list = {}, names = {} }
  PF_mt.__index = LIB_API
  local ok, e = raw_pcall(f)
  PF_mt.__index = GF
  local loading = LOADING
  LOADING = nil
  if not ok then
    -- luaExtractErrorInformation without a handler: no source, no line.
    if type(e) == "string" or type(e) == "number" then return false, "run", "ERR " .. e end
    if type(e) == "table" then
      local m = e.err
      if type(m) == "string" or type(m) == "number" then return false, "run", m .. "" end
    end
    return false, "run", nil
  end
  return true, loading.list
end

-- After the sandbox stopped a run midway, put the shared state back.
function entry.recover()
  LOADING = nil
  PF_mt.__index = GF
end

function entry.last_error()
  local e = KILL_ERR or LAST_ERR
  LAST_ERR, KILL_ERR = nil, nil
  return e
end

function entry.clear_last_error()
  LAST_ERR, KILL_ERR = nil, nil
end

-- Remove what redis-server 7.0.15 does not offer from the VM itself, too.
for _, name in raw_ipairs({ "print", "dofile", "loadfile", "debug", "getfenv", "setfenv", "newproxy",
                            "module", "require", "package", "io", "os" }) do
  raw_rawset(G, name, nil)
end

return entry
