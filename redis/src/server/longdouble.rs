//! x87 80-bit `long double`, just enough of it for `INCRBYFLOAT`.
//!
//! redis-server's `incrbyfloatCommand` parses both numbers with `strtold`,
//! adds them in `long double` (64-bit significand on x86-64) and prints the
//! sum with `%.17Lf`, trailing zeros removed (`ld2string`, `LD_STR_HUMAN`).
//! `f64` arithmetic would give different digits (`10.5 + 0.1` prints as
//! `10.59999999999999964` from a double but `10.6` from a long double), so
//! the simulator computes exactly with big integers and rounds the way the
//! x87 unit and glibc do: to nearest, ties to even.

use num_bigint::{BigInt, BigUint, Sign};
use num_traits::{One, Zero};

/// Exponent of the lowest bit of the smallest subnormal (2^-16445).
const MIN_EXP: i64 = -16445;
/// Exponent of the lowest bit of the largest finite value's significand.
const MAX_EXP: i64 = 16320;
/// `MAX_LONG_DOUBLE_CHARS`: longer strings are not numbers to Redis.
const MAX_CHARS: usize = 5 * 1024;

/// A finite long double: `(-1)^neg × mant × 2^exp`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LongDouble {
    neg: bool,
    mant: u64,
    exp: i64,
}

/// Why a string is not a long double `INCRBYFLOAT` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LdError {
    /// Not a number, NaN, or out of range (`ERANGE`): "not a valid float".
    Invalid,
    /// Infinite: valid, but any sum with it is refused.
    Infinite,
}

/// Round `num / den` (positive) to a long double, or `None` on overflow.
/// Returns a zero significand when it underflows to zero.
fn round(num: &BigUint, den: &BigUint) -> Option<(u64, i64)> {
    if num.is_zero() {
        return Some((0, 0));
    }
    // Pick exp so that q = num / (den × 2^exp) has exactly 64 bits.
    let mut exp = num.bits() as i64 - den.bits() as i64 - 64;
    loop {
        exp = exp.max(MIN_EXP);
        let (n, d) = if exp >= 0 {
            (num.clone(), den << exp as usize)
        } else {
            (num << (-exp) as usize, den.clone())
        };
        let q = &n / &d;
        let bits = q.bits();
        if bits > 64 {
            exp += bits as i64 - 64;
            continue;
        }
        if bits < 64 && exp > MIN_EXP {
            exp -= 64 - bits as i64;
            continue;
        }
        let r = &n - &q * &d;
        let twice = r << 1usize;
        let mut m: u128 = q.iter_u64_digits().next().unwrap_or(0) as u128;
        if twice > d || (twice == d && m & 1 == 1) {
            m += 1;
        }
        if m >> 64 != 0 {
            m >>= 1;
            exp += 1;
        }
        if exp > MAX_EXP {
            return None;
        }
        return Some((m as u64, exp));
    }
}

