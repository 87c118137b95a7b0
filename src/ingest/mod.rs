//! Ingest: where the URLs a run submits come from, each with its place
//! (`file:line`, or `sitemap:line:column`). Two kinds of source:
//!
//! - `list`: URL lists, from files or standard input, read as a bounded
//!   stream of lines ([`read_lines`]);
//! - [`sitemap`]: sitemaps, sitemap indexes and robots.txt, local or fetched
//!   ([`sitemap::Reader`]).
//!
//! `normalize` owns the form a URL is submitted and stored in
//! ([`parse_url`]), which both kinds of source (and `log --url`,
//! `queue --url`) go through. This module knows nothing of the ledger, the
//! engines or the configuration: caps are passed in, and the caller judges
//! what it is given.

mod ahead;
mod list;
mod normalize;
pub mod sitemap;

pub use list::{read_lines, Input, Source};
pub use normalize::{parse_line, parse_url, stored_form, StoredUrl};

/// The longest URL indexq reads, in bytes: a longer input line (or sitemap
/// `<loc>`) is `invalid`. URLs in the wild stay under 2 KiB and engines
/// refuse much longer ones; 8 KiB leaves room for any real one.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// The units sizes are written in, largest first.
const SIZE_UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];

/// A size read, for a message: "5.0 MiB", "8 KiB", "12 bytes" (to a tenth
/// of its unit; the message says how far over a cap something is).
fn human_size(bytes: u64) -> String {
    for (size, unit) in SIZE_UNITS {
        if bytes >= size {
            return if bytes % size == 0 {
                format!("{} {unit}", bytes / size)
            } else {
                // Precision is not the point: the message says how far over the cap a line is.
                format!("{:.1} {unit}", bytes as f64 / size as f64)
            };
        }
    }
    format!("{bytes} bytes")
}

/// A configured cap, exactly as set: "50 MiB", "512 KiB", "1536 B" (MiB or
/// KiB only when it is a whole number of them).
fn exact_size(bytes: u64) -> String {
    SIZE_UNITS[1..]
        .iter()
        .find(|(size, _)| bytes >= *size && bytes % size == 0)
        .map_or_else(|| format!("{bytes} B"), |(size, unit)| format!("{} {unit}", bytes / size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_are_rounded_and_caps_exact() {
        assert_eq!(human_size(12), "12 bytes");
        assert_eq!(human_size(8 * 1024), "8 KiB");
        assert_eq!(human_size(8 * 1024 + 1), "8.0 KiB");
        assert_eq!(human_size(5 << 20), "5 MiB");
        assert_eq!(human_size(4 << 30), "4 GiB");
        assert_eq!(exact_size(50 << 20), "50 MiB");
        assert_eq!(exact_size(512 * 1024), "512 KiB");
        assert_eq!(exact_size(1536), "1536 B");
        assert_eq!(exact_size(1 << 30), "1024 MiB");
        assert_eq!(exact_size(12), "12 B");
    }
}
