//! What the user sees. Each module has one job, and the dependencies point
//! one way (`summary` → `results` → `printer` → `escape`; `progress` →
//! `printer`):
//!
//! - `printer`: the `Printer` every command writes through, and the
//!   formatting many commands share (`rfc3339`, `when`, `group_title`).
//! - `results`: the per-run results store of `submit` (counts and
//!   aggregates, and for `--json` every result), with the entries it takes.
//! - `summary`: what a `submit` run says at its end, rendered from
//!   `Results` as human text and as the `--json` document (README, *Output
//!   and exit codes*). (`indexq report`'s HTML page is `crate::report`.)
//! - `progress`: the progress bar on a terminal.
//! - `parked`: the words of what needs a human (the notices `attention`
//!   finds), as `submit`, `status` and `doctor` say it.
//! - `escape`: control characters in human text, shown escaped (the
//!   `Printer`'s writers, the final error, `-v`'s log lines).

pub(crate) mod escape;
pub(crate) mod parked;
pub mod printer;
pub(crate) mod progress;
pub(crate) mod results;
pub(crate) mod summary;
