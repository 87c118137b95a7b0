//! Integration tests: the real `indexq` binary against mock engines on
//! 127.0.0.1, with the clock pinned. One file per feature.

mod support;

mod action;
mod baidu;
mod bing;
mod budget;
mod classification;
mod clock;
mod commands;
mod config_errors;
mod dates;
mod doctor;
mod fetch_hosts;
mod formats;
mod google;
mod hostile;
mod init;
mod inputs;
mod keys;
mod layers;
mod ledger;
mod local_state;
mod metrics;
mod migration;
mod month;
mod notify;
mod operator;
mod order;
mod outcomes;
mod postgres;
mod recipes;
mod redirects;
mod report;
mod secrets;
mod serve;
mod serve_limits;
mod serve_protocols;
mod serve_tokens;
mod signals;
mod sitemaps;
mod soak;
mod sources;
mod unattended;
mod yandex;
