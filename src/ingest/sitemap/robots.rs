//! The `Sitemap:` lines of a robots.txt; everything else in it is ignored.

use std::io::{BufRead, BufReader, Read};

use super::body::{io_problem, uncompressed};
use super::{Child, Problem};

/// The `Sitemap:` lines of a robots.txt (any case, any spacing); other lines are ignored.
pub(super) fn parse_robots(raw: Box<dyn Read + Send>, name: &str, cap: u64, problems: &mut Vec<Problem>) -> Vec<Child> {
    let mut reader = match uncompressed(raw, cap) {
        Ok(r) => BufReader::new(r),
        Err(e) => {
            problems.push(io_problem(name, &e, cap));
            return Vec::new();
        }
    };
    let mut children = Vec::new();
    let mut bytes = Vec::new();
    let mut number = 0u64;
    loop {
        bytes.clear();
        match reader.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => number += 1,
            Err(e) => {
                problems.push(io_problem(name, &e, cap));
                break;
            }
        }
        let line = String::from_utf8_lossy(&bytes);
        let line = if number == 1 { line.trim_start_matches('\u{feff}') } else { &line };
        let Some((key, value)) = line.split_once(':') else { continue };
        if !key.trim().eq_ignore_ascii_case("sitemap") {
            continue;
        }
        let indent = value.len() - value.trim_start().len();
        let col = line[..key.len() + 1 + indent].chars().count() + 1;
        let place = crate::model::Position::at(name, number, col as u64);
        match value.split_whitespace().next() {
            Some(loc) => children.push(Child { loc: loc.to_string(), place }),
            None => problems.push(Problem { place, message: "empty `Sitemap:` line".to_string() }),
        }
    }
    children
}
