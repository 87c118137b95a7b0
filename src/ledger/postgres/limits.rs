//! `serve`'s intake limits on PostgreSQL: the TATs of the tokens' rules
//! locked (`FOR UPDATE`, in key order), decided at the database server's
//! clock (`policy::decide_all`) and advanced in one transaction, so every
//! `serve` sharing the ledger shares them. Its commit does not wait for
//! the server's disk (`synchronous_commit = off`, for it alone): a rule's
//! state need not survive a crash of the server (as on SQLite, see there).

use super::{policy, DateTime, Limits, Now, PgLedger, RateDecision, RateRequest, Result, Utc};

impl Limits for PgLedger {
    fn take_rates(&mut self, requests: &[RateRequest], now: Now) -> Result<Vec<Vec<RateDecision>>> {
        let keys = policy::rate_keys(requests);
        let (tokens, rules): (Vec<String>, Vec<String>) = keys.iter().cloned().unzip();
        self.transaction(move |tx| {
            tx.batch_execute("SET LOCAL synchronous_commit = off")?;
            tx.execute(
                "INSERT INTO intake_limits (token, rule, tat_us)
                 SELECT t, r, NULL FROM unnest($1::text[], $2::text[]) AS k (t, r)
                 ON CONFLICT DO NOTHING",
                &[&tokens, &rules],
            )?;
            let rows = tx.query(
                "SELECT l.token, l.rule, l.tat_us, clock_timestamp()
                 FROM intake_limits l JOIN unnest($1::text[], $2::text[]) AS k (t, r) ON l.token = k.t AND l.rule = k.r
                 ORDER BY l.token, l.rule FOR UPDATE OF l",
                &[&tokens, &rules],
            )?;
            let mut tats = policy::Tats::new();
            let mut server: Option<DateTime<Utc>> = None;
            for row in &rows {
                let tat: Option<i64> = row.get(2);
                tats.insert((row.get(0), row.get(1)), tat.and_then(DateTime::from_timestamp_micros));
                server = Some(row.get(3));
            }
            let server = match server {
                Some(t) => t,
                None => tx.query_one("SELECT clock_timestamp()", &[])?.get(0),
            };
            let before = tats.clone();
            let decided = policy::decide_all(requests, &mut tats, server + now.shift);
            for ((token, rule), tat) in &tats {
                if let (Some(tat), true) = (tat, before.get(&(token.clone(), rule.clone())) != Some(tat)) {
                    tx.execute(
                        "UPDATE intake_limits SET tat_us = $3 WHERE token = $1 AND rule = $2",
                        &[token, rule, &tat.timestamp_micros()],
                    )?;
                }
            }
            Ok(decided)
        })
    }
}
