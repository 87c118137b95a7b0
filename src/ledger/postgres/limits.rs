//! `serve`'s intake limits on PostgreSQL: the TAT of a token's rule locked
//! (`FOR UPDATE`), decided at the database server's clock and advanced in
//! one transaction, so every `serve` sharing the ledger shares it.

use super::*;

impl Limits for PgLedger {
    fn take_rate(&mut self, token: &str, rule: &str, gcra: &Gcra, cost: u32, now: Now) -> Result<RateDecision> {
        let gcra = *gcra;
        self.transaction(move |tx| {
            tx.execute(
                "INSERT INTO intake_limits (token, rule, tat_us) VALUES ($1, $2, NULL) ON CONFLICT DO NOTHING",
                &[&token, &rule],
            )?;
            let row = tx.query_one(
                "SELECT tat_us, clock_timestamp() FROM intake_limits WHERE token = $1 AND rule = $2 FOR UPDATE",
                &[&token, &rule],
            )?;
            let tat: Option<i64> = row.get(0);
            let server: DateTime<Utc> = row.get(1);
            let decision = gcra.decide(tat.and_then(DateTime::from_timestamp_micros), server + now.shift, cost);
            if decision.allowed {
                tx.execute(
                    "UPDATE intake_limits SET tat_us = $3 WHERE token = $1 AND rule = $2",
                    &[&token, &rule, &decision.tat.timestamp_micros()],
                )?;
            }
            Ok(decision)
        })
    }
}
