//! The page's files precompressed: `NAME.gz` and `NAME.br` next to each
//! `NAME` of `dist/`, made once at build time at the best settings of each
//! format (gzip level 9; brotli quality 11 with a 4 MiB window), so the
//! server only picks a file by the request's `Accept-Encoding` (tower-http's
//! `ServeDir::precompressed_gzip`/`precompressed_br`, in the backend's
//! `web::app`) and never compresses per request.

use std::fs;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// brotli's best quality, and the window (2^22 bytes) that covers the
/// whole `.wasm`, as `brotli -q 11 --lgwin 22` does.
const BROTLI_QUALITY: u32 = 11;
const BROTLI_WINDOW: u32 = 22;

pub(crate) fn gzip(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(bytes)?;
    Ok(gz.finish()?)
}

pub(crate) fn brotli(bytes: &[u8]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len() / 3);
    {
        let mut w = brotli::CompressorWriter::new(&mut out, 1 << 16, BROTLI_QUALITY, BROTLI_WINDOW);
        w.write_all(bytes)?;
        w.flush()?;
    }
    Ok(out)
}

/// One file's sizes: raw, gzip, brotli.
pub(crate) struct Sizes {
    pub(crate) name: String,
    pub(crate) raw: usize,
    pub(crate) gzip: usize,
    pub(crate) brotli: usize,
}

/// Write `NAME.gz` and `NAME.br` for every file of `dir` (not below it),
/// each only when it is smaller than the file itself (the server then sends
/// the file as it is). Files already ending in `.gz` or `.br` are left alone,
/// so a second run over the same directory adds nothing.
pub(crate) fn precompress(dir: &Path) -> Result<Vec<Sizes>> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".gz") && !n.ends_with(".br"))
        .collect();
    names.sort();
    let mut sizes = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let gz = gzip(&bytes)?;
        let br = brotli(&bytes)?;
        for (ext, packed) in [("gz", &gz), ("br", &br)] {
            if packed.len() < bytes.len() {
                fs::write(dir.join(format!("{name}.{ext}")), packed)?;
            }
        }
        sizes.push(Sizes {
            name,
            raw: bytes.len(),
            gzip: gz.len(),
            brotli: br.len(),
        });
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn both_encodings_decode_to_the_original() {
        let text: Vec<u8> = (0..20_000u32)
            .flat_map(|i| format!("line {} of the page\n", i % 97).into_bytes())
            .collect();
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(gzip(&text).unwrap().as_slice())
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, text);
        let br = brotli(&text).unwrap();
        assert!(br.len() < text.len() / 10, "{} bytes", br.len());
        let mut back = Vec::new();
        brotli::Decompressor::new(br.as_slice(), 4096)
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, text);
    }

    #[test]
    fn precompress_writes_smaller_variants_only_and_is_idempotent() {
        let dir = std::env::temp_dir().join(format!("xtask-precompress-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("app.js"), "export const x = 1;\n".repeat(500)).unwrap();
        fs::write(dir.join("tiny.txt"), "x").unwrap();
        let sizes = precompress(&dir).unwrap();
        assert_eq!(sizes.len(), 2);
        assert!(dir.join("app.js.gz").is_file() && dir.join("app.js.br").is_file());
        assert!(!dir.join("tiny.txt.gz").exists() && !dir.join("tiny.txt.br").exists());
        assert_eq!(precompress(&dir).unwrap().len(), 2);
        assert!(!dir.join("app.js.gz.gz").exists());
        fs::remove_dir_all(&dir).unwrap();
    }
}
