//! The channel each message goes to: the catalog channel every replica
//! subscribes to, or one channel per key, named from a stable hash of the
//! key (on a Redis Cluster, with a hash tag that picks one of the shards'
//! slots).

use crate::event::{Event, EventKind};
use crate::hub::InterestKey;

/// Where an event goes: the catalog channel every replica subscribes to, or
/// the channel of one key.
pub(crate) fn route(event: &Event) -> Option<InterestKey> {
    match event.kind() {
        EventKind::ResourceUpdated { uri } => Some(InterestKey::Resource(uri.clone())),
        EventKind::Extension {
            selector: Some(selector),
            ..
        } => selector.key().map(|key| InterestKey::Extension {
            field: selector.field().to_owned(),
            key: key.to_owned(),
        }),
        _ => None,
    }
}

/// The channel names of one relay namespace.
#[derive(Debug, Clone)]
pub(crate) struct Channels {
    prefix: String,
    /// On a Redis Cluster, the hash tag of each shard key channels spread
    /// over, one slot each (see [`slot_tags`]).
    tags: Option<Vec<String>>,
}

impl Channels {
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_owned(),
            tags: None,
        }
    }

    /// Names whose key channels carry a hash tag picking one of `shards`
    /// slots, spread evenly over the cluster's slots: `{prefix.41}.key.…`.
    pub(crate) fn sharded(prefix: &str, shards: u16) -> Self {
        Self {
            prefix: prefix.to_owned(),
            tags: Some(slot_tags(prefix, shards)),
        }
    }

    /// List changes, untargeted extension events and heartbeats.
    pub(crate) fn catalog(&self) -> String {
        format!("{}.catalog", self.prefix)
    }

    /// The channel of `key`: a hash of it, so that any key makes a valid
    /// Redis channel and NATS subject (hex digits only, no wildcard).
    pub(crate) fn key(&self, key: &InterestKey) -> String {
        let mut hash = Fnv::default();
        match key {
            InterestKey::Resource(uri) => {
                hash.write(b"r\0");
                hash.write(uri.as_bytes());
            }
            InterestKey::Extension { field, key } => {
                hash.write(b"e\0");
                hash.write(field.as_bytes());
                hash.write(b"\0");
                hash.write(key.as_bytes());
            }
        }
        match &self.tags {
            None => format!("{}.key.{:016x}", self.prefix, hash.0),
            Some(tags) => {
                let tag = &tags[(hash.0 % tags.len() as u64) as usize];
                format!("{{{tag}}}.key.{:016x}", hash.0)
            }
        }
    }
}

/// A Redis Cluster's hash slots.
const SLOTS: usize = 16_384;

/// One hash tag for each of `shards` (1 to [`SLOTS`]), each on a slot of
/// its own, spread evenly over the slots: shard `i`'s is the first
/// `prefix.N` (N = 0, 1, …) whose slot is the middle of the `i`th of
/// `shards` equal ranges of the slots.
///
/// A cluster serves its slots in ranges, one or more for each node,
/// equal unless told otherwise (`redis-cli --cluster create` makes them
/// so); a node then holds the shards whose middle slot it serves, as many
/// as any other node give or take one. Tags taken as they come,
/// `prefix.0` to `prefix.15`, land on slots at random: on 6 nodes, two
/// had none of 16 shards, and on 3 nodes one had 8 of them, another 3.
/// Every replica computes the same tags, the search being deterministic,
/// in about a millisecond for the default shards (5 ms for one a slot).
fn slot_tags(prefix: &str, shards: u16) -> Vec<String> {
    let shards = usize::from(shards).clamp(1, SLOTS);
    // The shard each slot is the middle of, if any.
    let mut wanting: Vec<Option<usize>> = vec![None; SLOTS];
    for shard in 0..shards {
        wanting[(2 * shard + 1) * SLOTS / (2 * shards)] = Some(shard);
    }
    let mut tags = vec![String::new(); shards];
    let mut left = shards;
    // The CRC goes on from the prefix's, over the number's digits alone.
    let stem = crc16(0, format!("{prefix}.").as_bytes());
    let mut digits = [0; 20];
    for n in 0u64.. {
        let slot = usize::from(crc16(stem, decimal(&mut digits, n))) % SLOTS;
        if let Some(shard) = wanting[slot].take() {
            tags[shard] = format!("{prefix}.{n}");
            left -= 1;
            if left == 0 {
                break;
            }
        }
    }
    tags
}

