//! The item ids a recorded request names, as one value: ascending, each
//! the difference from the one before in LEB128 (a batch of 10,000 ids
//! claimed together stays a few kilobytes). Both backends store it as bytes.

use super::{LedgerError, Result};

/// `ids` (any order, no repeats) as bytes.
pub fn encode(ids: &[i64]) -> Vec<u8> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    let mut out = Vec::with_capacity(sorted.len() * 2);
    let mut last = 0i64;
    for id in sorted {
        let mut delta = id.wrapping_sub(last) as u64;
        last = id;
        loop {
            let byte = (delta & 0x7f) as u8;
            delta >>= 7;
            if delta == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
    }
    out
}

/// The ids `encode` wrote, ascending.
pub fn decode(bytes: &[u8]) -> Result<Vec<i64>> {
    let mut ids = Vec::new();
    let (mut last, mut delta, mut shift) = (0i64, 0u64, 0u32);
    for &byte in bytes {
        if shift > 63 {
            return Err(bad());
        }
        delta |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            last = last.wrapping_add(delta as i64);
            ids.push(last);
            (delta, shift) = (0, 0);
        } else {
            shift += 7;
        }
    }
    if shift != 0 {
        return Err(bad());
    }
    Ok(ids)
}

fn bad() -> LedgerError {
    LedgerError::Invalid("the ledger's requests.items holds bytes that are not a list of item ids".into())
}

/// The item ids a request names, from its `n`, `first_item` and `items`
/// (none when it names one item, `first`).
pub fn named(n: i64, first: i64, items: Option<Vec<u8>>) -> Result<Vec<i64>> {
    match items {
        Some(bytes) => decode(&bytes),
        None if n == 1 => Ok(vec![first]),
        None => {
            Err(LedgerError::Invalid("the ledger's requests.items is missing for a request of several items".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_in_order() {
        for ids in [vec![], vec![1], vec![5, 3, 1_000_000, 2, i64::MAX], (1..=10_000).collect::<Vec<i64>>()] {
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            assert_eq!(decode(&encode(&ids)).unwrap(), sorted);
        }
        assert!(encode(&(1..=10_000).collect::<Vec<i64>>()).len() <= 10_000, "one byte an id claimed together");
        assert!(decode(&[0x80]).is_err(), "a cut value");
    }
}
