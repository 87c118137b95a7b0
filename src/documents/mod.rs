//! The JSON documents that a command prints and `serve` answers alike:
//! `status` (`GET /v1/budget`) and `queue list` (`GET /v1/queue`). They
//! read the ledger and build the document; the commands print it and
//! `serve` sends it, so neither driver imports the other.

pub mod queue_list;
pub mod status;
