//! Reading Redis replies shared by the layouts: the fields of a hash.

use redis::Value;

/// The (field, value) pairs of an `HGETALL` reply (RESP2's flat array or
/// RESP3's map); entries that are not two strings are left out.
pub(super) fn hash_fields(v: &Value) -> Vec<(&[u8], &[u8])> {
    fn pair<'a>(k: &'a Value, n: &'a Value) -> Option<(&'a [u8], &'a [u8])> {
        match (k, n) {
            (Value::BulkString(k), Value::BulkString(n)) => Some((k, n)),
            _ => None,
        }
    }
    match v {
        Value::Array(items) => items
            .chunks(2)
            .filter_map(|p| match p {
                [k, n] => pair(k, n),
                _ => None,
            })
            .collect(),
        Value::Map(items) => items.iter().filter_map(|(k, n)| pair(k, n)).collect(),
        _ => Vec::new(),
    }
}
