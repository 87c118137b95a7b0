//! The key an item is found by in its group: a hash of its URL, and the
//! key tried next when another URL of the group holds it.

/// The integer an item is found by in its group: a 64-bit hash of its URL
/// (xxh3, stable across versions and machines). Two URLs of one group with
/// the same key (about one chance in 10^8 for a million URLs) are told
/// apart by their text: the second takes the next key that is free
/// (`next_key`), and a lookup follows the same steps.
pub fn url_key(url: &str) -> i64 {
    xxhash_rust::xxh3::xxh3_64(url.as_bytes()) as i64
}

/// The key tried after `key` when it holds another URL.
pub fn next_key(key: i64) -> i64 {
    key.wrapping_add(1)
}
