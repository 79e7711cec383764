//! locklab: Lua 5.1.5's own library routines where omnilua's (written after
//! 5.2–5.4) answer differently, transcribed from 5.1.5's `lbaselib.c`,
//! `ltablib.c` and `lauxlib.c` (the Lua redis-server 7.0 embeds), and the C
//! casts they rely on, as gcc compiles them for x86-64.

use crate::state_stub::{LuaState, LuaStateStubExt as _};
use lua_types::error::LuaError;
use lua_types::LuaType;

/// 5.1's `LUAI_MAXCSTACK`: `lua_checkstack` refuses to grow a C function's
/// frame past this many slots.
const MAXCSTACK: i64 = 8000;

/// `(long long) d` for a double, as x86-64's `cvttsd2si` performs it: NaN
/// and out-of-range values become `LLONG_MIN`.
pub use lua_vm::api::c_long;

/// `(unsigned long long) d`, as gcc converts on x86-64: below 2^63 through the
/// signed conversion (so -1 becomes `ULLONG_MAX`), above it by subtracting
/// 2^63 first and setting the top bit back.
pub fn c_ulong(d: f64) -> u64 {
    const TWO63: f64 = 9.223_372_036_854_775_808e18;
    // gcc tests `d >= 2^63` (`comisd`, then `jnb`): a NaN fails it and takes
    // the signed conversion, `0x8000000000000000` (redis-server's `%u` of
    // 0/0 is 9223372036854775808), issue 43.
    if !(d >= TWO63) {
        c_long(d) as u64
    } else {
        (c_long(d - TWO63) as u64) ^ (1 << 63)
    }
}

/// `(int) d` for a double (`cvttsd2si` on 32 bits): `INT_MIN` out of range.
pub fn c_int(d: f64) -> i32 {
    if d.is_nan() || !(-2_147_483_649.0..2_147_483_648.0).contains(&d) {
        i32::MIN
    } else {
        d as i32
    }
}

/// `luaL_checkint` / `luaL_optint`: `(int) lua_tointeger`, the double made a
/// `ptrdiff_t` and then cut to its low 32 bits.
fn check_int(state: &mut LuaState, arg: i32) -> Result<i32, LuaError> {
    Ok(c_long(state.check_arg_number(arg)?) as i32)
}

pub(crate) fn opt_int(state: &mut LuaState, arg: i32, def: i32) -> Result<i32, LuaError> {
    if matches!(state.type_at(arg), LuaType::None | LuaType::Nil) {
        return Ok(def);
    }
    check_int(state, arg)
}

/// `lua_checkstack(L, n)` of 5.1: a C function's frame holds at most
/// [`MAXCSTACK`] values.
pub fn check_stack(state: &mut LuaState, n: i64) -> bool {
    n >= 0 && i64::from(state.get_top()) + n <= MAXCSTACK && lua_vm::api::check_stack(state, n as i32)
}

/// `luaL_error`: the message with `luaL_where(L, 1)`'s position.
pub fn error(state: &LuaState, msg: &[u8]) -> LuaError {
    lua_vm::debug::c_api_runtime(state, msg.to_vec())
}

/// `luaB_unpack`: raw reads, `int` bounds (so `2^31` wraps to `INT_MIN` and
/// the range is empty), and 5.1's stack limit.
pub fn unpack(state: &mut LuaState) -> Result<usize, LuaError> {
    state.check_arg_type(1, LuaType::Table)?;
    let mut i = opt_int(state, 2, 1)?;
    let e = if matches!(state.type_at(3), LuaType::None | LuaType::Nil) {
        state.raw_len(1) as i32
    } else {
        check_int(state, 3)?
    };
    if i > e {
        return Ok(0);
    }
    let n = i64::from(e) - i64::from(i) + 1;
    // `n = e - i + 1` is an int in C: past INT_MAX it wraps negative.
    if n > i64::from(i32::MAX) || !check_stack(state, n) {
        return Err(error(state, b"too many results to unpack"));
    }
    state.raw_get_i(1, i64::from(i))?;
    while i < e {
        i += 1;
        state.raw_get_i(1, i64::from(i))?;
    }
    Ok(n as usize)
}

