//! The header parser on arbitrary bytes: it must return a header or a
//! `FormatError`, never panic. A decoded header must encode back to bytes
//! that decode to the same header (what `seen` writes, it can read).
//!
//! Random bytes would never get past the magic and the header checksum, so
//! the input is: 8 bytes of file length, one control byte, then the header;
//! unless the control byte's low bit is set, the magic is written and the
//! checksum recomputed, so the fuzzer explores the fields behind them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seen::file::format::{CHECKSUM_OFFSET, HEADER_LEN, Header, MAGIC, header_checksum};

fuzz_target!(|data: &[u8]| {
    let Some((len, rest)) = data.split_first_chunk::<8>() else {
        return;
    };
    let Some((&control, header)) = rest.split_first() else {
        return;
    };
    let len = u64::from_le_bytes(*len);
    let mut bytes = header.to_vec();
    if control & 1 == 0 && bytes.len() >= HEADER_LEN {
        bytes[..8].copy_from_slice(&MAGIC);
        let sum = header_checksum(&bytes[..HEADER_LEN]);
        bytes[CHECKSUM_OFFSET..CHECKSUM_OFFSET + 8].copy_from_slice(&sum.to_le_bytes());
    }
    if let Ok(h) = Header::decode(&bytes, len) {
        let again = Header::decode(&h.encode(), len).expect("an encoded header decodes");
        assert_eq!(again, h);
    }
});
