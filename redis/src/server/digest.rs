//! `DEBUG DIGEST` and `DEBUG DIGEST-VALUE`: debug.c's `xorObjectDigest` and
//! `computeDatasetDigest`, transcribed.
//!
//! The digest is SHA1-based: `xorDigest` XORs SHA1(data) into the digest
//! (so unordered elements — set members, hash fields, keys — give the same
//! result in any order), and `mixDigest` does that and then replaces the
//! digest with SHA1(digest) (so list elements and a string's bytes count in
//! order). The Redis test suite compares digests to check that COPY,
//! RESTORE and reloads keep a value; the simulator answers with the exact
//! hex redis-server prints, so a test may compare the two servers too.

use sha1_smol::Sha1;

use super::db::{Entry, Value};
use super::zset::format_score;

type Digest = [u8; 20];

fn sha1(data: &[u8]) -> Digest {
    Sha1::from(data).digest().bytes()
}

/// `xorDigest`: digest ^= SHA1(data).
fn xor_digest(digest: &mut Digest, data: &[u8]) {
    for (d, h) in digest.iter_mut().zip(sha1(data)) {
        *d ^= h;
    }
}

/// `mixDigest`: digest = SHA1(digest ^ SHA1(data)).
fn mix_digest(digest: &mut Digest, data: &[u8]) {
    xor_digest(digest, data);
    *digest = sha1(&digest[..]);
}

/// `xorObjectDigest`: mix a value (its type, its contents, whether it has
/// a TTL) into `digest`.
fn object_digest(digest: &mut Digest, entry: &Entry) {
    // OBJ_STRING 0, OBJ_LIST 1, OBJ_SET 2, OBJ_ZSET 3, OBJ_HASH 4, as htonl.
    let ty: u32 = match entry.value {
        Value::Str(_) => 0,
        Value::List(_) => 1,
        Value::Set(_) => 2,
        Value::ZSet(_) => 3,
        Value::Hash(_) => 4,
    };
    mix_digest(digest, &ty.to_be_bytes());
    match &entry.value {
        Value::Str(s) => mix_digest(digest, s),
        Value::List(l) => l.iter().for_each(|e| mix_digest(digest, e)),
        Value::Set(s) => s.iter().for_each(|m| xor_digest(digest, m)),
        Value::ZSet(z) => {
            for (member, score) in z.iter() {
                let mut ele = [0u8; 20];
                mix_digest(&mut ele, member);
                mix_digest(&mut ele, format_score(score).as_bytes());
                xor_digest(digest, &ele);
            }
        }
        Value::Hash(h) => {
            for (field, value) in h {
                let mut ele = [0u8; 20];
                mix_digest(&mut ele, field);
                mix_digest(&mut ele, value);
                xor_digest(digest, &ele);
            }
        }
    }
    if entry.expires_at.is_some() {
        xor_digest(digest, b"!!expire!!");
    }
}

fn hex(d: &Digest) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// `DEBUG DIGEST-VALUE`'s digest of one key (all zeros when missing).
pub(crate) fn value_digest(entry: Option<&Entry>) -> String {
    let mut d = [0u8; 20];
    if let Some(e) = entry {
        object_digest(&mut d, e);
    }
    hex(&d)
}

/// `computeDatasetDigest`: every non-empty database's number mixed in,
/// then each key's digest (its name mixed with its value) XORed in.
pub(crate) fn dataset_digest<'a>(
    dbs: impl Iterator<Item = (usize, Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Entry)> + 'a>)>,
) -> String {
    let mut fin = [0u8; 20];
    for (j, keys) in dbs {
        let mut keys = keys.peekable();
        if keys.peek().is_none() {
            continue;
        }
        mix_digest(&mut fin, &(j as u32).to_be_bytes());
        for (key, entry) in keys {
            let mut d = [0u8; 20];
            mix_digest(&mut d, key);
            object_digest(&mut d, entry);
            xor_digest(&mut fin, &d);
        }
    }
    hex(&fin)
}
