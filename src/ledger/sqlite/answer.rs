//! An answer's steps on SQLite (`policy::AnswerSteps`): a request recorded
//! once and every item it names moved with one statement (the group's kept
//! counts with it), units given back, a reading of what the engine says is
//! left, a block, and inspections counted.

use super::claim::add_usage;
use super::{
    counted, insert_request, params, states_of, ts, Answered, Block, Class, IdRuns, InspectionAnswer, ItemState,
    Recorded, Report, Result, RuleWindow, Tx,
};
use crate::ledger::policy::{AnswerSteps, Move};

impl AnswerSteps for Tx<'_> {
    fn answer(&mut self, answer: &Answered, to: &Move) -> Result<()> {
        let conn = self.conn;
        // The group from the batch row holding the first item: a batch row
        // is never removed, so an answered item always has one.
        let group: i64 = conn
            .prepare_cached("SELECT group_id FROM batches WHERE first_id <= ?1 ORDER BY first_id DESC LIMIT 1")?
            .query_row([answer.items[0]], |r| r.get(0))?;
        let request = insert_request(conn, &Recorded::answer(group, answer))?;
        // Items answered before in this transaction (Bing's halves of a
        // batch) are counted from the state they are in; the others were
        // claimed by this reservation, their spans still queued.
        let before = match answer.items.iter().any(|id| self.answered.contains(id)) {
            true => states_of(conn, &answer.items)?,
            false => vec![(ItemState::Queued, answer.items.len() as u64)],
        };
        self.answered.extend(&answer.items);
        let ids = IdRuns::of(&answer.items);
        // `OR FAIL`: no statement journal (a broken constraint rolls the
        // whole transaction back; see `admit_batch`).
        super::spans::write(
            conn,
            "state = ?1, next_attempt_at = ?2,
             attempts = attempts + 1,
             streak = CASE WHEN last_class IS ?3 THEN streak + 1 ELSE 1 END,
             streak_started_at = CASE WHEN last_class IS ?3 AND streak_started_at IS NOT NULL
                                      THEN streak_started_at ELSE ?4 END,
             last_class = ?3,
             accepted_at = CASE WHEN ?1 = 'accepted' THEN ?4 ELSE accepted_at END,
             parked_fingerprint = ?5, last_request_id = ?6",
            "",
            params![to.to.as_str(), to.due.map(ts), answer.class.as_str(), ts(answer.at), to.fingerprint, request],
            &ids,
        )?;
        for (from, n) in before {
            counted(conn, group, Some(from), Some(to.to), n)?;
        }
        Ok(())
    }

    fn give_back(&mut self, window: &RuleWindow, units: u64) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE budget_usage SET used = MAX(used - ?3, 0) WHERE rule = ?1 AND window_key = ?2")?
            .execute(params![window.rule, window.window, units as i64])?;
        Ok(())
    }

    fn in_flight_units(&mut self, rule: &RuleWindow, except: Option<i64>) -> Result<u64> {
        let units: i64 = self
            .conn
            .prepare_cached(
                "SELECT COALESCE(SUM(units), 0) FROM reservation_rules
             WHERE rule = ?1 AND window_key = ?2 AND reservation_id IS NOT ?3",
            )?
            .query_row(params![rule.rule, rule.window, except], |r| r.get(0))?;
        Ok(units.max(0) as u64)
    }

    fn set_report(&mut self, rule: &RuleWindow, report: &Report) -> Result<()> {
        self.conn
            .prepare_cached(
                "UPDATE budget_usage SET limit_value = ?3, reported_at = ?4, reported_remaining = ?5
             WHERE rule = ?1 AND window_key = ?2",
            )?
            .execute(params![rule.rule, rule.window, report.limit as i64, ts(report.at), report.remaining as i64])?;
        Ok(())
    }

    fn block(&mut self, block: &Block) -> Result<()> {
        add_usage(self.conn, &block.rule, 0)?;
        self.conn
            .prepare_cached(
                "INSERT INTO blocks (rule, until) VALUES (?1, ?2)
             ON CONFLICT (rule) DO UPDATE SET until = MAX(until, excluded.until)",
            )?
            .execute(params![block.rule.rule, ts(block.until)])?;
        Ok(())
    }

    fn count_inspections(&mut self, property: &str, class: Class, n: u64, last: &InspectionAnswer) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT INTO inspections
                     (property, class, count, last_at, last_reason, last_message, last_hint, last_status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (property, class) DO UPDATE SET count = count + excluded.count,
                     last_reason = CASE WHEN excluded.last_at >= last_at THEN excluded.last_reason ELSE last_reason END,
                     last_message = CASE WHEN excluded.last_at >= last_at THEN excluded.last_message
                                         ELSE last_message END,
                     last_hint = CASE WHEN excluded.last_at >= last_at THEN excluded.last_hint ELSE last_hint END,
                     last_status = CASE WHEN excluded.last_at >= last_at THEN excluded.last_status ELSE last_status END,
                     last_at = MAX(last_at, excluded.last_at)",
            )?
            .execute(params![
                property,
                class.as_str(),
                n as i64,
                ts(last.at),
                last.reason.to_string(),
                last.message,
                last.hint,
                last.http_status
            ])?;
        Ok(())
    }

    fn credential_accepted(&mut self, fingerprint: &str) -> Result<()> {
        self.conn.prepare_cached("DELETE FROM credentials WHERE fingerprint = ?1")?.execute([fingerprint])?;
        Ok(())
    }
}