impl LongDouble {
    /// `strtold` as `getLongDoubleFromObject` uses it: the whole string must
    /// be the number, no leading space, not NaN, not out of range.
    // long: strtold's one pass (sign, inf/nan, hex or decimal mantissa, exponent) then its ERANGE checks, in the order that decides which inputs fail
    pub(crate) fn parse(s: &[u8]) -> Result<LongDouble, LdError> {
        if s.is_empty() || s.len() > MAX_CHARS || s[0].is_ascii_whitespace() || s[0] == 0x0b {
            return Err(LdError::Invalid);
        }
        let (neg, body) = match s[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        if body.eq_ignore_ascii_case(b"inf") || body.eq_ignore_ascii_case(b"infinity") {
            return Err(LdError::Infinite);
        }
        let hex = body.len() > 2 && body[0] == b'0' && (body[1] | 0x20) == b'x';
        let (radix, exp_char, digits_at) = if hex { (16u32, b'p', 2) } else { (10, b'e', 0) };
        let body = &body[digits_at..];
        // Mantissa digits with an optional dot, then an optional exponent.
        let mut mant = BigUint::zero();
        let mut frac_digits: i64 = 0;
        let mut seen_digit = false;
        let mut seen_dot = false;
        let mut i = 0;
        while i < body.len() {
            let c = body[i];
            if c == b'.' && !seen_dot {
                seen_dot = true;
            } else if let Some(v) = (c as char).to_digit(radix) {
                mant = mant * radix + v;
                seen_digit = true;
                if seen_dot {
                    frac_digits += 1;
                }
            } else {
                break;
            }
            i += 1;
        }
        if !seen_digit {
            return Err(LdError::Invalid);
        }
        let mut exp10: i64 = 0;
        if i < body.len() && (body[i] | 0x20) == exp_char {
            let rest = &body[i + 1..];
            let (eneg, ed) = match rest.first() {
                Some(b'-') => (true, &rest[1..]),
                Some(b'+') => (false, &rest[1..]),
                _ => (false, rest),
            };
            if ed.is_empty() || !ed.iter().all(u8::is_ascii_digit) {
                return Err(LdError::Invalid);
            }
            let mut e: i64 = 0;
            for &c in ed {
                e = (e * 10 + (c - b'0') as i64).min(1 << 40);
            }
            exp10 = if eneg { -e } else { e };
            i = body.len();
        }
        if i != body.len() {
            return Err(LdError::Invalid);
        }
        if mant.is_zero() {
            return Ok(LongDouble { neg, mant: 0, exp: 0 });
        }
        // value = mant × radix^(exp - frac_digits) (hex: 16^-frac × 2^exp)
        let (num, den) = if hex {
            let e2 = exp10 - 4 * frac_digits;
            if e2 > 20000 {
                return Err(LdError::Invalid);
            }
            if e2 < -20000 - mant.bits() as i64 {
                return Err(LdError::Invalid);
            }
            if e2 >= 0 {
                (mant << e2 as usize, BigUint::one())
            } else {
                (mant, BigUint::one() << (-e2) as usize)
            }
        } else {
            let e = exp10 - frac_digits;
            // Beyond these no digit string of allowed length is in range.
            if e > 5000 {
                return Err(LdError::Invalid);
            }
            if e < -(5000 + MAX_CHARS as i64) {
                return Err(LdError::Invalid);
            }
            let p = BigUint::from(10u32).pow(e.unsigned_abs() as u32);
            if e >= 0 {
                (mant * p, BigUint::one())
            } else {
                (mant, p)
            }
        };
        match round(&num, &den) {
            // ERANGE: overflow to HUGE_VAL or underflow to zero.
            None => Err(LdError::Invalid),
            Some((0, _)) => Err(LdError::Invalid),
            Some((m, e)) => Ok(LongDouble { neg, mant: m, exp: e }),
        }
    }

    fn as_bigint(&self, base_exp: i64) -> BigInt {
        let mag = BigUint::from(self.mant) << (self.exp - base_exp) as usize;
        BigInt::from_biguint(if self.neg { Sign::Minus } else { Sign::Plus }, mag)
    }

    /// `a + b` rounded to a long double; `None` when it overflows (the
    /// sum would be infinite).
    pub(crate) fn add(&self, other: &LongDouble) -> Option<LongDouble> {
        let base = self.exp.min(other.exp);
        let sum = self.as_bigint(base) + other.as_bigint(base);
        let (sign, mag) = sum.into_parts();
        if mag.is_zero() {
            // Round to nearest: x + (-x) is +0, and -0 + -0 is -0.
            return Some(LongDouble {
                neg: self.neg && other.neg,
                mant: 0,
                exp: 0,
            });
        }
        let (num, den) = if base >= 0 {
            (mag << base as usize, BigUint::one())
        } else {
            (mag, BigUint::one() << (-base) as usize)
        };
        let (m, e) = round(&num, &den)?;
        Some(LongDouble {
            neg: sign == Sign::Minus,
            mant: m,
            exp: e,
        })
    }

    /// The nearest `f64` (for timeouts, where the precision is moot).
    pub(crate) fn to_f64(&self) -> f64 {
        let v = self.mant as f64 * 2f64.powi(self.exp.clamp(-20000, 20000) as i32);
        if self.neg {
            -v
        } else {
            v
        }
    }

    /// `ld2string(…, LD_STR_HUMAN)`: `%.17Lf`, trailing zeros and dot
    /// removed, `-0` printed as `0`.
    pub(crate) fn to_human(&self) -> String {
        // round(mant × 2^exp × 10^17), ties to even.
        let scaled = BigUint::from(self.mant) * BigUint::from(10u32).pow(17);
        let n = if self.exp >= 0 {
            scaled << self.exp as usize
        } else {
            let d = BigUint::one() << (-self.exp) as usize;
            let q = &scaled / &d;
            let twice = (&scaled - &q * &d) << 1usize;
            let odd = q.bit(0);
            if twice > d || (twice == d && odd) {
                q + 1u32
            } else {
                q
            }
        };
        let mut digits = n.to_str_radix(10);
        if digits.len() < 18 {
            digits = format!("{}{}", "0".repeat(18 - digits.len()), digits);
        }
        let (int, frac) = digits.split_at(digits.len() - 17);
        let frac = frac.trim_end_matches('0');
        let mut s = String::new();
        if self.neg {
            s.push('-');
        }
        s.push_str(int);
        if !frac.is_empty() {
            s.push('.');
            s.push_str(frac);
        }
        if s == "-0" {
            s = "0".into();
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incr(a: &str, b: &str) -> String {
        let x = LongDouble::parse(a.as_bytes()).unwrap();
        let y = LongDouble::parse(b.as_bytes()).unwrap();
        x.add(&y).unwrap().to_human()
    }

    #[test]
    fn sums_print_as_redis_does() {
        assert_eq!(incr("10.5", "0.1"), "10.6");
        assert_eq!(incr("0", "3.0e3"), "3000");
        assert_eq!(incr("5.0e3", "2.0e2"), "5200");
        assert_eq!(incr("1", "-1"), "0");
        assert_eq!(incr("0x10", "0"), "16");
        assert_eq!(incr("-0.5", "0.25"), "-0.25");
    }

    #[test]
    fn invalid_inputs() {
        for bad in ["", " 1", "1 ", "abc", "1e", "nan", "1e99999", "1e-99999", "."] {
            assert_eq!(LongDouble::parse(bad.as_bytes()), Err(LdError::Invalid), "{bad:?}");
        }
        assert_eq!(LongDouble::parse(b"-inf"), Err(LdError::Infinite));
    }
}
