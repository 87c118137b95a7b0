//! indexq as a library: the modules the `indexq` binary is made of, public
//! so that the binary, the fuzz targets (`fuzz/`) and benchmarks can reach
//! them. The command line is the product; this API is not a stable one.

pub mod budget;
pub mod classify;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod engines;
pub mod error;
pub mod files;
pub mod history;
pub mod ingest;
pub mod ledger;
pub mod metrics;
pub mod model;
mod net;
pub mod output;
pub mod redact;
pub mod schedule;
