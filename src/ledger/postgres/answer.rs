//! An answer's steps on PostgreSQL (`policy::AnswerSteps`): a request
//! recorded once and every item it names moved with one statement (the
//! group counts follow by the statement triggers), units given back, a
//! reading of what the engine says is left, a block, and inspections
//! counted.

use super::claim::add_usage;
use super::spans::{write_spans, Runs};
use super::{
    insert_request, opt_sec, sec, Answered, Block, Class, InspectionAnswer, Recorded, Report, Result, RuleWindow, Tx,
};
use crate::ledger::policy::{AnswerSteps, Move};
use ::postgres::types::ToSql;

/// An answer's move of its items, over a span's columns:
/// `$4` the new state, `$5` its due time, `$6` the answer's class, `$7`
/// its time, `$8` the fingerprint a parked item keeps, `$9` the request.
const ANSWERED: &str = "state = $4, next_attempt_at = $5,
     attempts = attempts + 1,
     streak = CASE WHEN last_class IS NOT DISTINCT FROM $6 THEN streak + 1 ELSE 1 END,
     streak_started_at = CASE WHEN last_class IS NOT DISTINCT FROM $6 AND streak_started_at IS NOT NULL
                              THEN streak_started_at ELSE $7 END,
     last_class = $6,
     accepted_at = CASE WHEN $4 = 'accepted' THEN $7 ELSE accepted_at END,
     parked_fingerprint = $8, last_request_id = $9";

impl AnswerSteps for Tx<'_, '_, '_> {
    fn answer(&mut self, answer: &Answered, to: &Move) -> Result<()> {
        let group: i64 = self
            .tx
            .query_one(
                "SELECT group_id FROM batches WHERE first_id <= $1 ORDER BY first_id DESC LIMIT 1",
                &[&answer.items[0]],
            )?
            .get(0);
        let request = insert_request(self.tx, &Recorded::answer(group, answer))?;
        let params: [&(dyn ToSql + Sync); 6] =
            [&to.to.as_str(), &opt_sec(to.due), &answer.class.as_str(), &sec(answer.at), &to.fingerprint, &request];
        write_spans(self.tx, &Runs::of_group(group, &answer.items), ANSWERED, "true", &params)?;
        Ok(())
    }

    fn give_back(&mut self, window: &RuleWindow, units: u64) -> Result<()> {
        self.tx.execute(
            "UPDATE budget_usage SET used = GREATEST(used - $3, 0) WHERE rule = $1 AND window_key = $2",
            &[&window.rule, &window.window, &(units as i64)],
        )?;
        Ok(())
    }

    fn in_flight_units(&mut self, rule: &RuleWindow, except: Option<i64>) -> Result<u64> {
        let row = self.tx.query_one(
            "SELECT COALESCE(SUM(units), 0)::bigint FROM reservation_rules
             WHERE rule = $1 AND window_key = $2 AND reservation_id IS DISTINCT FROM $3",
            &[&rule.rule, &rule.window, &except],
        )?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }

    fn set_report(&mut self, rule: &RuleWindow, report: &Report) -> Result<()> {
        self.tx.execute(
            "UPDATE budget_usage SET limit_value = $3, reported_at = $4, reported_remaining = $5
             WHERE rule = $1 AND window_key = $2",
            &[&rule.rule, &rule.window, &(report.limit as i64), &sec(report.at), &(report.remaining as i64)],
        )?;
        Ok(())
    }

    fn block(&mut self, block: &Block) -> Result<()> {
        add_usage(self.tx, &block.rule, 0)?;
        self.tx.execute(
            "INSERT INTO blocks (rule, until) VALUES ($1, $2)
             ON CONFLICT (rule) DO UPDATE SET until = GREATEST(blocks.until, excluded.until)",
            &[&block.rule.rule, &sec(block.until)],
        )?;
        Ok(())
    }

    fn count_inspections(&mut self, property: &str, class: Class, n: u64, last: &InspectionAnswer) -> Result<()> {
        self.tx.execute(
            "INSERT INTO inspections AS i
                 (property, class, count, last_at, last_reason, last_message, last_hint, last_status)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (property, class) DO UPDATE SET count = i.count + excluded.count,
                 last_reason = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_reason
                                    ELSE i.last_reason END,
                 last_message = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_message
                                     ELSE i.last_message END,
                 last_hint = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_hint
                                  ELSE i.last_hint END,
                 last_status = CASE WHEN excluded.last_at >= i.last_at THEN excluded.last_status
                                    ELSE i.last_status END,
                 last_at = GREATEST(i.last_at, excluded.last_at)",
            &[
                &property,
                &class.as_str(),
                &(n as i64),
                &sec(last.at),
                &last.reason.to_string(),
                &last.message,
                &last.hint,
                &last.http_status.map(i32::from),
            ],
        )?;
        Ok(())
    }

    fn credential_accepted(&mut self, fingerprint: &str) -> Result<()> {
        self.tx.execute("DELETE FROM credentials WHERE fingerprint = $1", &[&fingerprint])?;
        Ok(())
    }
}
