//! The page as the backend serves it: `dist/` (built by `cargo xtask dist`;
//! `./scripts/test` builds it first) through the backend's own `web::app`
//! on a free loopback port, asked over plain HTTP/1.1 with each
//! `Accept-Encoding` a browser sends. Every file the page loads comes back
//! brotli- or gzip-encoded when asked (brotli preferred), as itself when
//! not, with its own content type, `Vary: Accept-Encoding`, and the same
//! bytes once decoded.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn dist() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf();
    let dist = std::env::var_os("LOCKLAB_DIST").map_or_else(|| root.join("dist"), PathBuf::from);
    assert!(
        dist.join("index.html").is_file(),
        "{} has no index.html: build the app first with `cargo xtask dist` (./scripts/test does)",
        dist.display()
    );
    dist
}

async fn serve(dist: PathBuf) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, locklab_backend::web::app(dist)).await });
    addr
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One GET over a fresh connection (`Connection: close`, so the body is
/// everything after the headers; its length is checked against
/// `Content-Length`).
async fn get(addr: SocketAddr, path: &str, accept_encoding: Option<&str>) -> Response {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(ae) = accept_encoding {
        request.push_str(&format!("Accept-Encoding: {ae}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no end of headers")
        + 4;
    let head = String::from_utf8(raw[..end].to_vec()).unwrap();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let response = Response {
        status,
        headers,
        body: raw[end..].to_vec(),
    };
    assert_eq!(
        response.header("content-length").map(|l| l.parse::<usize>().unwrap()),
        Some(response.body.len()),
        "GET {path}: Content-Length"
    );
    response
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    brotli::Decompressor::new(bytes, 4096).read_to_end(&mut out).unwrap();
    out
}

/// The files the page loads: itself and what its `<link>`s name.
fn page_files(dist: &Path) -> Vec<String> {
    let index = std::fs::read_to_string(dist.join("index.html")).unwrap();
    let mut files = vec!["/".to_owned()];
    for piece in index.split("href=\"/").skip(1) {
        let name = piece.split('"').next().unwrap();
        if !name.is_empty() && !files.iter().any(|f| f[1..] == *name) {
            files.push(format!("/{name}"));
        }
    }
    for ext in [".wasm", ".js", ".css", ".json"] {
        assert!(
            files.iter().any(|f| f.ends_with(ext)),
            "index.html links no {ext} file: {files:?}"
        );
    }
    files
}

#[tokio::test]
async fn dist_is_served_brotli_or_gzip_when_asked_and_identity_when_not() {
    let dist = dist();
    let addr = serve(dist.clone()).await;
    for path in page_files(&dist) {
        let file = if path == "/" { "index.html" } else { &path[1..] };
        let on_disk = std::fs::read(dist.join(file)).unwrap();

        let plain = get(addr, &path, None).await;
        assert_eq!(plain.status, 200, "GET {path}");
        assert_eq!(
            plain.header("content-encoding"),
            None,
            "GET {path} without Accept-Encoding"
        );
        assert_eq!(
            plain.body, on_disk,
            "GET {path} without Accept-Encoding: the file itself"
        );
        assert!(
            plain
                .header("vary")
                .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")),
            "GET {path}: Vary {:?}",
            plain.header("vary")
        );
        let content_type = plain.header("content-type").unwrap().to_owned();
        if path.ends_with(".wasm") {
            assert_eq!(content_type, "application/wasm");
        }

        // What browsers send, and each encoding alone; `identity` alone is
        // the file itself again.
        for (accept, encoding) in [
            ("gzip, deflate, br, zstd", Some("br")),
            ("br", Some("br")),
            ("gzip", Some("gzip")),
            ("gzip, deflate", Some("gzip")),
            ("identity", None),
        ] {
            let r = get(addr, &path, Some(accept)).await;
            let what = format!("GET {path} with Accept-Encoding: {accept}");
            assert_eq!(r.status, 200, "{what}");
            assert_eq!(r.header("content-encoding"), encoding, "{what}");
            assert_eq!(r.header("content-type"), Some(content_type.as_str()), "{what}");
            assert!(
                r.header("vary")
                    .is_some_and(|v| v.to_ascii_lowercase().contains("accept-encoding")),
                "{what}: Vary {:?}",
                r.header("vary")
            );
            let decoded = match encoding {
                Some("br") => unbrotli(&r.body),
                Some("gzip") => gunzip(&r.body),
                _ => r.body.clone(),
            };
            assert_eq!(decoded, on_disk, "{what}: the same bytes once decoded");
            if encoding.is_some() {
                assert!(
                    r.body.len() < on_disk.len(),
                    "{what}: {} bytes for {}",
                    r.body.len(),
                    on_disk.len()
                );
            }
        }
    }
}

#[tokio::test]
async fn a_missing_file_is_404_in_any_encoding() {
    let addr = serve(dist()).await;
    for accept in [None, Some("br"), Some("gzip")] {
        let r = get(addr, "/no-such-file.wasm", accept).await;
        assert_eq!(r.status, 404, "{accept:?}");
        assert_eq!(r.header("content-encoding"), None, "{accept:?}");
    }
}