/// `n`'s decimal digits, written at the end of `buffer`.
fn decimal(buffer: &mut [u8; 20], mut n: u64) -> &[u8] {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buffer[at..];
        }
    }
}

/// CRC-16/XMODEM, Redis Cluster's key hash (the slot is it mod
/// [`SLOTS`]), going on from `crc` over `bytes`.
fn crc16(mut crc: u16, bytes: &[u8]) -> u16 {
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
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

/// FNV-1a, 64 bits: stable across processes and versions, which std's
/// hasher does not promise.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_stable_and_distinct() {
        let channels = Channels::new("mcp");
        let a = channels.key(&InterestKey::Resource("file:///a".into()));
        assert_eq!(a, channels.key(&InterestKey::Resource("file:///a".into())));
        assert_ne!(a, channels.key(&InterestKey::Resource("file:///b".into())));
        assert!(a.starts_with("mcp.key.") && a.len() == "mcp.key.".len() + 16);
        assert_eq!(route(&Event::tools_list_changed()), None);
        assert_eq!(channels.catalog(), "mcp.catalog");

        // Sharded: the same hash after a tag naming one of four shards.
        let sharded = Channels::sharded("mcp", 4);
        let tag_of = |uri: String| {
            let name = sharded.key(&InterestKey::Resource(uri.clone()));
            let plain = channels.key(&InterestKey::Resource(uri));
            let (tag, rest) = name.split_once('}').unwrap();
            assert_eq!(rest, &plain["mcp".len()..]);
            tag.strip_prefix('{').unwrap().to_owned()
        };
        let tags: std::collections::BTreeSet<String> =
            (0..100).map(|i| tag_of(format!("file:///{i}"))).collect();
        let expected: std::collections::BTreeSet<String> =
            slot_tags("mcp", 4).into_iter().collect();
        assert_eq!(tags, expected);
    }

    /// The slot Redis gives a key: CRC-16/XMODEM mod 16,384.
    fn slot(key: &str) -> usize {
        usize::from(crc16(0, key.as_bytes())) % SLOTS
    }

    #[test]
    fn shard_tags_sit_in_the_middle_of_equal_slot_ranges() {
        // The CRC's check value, and slots as `CLUSTER KEYSLOT` gives them.
        assert_eq!(crc16(0, b"123456789"), 0x31c3);
        assert_eq!(slot("foo"), 12_182);
        for shards in [1, 3, 4, 16, 48, 1_000] {
            let tags = slot_tags("mcp", shards);
            assert_eq!(tags.len(), usize::from(shards));
            for (shard, tag) in tags.iter().enumerate() {
                assert!(tag.starts_with("mcp."), "{tag}");
                let middle = (2 * shard + 1) * SLOTS / (2 * usize::from(shards));
                assert_eq!(slot(tag), middle, "shard {shard} of {shards}: {tag}");
            }
        }
        assert_eq!(slot_tags("mcp", 0).len(), 1, "at least one shard");
        assert_eq!(
            slot_tags("mcp", u16::MAX).len(),
            SLOTS,
            "one a slot at most"
        );
    }

    /// On slots split as `redis-cli --cluster create` splits them, the
    /// default shards spread over 3 and 6 nodes evenly.
    #[test]
    fn default_shards_spread_evenly_over_a_cluster() {
        let shards = crate::relay::RelayOptions::default().shards;
        let tags = slot_tags("mcp-subscriptions", shards);
        for nodes in [3, 6] {
            // Node `i` serves up to slot `round((i + 1) * SLOTS / nodes) - 1`.
            let node_of = |slot: usize| {
                (0..nodes)
                    .find(|&i| slot < ((2 * (i + 1) * SLOTS + nodes) / (2 * nodes)))
                    .unwrap()
            };
            let mut per_node = vec![0; nodes];
            for tag in &tags {
                per_node[node_of(slot(tag))] += 1;
            }
            let (most, least) = (per_node.iter().max(), per_node.iter().min());
            assert_eq!(most, least, "{nodes} nodes: {per_node:?}");
        }
    }
}
