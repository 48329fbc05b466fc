//! Redis Cluster hash slots: which of the 16,384 slots a key lives in.

/// Slots of a Redis Cluster.
pub(super) const SLOTS: usize = 16384;

/// The Cluster slot of a key: CRC16 (XMODEM) of its hash tag (the text
/// between the first `{` and the next `}`, when not empty), else of the key.
pub(super) fn slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        rest.iter()
            .position(|&b| b == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    (crc16(tagged.unwrap_or(key)) as usize % SLOTS) as u16
}

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), as Redis Cluster
/// uses, a byte at a time from [`CRC16_TABLE`] (a key's slot is computed
/// per line in the fingerprint-set layout).
fn crc16(data: &[u8]) -> u16 {
    data.iter().fold(0u16, |crc, &b| {
        (crc << 8) ^ CRC16_TABLE[usize::from((crc >> 8) as u8 ^ b)]
    })
}

/// The CRC16 (XMODEM) of every byte value, bit by bit.
const CRC16_TABLE: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        let mut crc = (i as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
            bit += 1;
        }
        t[i] = crc;
        i += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_cluster_rule() {
        // Values from `CLUSTER KEYSLOT` on Redis 7.0.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"seen:{crawl:17}:s"), 9521);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        // An empty tag: the whole key counts.
        assert_eq!(slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }
}
