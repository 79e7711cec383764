//! Just enough Redis Cluster for lesson 31: hash slots, and the rule that a
//! node only serves keys in the slots it owns.
//!
//! A cluster splits the keyspace into 16384 slots by `CRC16(key) mod 16384`
//! (only the `{hash tag}` part of a key counts, if it has one). A command
//! whose keys are in another node's slots gets `MOVED`; a command whose keys
//! span slots gets `CROSSSLOT`. Scripts are checked twice: the keys they
//! declare (`KEYS`) route the call, and every key a `redis.call` touches must
//! be local — which is why a lock script must declare its keys instead of
//! building key names inside Lua.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

/// Number of hash slots.
pub const SLOTS: u16 = 16384;

/// What this node owns, and where the rest lives (for `MOVED`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterConfig {
    /// The slots this node serves.
    pub owned: RangeInclusive<u16>,
    /// The other nodes: their slot ranges and `host:port` addresses.
    pub others: Vec<(RangeInclusive<u16>, String)>,
}

impl ClusterConfig {
    /// The first of three masters, as `redis-cli --cluster create` splits
    /// slots: 0–5460 here, 5461–10922 and 10923–16383 elsewhere.
    pub fn first_of_three() -> ClusterConfig {
        ClusterConfig {
            owned: 0..=5460,
            others: vec![
                (5461..=10922, "127.0.0.1:7001".into()),
                (10923..=16383, "127.0.0.1:7002".into()),
            ],
        }
    }

    pub fn owns(&self, slot: u16) -> bool {
        self.owned.contains(&slot)
    }

    /// Where a slot lives, for `MOVED`.
    pub fn address_of(&self, slot: u16) -> &str {
        self.others
            .iter()
            .find(|(r, _)| r.contains(&slot))
            .map_or("127.0.0.1:0", |(_, a)| a.as_str())
    }
}

/// CRC16/XMODEM, the checksum Redis Cluster hashes keys with.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// `keyHashSlot`: the slot of a key, honouring a non-empty `{hash tag}`.
pub fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&c| c == b'{').and_then(|open| {
        let close = key[open + 1..].iter().position(|&c| c == b'}')?;
        (close > 0).then(|| &key[open + 1..open + 1 + close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from `CLUSTER KEYSLOT` on a real server.
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"bar"), 5061);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_eq!(key_slot(b"{}foo"), crc16(b"{}foo") % SLOTS);
    }
}
