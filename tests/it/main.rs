//! Integration tests: the real `indexq` binary against mock engines on
//! 127.0.0.1, with the clock pinned. One file per feature.

mod support;

mod bing;
mod budget;
mod clock;
mod commands;
mod config_errors;
mod doctor;
mod google;
mod hostile;
mod inputs;
mod keys;
mod ledger;
mod local_state;
mod metrics;
mod operator;
mod outcomes;
mod postgres;
mod report;
mod secrets;
mod soak;
