//! A set of values that are hashes already, kept in the cache's favour:
//! what a dry run has seen (`pipeline::plan`). Its own module because it
//! is a data structure, not a part of the plan: the plan only asks whether
//! a value is new.

/// A set of 64-bit values that are hashes already (a dry run's URLs new to
/// the ledger), in 256 tables by a value's top byte, so the tables fill
/// evenly. A single set of a million values grows by copying everything it
/// holds into a table twice its size, holding both at the last doubling;
/// 256 small tables each grow in the cache, one at a time. Each table is
/// open addressing over the values themselves, probed linearly from the
/// value's next bits and never more than half full, so a value is mostly
/// found or placed with one access to memory, where a general hash set
/// reads its control bytes and then its slot (docs/performance.md has the
/// dry run's figures). 0 marks an empty slot; the value 0 is held apart.
pub(crate) struct Seen {
    tables: Vec<SeenTable>,
    zero: bool,
}

#[derive(Clone)]
struct SeenTable {
    slots: Vec<u64>,
    len: usize,
}

/// Each table's first size, in slots (a power of two).
const SEEN_FIRST_SLOTS: usize = 16;

impl Default for Seen {
    fn default() -> Seen {
        let table = SeenTable { slots: vec![0; SEEN_FIRST_SLOTS], len: 0 };
        Seen { tables: vec![table; 256], zero: false }
    }
}

impl Seen {
    /// Whether `seen` is new (it is then held).
    pub(crate) fn insert(&mut self, seen: u64) -> bool {
        if seen == 0 {
            return !std::mem::replace(&mut self.zero, true);
        }
        let table = &mut self.tables[(seen >> 56) as usize];
        if !table.insert(seen) {
            return false;
        }
        if table.len * 2 > table.slots.len() {
            table.grow();
        }
        true
    }

    /// Reads the slot where each value's probe starts, so that the inserts
    /// after find it in the cache: these reads do not wait for each other,
    /// where each insert waited for its own (a batch's slots are spread
    /// over all the tables: a read from memory each).
    pub(crate) fn warm(&self, values: &[u64]) {
        let mut any = 0;
        for &value in values {
            let table = &self.tables[(value >> 56) as usize];
            any ^= table.slots[table.start(value)];
        }
        std::hint::black_box(any);
    }
}

impl SeenTable {
    /// The slot `value`'s probe starts at: its bits after the top byte.
    fn start(&self, value: u64) -> usize {
        (value << 8 >> 32) as usize & (self.slots.len() - 1)
    }

    /// Whether `value` (not 0) is new here (it is then held). The table
    /// has a free slot: it is never more than half full.
    fn insert(&mut self, value: u64) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = self.start(value);
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = value;
                    self.len += 1;
                    return true;
                }
                v if v == value => return false,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Twice the slots, every value placed again.
    fn grow(&mut self) {
        let larger = vec![0; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, larger);
        self.len = 0;
        for value in old.into_iter().filter(|v| *v != 0) {
            self.insert(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value is new once, whichever of the sets it falls in.
    #[test]
    fn seen_holds_each_value_once() {
        let mut seen = Seen::default();
        let values: Vec<u64> = (0..5_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        assert!(values.iter().all(|v| seen.insert(*v)), "new the first time");
        assert!(values.iter().all(|v| !seen.insert(*v)), "held the second");
        assert!(seen.tables.iter().filter(|t| t.len > 0).count() > 200, "spread over the tables");
        // Values of one table that start their probe at one slot, through
        // its growth: each held once, told apart by its low bits.
        let mut seen = Seen::default();
        let same_start: Vec<u64> = (1..200u64).map(|k| 0x01AB_CDEF_0000_0000 | k).collect();
        assert!(same_start.iter().all(|v| seen.insert(*v)));
        assert!(same_start.iter().all(|v| !seen.insert(*v)));
        assert!(!seen.insert(0x01AB_CDEF_0000_0001) && seen.insert(0x01AB_CDEF_0000_0000));
        assert_eq!(seen.tables[1].len, 200);
        assert!(seen.tables[1].slots.len() >= 400, "at most half full");
    }
}
