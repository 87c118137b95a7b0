//! `serve`'s intake limits on SQLite: the TATs of the tokens' rules read,
//! decided (`policy::decide_all`) and advanced in one `BEGIN IMMEDIATE`
//! transaction (processes sharing the file serialize on it), in
//! microseconds. That transaction's commit does not wait for the disk
//! (`synchronous = NORMAL`, for it alone): a rule's state need not survive
//! a power cut — losing its last advance lets a token make a few more
//! requests after one, and no promise of the ledger rests on it — and the
//! next commit that waits (the URLs') makes it durable with itself. A
//! request's answer waits for one fsync, not two.

use super::{
    params, policy, without_waiting_for_disk, Connection, DateTime, Limits, Now, OptionalExtension, RateDecision,
    RateRequest, Result, SqliteLedger, TransactionBehavior,
};

impl Limits for SqliteLedger {
    fn take_rates(&mut self, requests: &[RateRequest], now: Now) -> Result<Vec<Vec<RateDecision>>> {
        without_waiting_for_disk(&mut self.conn, |conn| take_rates_once(conn, requests, now))
    }
}

fn take_rates_once(conn: &mut Connection, requests: &[RateRequest], now: Now) -> Result<Vec<Vec<RateDecision>>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut tats = policy::Tats::new();
    {
        let mut read = tx.prepare_cached("SELECT tat_us FROM intake_limits WHERE token = ?1 AND rule = ?2")?;
        for (token, rule) in policy::rate_keys(requests) {
            let tat: Option<i64> = read.query_row(params![token, rule], |r| r.get(0)).optional()?;
            tats.insert((token, rule), tat.and_then(DateTime::from_timestamp_micros));
        }
    }
    let before = tats.clone();
    let decided = policy::decide_all(requests, &mut tats, now.local);
    {
        let mut write = tx.prepare_cached(
            "INSERT INTO intake_limits (token, rule, tat_us) VALUES (?1, ?2, ?3)
                 ON CONFLICT (token, rule) DO UPDATE SET tat_us = excluded.tat_us",
        )?;
        for ((token, rule), tat) in &tats {
            if let (Some(tat), true) = (tat, before.get(&(token.clone(), rule.clone())) != Some(tat)) {
                write.execute(params![token, rule, tat.timestamp_micros()])?;
            }
        }
    }
    super::commit(tx)?;
    Ok(decided)
}
