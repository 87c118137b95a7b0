//! `serve`'s intake limits on SQLite: the TAT of a token's rule read and
//! advanced in one `BEGIN IMMEDIATE` transaction (processes sharing the
//! file serialize on it), in microseconds.

use super::*;

impl Limits for SqliteLedger {
    fn take_rate(&mut self, token: &str, rule: &str, gcra: &Gcra, cost: u32, now: Now) -> Result<RateDecision> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let tat: Option<i64> = tx
            .query_row("SELECT tat_us FROM intake_limits WHERE token = ?1 AND rule = ?2", params![token, rule], |r| {
                r.get(0)
            })
            .optional()?;
        let decision = gcra.decide(tat.and_then(DateTime::from_timestamp_micros), now.local, cost);
        if decision.allowed {
            tx.execute(
                "INSERT INTO intake_limits (token, rule, tat_us) VALUES (?1, ?2, ?3)
                 ON CONFLICT (token, rule) DO UPDATE SET tat_us = excluded.tat_us",
                params![token, rule, decision.tat.timestamp_micros()],
            )?;
        }
        tx.commit()?;
        Ok(decision)
    }
}
