//! Reading on a thread of its own: what a reader yields is handed to the
//! caller's thread in chunks, in order, so that reading and parsing an input
//! overlap the ledger's work on it (two cores, each doing one).

/// What the reader yields is handed on this many at a time...
const CHUNK: usize = 2048;

/// ...and at most this many chunks wait to be taken: the reader stays ahead of
/// the caller by these and the chunk it fills, 14,336 values at most, whatever
/// the input's size. The waiting 12,288 are more than `submit` admits at once
/// (a batch of 10,000), so the next batch is read while the ledger looks up the
/// one before. With two chunks waiting, the reader stopped after 4,096 and the
/// two took turns, which made a sitemap read with `--changed` slower
/// (docs/performance.md, *Measured choices*).
const CHUNKS_WAITING: usize = 6;

/// How many values, at most, a reader gives one count of their source's
/// name (the `Arc<str>` in each value's `Position`): each run of values
/// takes a name of its own. The reader counts a name up as it makes a
/// value while the caller, a few thousand values behind, counts down the
/// values it is done with. With one count for a whole file, the two cores
/// took turns at one cache line for every value, which cost a large dry run
/// a noticeable share of the caller's time (docs/performance.md, *Measured
/// choices*).
const NAME_SHARED_BY: usize = 1024;

/// A source's name for the positions of the values a reader makes: a count
/// of it shared by each run of `NAME_SHARED_BY` values.
pub(super) struct SourceName {
    name: std::sync::Arc<str>,
    values: usize,
}

impl SourceName {
    pub(super) fn new(name: &str) -> SourceName {
        SourceName { name: name.into(), values: 0 }
    }

    /// The name for one more value (a new count at each run's start).
    pub(super) fn next_value(&mut self) -> std::sync::Arc<str> {
        self.values += 1;
        if self.values % NAME_SHARED_BY == 0 {
            self.name = self.name.as_ref().into();
        }
        self.name.clone()
    }

    /// The name for what is not a value (a problem of the source).
    pub(super) fn get(&self) -> std::sync::Arc<str> {
        self.name.clone()
    }
}

/// Runs `read` on a thread of its own, handing each value it yields to
/// `each` on the caller's thread, in the order yielded; returns what `read`
/// returns once `each` has had every value.
pub(super) fn read_ahead<T: Send, R: Send>(
    read: impl FnOnce(&mut dyn FnMut(T)) -> R + Send,
    mut each: impl FnMut(T),
) -> R {
    let (chunks, taken) = std::sync::mpsc::sync_channel::<Vec<T>>(CHUNKS_WAITING);
    std::thread::scope(|scope| {
        let reading = scope.spawn(move || {
            let mut chunk = Vec::with_capacity(CHUNK);
            let hand_on = |chunk: &mut Vec<T>| {
                // (The receiver is gone only if the caller panicked, which
                // the scope reports.)
                let _ = chunks.send(std::mem::replace(chunk, Vec::with_capacity(CHUNK)));
            };
            let done = read(&mut |value| {
                chunk.push(value);
                if chunk.len() >= CHUNK {
                    hand_on(&mut chunk);
                }
            });
            if !chunk.is_empty() {
                hand_on(&mut chunk);
            }
            done
        });
        for value in taken.iter().flatten() {
            each(value);
        }
        reading.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value, in order, across chunk boundaries, and what the reader
    /// returned.
    #[test]
    fn every_value_in_order() {
        for n in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, CHUNK * (CHUNKS_WAITING + 3) + 7] {
            let mut got = Vec::new();
            let returned = read_ahead(
                |emit| {
                    (0..n).for_each(&mut *emit);
                    n * 2
                },
                |i| got.push(i),
            );
            assert_eq!((got, returned), ((0..n).collect::<Vec<_>>(), n * 2));
        }
    }
}
