//! The sitemap reader over arbitrary bytes (plain XML, gzip, anything): never
//! panics, and every entry has a non-empty `<loc>` and a place in the file.
//!
//! `indexq::testing_api::ingest::sitemap` has no public synchronous parser (its `parse_sitemap` is
//! private), so this drives the public `Reader::read` on a temporary file. The
//! HTTP client goes through a proxy on a closed local port, so an index child
//! that is an http(s) URL fails at once and nothing leaves the machine; a child
//! that names a local path is read like indexq would (run with stdin closed).
#![no_main]

use indexq::testing_api::ingest::sitemap::{FetchClient, Pins, Reader};
use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

struct Harness {
    runtime: tokio::runtime::Runtime,
    client: FetchClient,
    file: PathBuf,
}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("indexq-fuzz-sitemap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz directory");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let proxy = reqwest::Proxy::all("http://127.0.0.1:9").expect("proxy");
        let client = reqwest::Client::builder().proxy(proxy).timeout(std::time::Duration::from_millis(200));
        let client = FetchClient::new(client, Pins::default()).expect("client");
        Harness { runtime, client, file: dir.join("sitemap.xml") }
    })
}

fuzz_target!(|data: &[u8]| {
    let h = harness();
    std::fs::write(&h.file, data).expect("write the input");
    let source = h.file.display().to_string();
    // The first byte also picks the cap (1..=8161 bytes), so inputs run into it now and then.
    let cap = 1 + u64::from(data.first().copied().unwrap_or(0)) * 32;
    let mut reader = Reader::new(h.client.clone(), cap);
    let mut entries = Vec::new();
    let mut each = |entry: indexq::testing_api::ingest::sitemap::Entry| entries.push(entry);
    let problems = h.runtime.block_on(reader.read(&source, &mut each));
    for entry in &entries {
        assert!(!entry.loc.is_empty(), "an empty <loc> was passed on: {entry:?}");
        assert!(!entry.place.source.is_empty() && entry.place.line.is_some(), "{entry:?}");
    }
    for problem in &problems {
        assert!(!problem.place.source.is_empty() && !problem.message.is_empty(), "{problem:?}");
    }
});