/// `tinsert`: with a position past the end the array grows to it (5.2 added
/// the "position out of bounds" check); elements move with raw gets and
/// sets. The move is charged to the sandbox's budget before it is made, so
/// a far-away position ends the run instead of looping natively.
pub fn insert(state: &mut LuaState) -> Result<usize, LuaError> {
    state.check_arg_type(1, LuaType::Table)?;
    let mut e = (state.raw_len(1) as i32).wrapping_add(1);
    let pos = match state.get_top() {
        2 => e,
        3 => {
            let pos = check_int(state, 2)?;
            if pos > e {
                e = pos;
            }
            let moves = (i64::from(e) - i64::from(pos)).max(0) as u64;
            if let Some(err) = state.sandbox_charge_work(moves) {
                return Err(err);
            }
            let mut i = e;
            while i > pos {
                state.raw_get_i(1, i64::from(i) - 1)?;
                state.raw_seti(1, i64::from(i))?;
                i -= 1;
            }
            pos
        }
        _ => return Err(error(state, b"wrong number of arguments to 'insert'")),
    };
    state.raw_seti(1, i64::from(pos))?;
    Ok(0)
}

/// `luaB_tonumber`: the base read first (`luaL_optint`); base 10 is
/// `lua_isnumber` (5.1's `luaO_str2d`, strtod); any other base reads the
/// argument as a C string (`luaL_checkstring`: a number is formatted) with
/// `strtoul`, blanks allowed after the digits.
pub fn tonumber(state: &mut LuaState) -> Result<usize, LuaError> {
    let base = opt_int(state, 2, 10)?;
    if base == 10 {
        state.check_arg_any(1)?;
        if let Some(n) = lua_vm::api::to_number_x(state, 1) {
            state.push(lua_types::LuaValue::Float(n));
            return Ok(1);
        }
    } else {
        let s1 = state.check_arg_string(1)?;
        if !(2..=36).contains(&base) {
            return Err(lua_vm::debug::arg_error_impl(state, 2, b"base out of range"));
        }
        let s1 = &s1[..s1.iter().position(|&b| b == 0).unwrap_or(s1.len())];
        if let Some((n, end)) = strtoul(s1, base as u32) {
            if s1[end..].iter().all(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')) {
                state.push(lua_types::LuaValue::Float(n as f64));
                return Ok(1);
            }
        }
    }
    state.push(lua_types::LuaValue::Nil);
    Ok(1)
}

/// glibc's `strtoul(s, &end, base)`: blanks, a sign, `0x` for base 16,
/// digits of the base; `ULONG_MAX` past it; a minus negates unsigned.
/// `None` when no digit was read.
fn strtoul(s: &[u8], base: u32) -> Option<(u64, usize)> {
    let mut i = s.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')).count();
    let neg = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let digit = |b: &u8| (*b as char).to_digit(36).filter(|d| *d < base);
    if base == 16 && matches!(s.get(i..i + 2), Some(b"0x" | b"0X")) && s.get(i + 2).and_then(digit).is_some() {
        i += 2;
    }
    let n = s[i..].iter().take_while(|b| digit(b).is_some()).count();
    if n == 0 {
        return None;
    }
    let mut v: u64 = 0;
    let mut overflow = false;
    for b in &s[i..i + n] {
        let d = u64::from(digit(b).unwrap_or(0));
        match v.checked_mul(u64::from(base)).and_then(|x| x.checked_add(d)) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    let v = if overflow {
        u64::MAX
    } else if neg {
        v.wrapping_neg()
    } else {
        v
    };
    Some((v, i + n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_are_x86_64s() {
        assert_eq!(c_long(9.223_372_036_854_775_808e18), i64::MIN);
        assert_eq!(c_long(f64::NAN), i64::MIN);
        assert_eq!(c_long(-1.5), -1);
        assert_eq!(c_ulong(-1.0), u64::MAX);
        assert_eq!(c_ulong(1.8e19), 18_000_000_000_000_000_000);
        assert_eq!(c_int(256.0), 256);
        assert_eq!(c_int(2_147_483_648.0), i32::MIN);
        assert_eq!(c_long(2_147_483_648.0) as i32, i32::MIN);
    }
}
