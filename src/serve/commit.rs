//! Group commit: every ledger write the intake makes goes through one
//! thread, which takes what has queued up while it was busy and commits it
//! together — the rate rules of every waiting request in one transaction
//! (`Limits::take_rates`, decided in arrival order), then the URLs of every
//! request they allowed in one more (`intake::admit_all`). Each request is
//! answered once its commit is done, so a `202` still means durable, and
//! under load many requests share a commit's cost. `take` and `take_urls`
//! are what a route awaits: a job sent to that thread, and its answer.

use super::auth::Caller;
use super::intake::{self, Admitted, Checked};
use super::limits::{Charged, Limit};
use super::refusal::{self, Refusal};
use super::State;
use crate::ledger::{RateDecision, RateRequest};
use axum::http::StatusCode;
use axum::{Extension, Json};
use std::sync::mpsc;
use std::sync::Arc;
use tokio::sync::oneshot;

/// The most requests one commit takes.
const GROUP: usize = 512;

/// A write the intake asks for.
pub(super) enum Job {
    /// A rule taken (every request's `requests_per_second`).
    Take { caller: String, limit: Limit, cost: u32, reply: oneshot::Sender<Result<RateDecision, String>> },
    /// A request's URLs: their `urls_per_minute` taken, then, if it allows,
    /// the URLs admitted.
    Admit { caller: String, checked: Checked, reply: oneshot::Sender<Result<Admit, String>> },
}

/// What became of a request's URLs.
pub(super) enum Admit {
    /// The URL rule allowed them (its decision), and the ledger has them.
    Charged(RateDecision, Admitted),
    /// The URL rule refused them; nothing was written.
    Refused(RateDecision),
}

/// Takes `cost` units of `caller`'s `limit` (through the group commit):
/// refused, a `429` (or a `413` for more units than the burst lets through
/// at all).
pub(super) async fn take(state: &Arc<State>, caller: &str, limit: Limit, cost: u32) -> Result<Charged, Refusal> {
    let (reply, answer) = tokio::sync::oneshot::channel();
    let job = Job::Take { caller: caller.to_string(), limit, cost, reply };
    if state.commits.send(job).is_err() {
        return Err(Refusal::shutting_down());
    }
    let decision = match answer.await {
        Ok(Ok(decision)) => decision,
        Ok(Err(why)) => return Err(Refusal::ledger(&anyhow::anyhow!(why))),
        Err(_) => return Err(Refusal::shutting_down()),
    };
    refusal::answer_for(state, caller, limit, cost, decision)
}

/// URLs read from a request (`POST /v1/urls`, a publish hook) into the
/// ledger: checked, counted against the token's URL limit, admitted, and
/// the worker woken.
pub(super) async fn take_urls(
    state: &Arc<State>,
    caller: &Caller,
    submission: intake::Submission,
) -> Result<(StatusCode, Extension<Charged>, Json<intake::Admitted>), Refusal> {
    let checked = intake::check(state, caller, submission)?;
    let urls = u32::try_from(checked.len()).unwrap_or(u32::MAX);
    let (reply, answer) = tokio::sync::oneshot::channel();
    if state.commits.send(Job::Admit { caller: caller.id().to_string(), checked, reply }).is_err() {
        return Err(Refusal::shutting_down());
    }
    let (decision, admitted) = match answer.await {
        Ok(Ok(Admit::Charged(decision, admitted))) => (decision, admitted),
        Ok(Ok(Admit::Refused(decision))) => {
            return Err(refusal::answer_for(state, caller.id(), Limit::UrlsPerMinute, urls, decision)
                .expect_err("a refused decision is a refusal"));
        }
        Ok(Err(why)) => return Err(Refusal::ledger(&anyhow::anyhow!(why))),
        Err(_) => return Err(Refusal::shutting_down()),
    };
    state.wake.notify_one();
    let taken = Charged { limit: Limit::UrlsPerMinute, decision };
    Ok((StatusCode::ACCEPTED, Extension(taken), Json(admitted)))
}

/// Starts the committing thread.
pub(super) fn start(state: Arc<State>, jobs: mpsc::Receiver<Job>) {
    std::thread::Builder::new()
        .name("indexq-commit".into())
        .spawn(move || {
            while let Ok(first) = jobs.recv() {
                let mut group = vec![first];
                while group.len() < GROUP {
                    match jobs.try_recv() {
                        Ok(job) => group.push(job),
                        Err(_) => break,
                    }
                }
                commit(&state, group);
            }
        })
        .expect("a thread for the intake's commits");
}

/// Commits a group: its rate rules, then its URLs.
fn commit(state: &State, group: Vec<Job>) {
    let requests: Vec<RateRequest> = group
        .iter()
        .map(|job| match job {
            Job::Take { caller, limit, cost, .. } => RateRequest {
                token: caller.clone(),
                takes: vec![(limit.as_str().to_string(), limit.gcra(state), *cost)],
            },
            Job::Admit { caller, checked, .. } => {
                let limit = Limit::UrlsPerMinute;
                let urls = u32::try_from(checked.len()).unwrap_or(u32::MAX);
                RateRequest {
                    token: caller.clone(),
                    takes: vec![(limit.as_str().to_string(), limit.gcra(state), urls)],
                }
            }
        })
        .collect();
    let mut ledger = match state.ledger.lock() {
        Ok(ledger) => ledger,
        Err(_) => return fail(group, "the intake's ledger connection failed"),
    };
    let decided = match ledger.take_rates(&requests, crate::ledger::open::now(&state.clock)) {
        Ok(decided) => decided,
        Err(e) => return fail(group, &e.to_string()),
    };
    let (mut admit, mut waiting) = (Vec::new(), Vec::new());
    for (job, decisions) in group.into_iter().zip(decided) {
        let decision = decisions[0];
        match job {
            Job::Take { reply, .. } => {
                let _ = reply.send(Ok(decision));
            }
            Job::Admit { checked, reply, .. } if decision.allowed => {
                admit.push(checked);
                waiting.push((reply, decision));
            }
            Job::Admit { reply, .. } => {
                let _ = reply.send(Ok(Admit::Refused(decision)));
            }
        }
    }
    if admit.is_empty() {
        return;
    }
    match intake::admit_all(state, ledger.as_mut(), state.clock.now(), admit) {
        Ok(admitted) => {
            for ((reply, decision), admitted) in waiting.into_iter().zip(admitted) {
                let _ = reply.send(Ok(Admit::Charged(decision, admitted)));
            }
        }
        Err(e) => {
            let why = format!("{e:#}");
            for (reply, _) in waiting {
                let _ = reply.send(Err(why.clone()));
            }
        }
    }
}

/// Answers every job of a group that could not be committed.
fn fail(group: Vec<Job>, why: &str) {
    for job in group {
        match job {
            Job::Take { reply, .. } => {
                let _ = reply.send(Err(why.to_string()));
            }
            Job::Admit { reply, .. } => {
                let _ = reply.send(Err(why.to_string()));
            }
        }
    }
}
