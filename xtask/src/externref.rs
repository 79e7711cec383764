//! Whether a `.wasm` declares a table of `externref` (wasm-bindgen's JS
//! object table), read straight from its sections: wasm-opt older than
//! `MIN_WASM_OPT_EXTERNREF` mangles such a module (see `wasm_opt`).

use anyhow::{bail, ensure, Context, Result};

/// The element type of wasm-bindgen's JS object table.
const EXTERNREF: u8 = 0x6f;

/// Does the module declare a table of `externref` (wasm-bindgen's JS object
/// table)? Reads the table section, and the imports for an imported table.
pub(crate) fn has_externref_table(wasm: &[u8]) -> Result<bool> {
    ensure!(wasm.starts_with(b"\0asm"), "not a wasm module");
    let mut at = 8;
    while at < wasm.len() {
        let id = wasm[at];
        at += 1;
        let size = leb(wasm, &mut at)? as usize;
        let body = wasm.get(at..at + size).context("truncated wasm section")?;
        at += size;
        let found = match id {
            2 => imports_externref_table(body)?,
            4 => tables_externref(body)?,
            _ => false,
        };
        if found {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The import section: module, name, kind; a table import is kind 1 and
/// its table type.
fn imports_externref_table(body: &[u8]) -> Result<bool> {
    let mut i = 0;
    for _ in 0..leb(body, &mut i)? {
        skip_name(body, &mut i)?;
        skip_name(body, &mut i)?;
        let kind = *body.get(i).context("truncated import")?;
        i += 1;
        match kind {
            0 => {
                leb(body, &mut i)?;
            }
            1 => {
                if externref_table_type(body, &mut i, "import")? {
                    return Ok(true);
                }
            }
            2 => skip_limits(body, &mut i, "import")?,
            3 => i += 2,
            other => bail!("unknown import kind {other}"),
        }
    }
    Ok(false)
}

/// The table section: each entry is a table type.
fn tables_externref(body: &[u8]) -> Result<bool> {
    let mut i = 0;
    for _ in 0..leb(body, &mut i)? {
        if externref_table_type(body, &mut i, "table")? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A table type at `at`: is its element type `externref`? Otherwise it is
/// skipped (element type, then limits).
fn externref_table_type(b: &[u8], at: &mut usize, what: &str) -> Result<bool> {
    if b.get(*at) == Some(&EXTERNREF) {
        return Ok(true);
    }
    *at += 1;
    skip_limits(b, at, what)?;
    Ok(false)
}

/// Limits: flags, the minimum, and the maximum when flag 1 says so.
fn skip_limits(b: &[u8], at: &mut usize, what: &str) -> Result<()> {
    let flags = *b.get(*at).with_context(|| format!("truncated {what}"))?;
    *at += 1;
    leb(b, at)?;
    if flags & 1 == 1 {
        leb(b, at)?;
    }
    Ok(())
}

/// An unsigned LEB128 number (a u32; longer ones are cut).
fn leb(b: &[u8], at: &mut usize) -> Result<u32> {
    let (mut value, mut shift) = (0u32, 0);
    loop {
        let byte = *b.get(*at).context("truncated wasm module")?;
        *at += 1;
        value |= u32::from(byte & 0x7f).checked_shl(shift).unwrap_or(0);
        if byte & 0x80 == 0 {
            return Ok(value);
        }
        shift += 7;
    }
}

/// A name: its length, then its bytes.
fn skip_name(b: &[u8], at: &mut usize) -> Result<()> {
    let len = leb(b, at)? as usize;
    *at += len;
    Ok(())
}
