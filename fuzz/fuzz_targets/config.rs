//! `indexq::testing_api::config::parse` over arbitrary UTF-8: Ok or Err, never a panic; an
//! error always names a place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(source) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(error) = indexq::testing_api::config::parse(Path::new("fuzz.toml"), source) {
        assert!(!error.place.is_empty());
    }
});
