//! `indexq::testing_api::ingest::read_lines` over arbitrary bytes: never panics, never fails
//! on an in-memory reader, and reports every line it keeps with a place.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut lines = 0usize;
    let result = indexq::testing_api::ingest::read_lines("fuzz.txt", data, |line| {
        assert!(&*line.place.source == "fuzz.txt" && line.place.line.is_some(), "{}", line.place);
        if let Ok(url) = &line.url {
            assert!(url.as_str().starts_with("http://") || url.as_str().starts_with("https://"), "{url}");
        }
        lines += 1;
    });
    assert!(result.is_ok(), "reading from memory failed: {result:?}");
    assert!(lines <= data.len());
});
