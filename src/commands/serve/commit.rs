//! Group commit: every ledger write the intake makes goes through one
//! thread, which takes what has queued up while it was busy and commits it
//! together — the rate rules of every waiting request in one transaction
//! (`Limits::take_rates`, decided in arrival order), then the URLs of every
//! request they allowed in one more (`intake::admit_all`). Each request is
//! answered once its commit is done, so a `202` still means durable, and
//! under load many requests share a commit's cost.

use super::intake::{self, Admitted, Checked};
use super::limits::Limit;
use super::State;
use crate::ledger::{RateDecision, RateRequest};
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
    Taken(RateDecision, Admitted),
    /// The URL rule refused them; nothing was written.
    Refused(RateDecision),
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
    let decided = match ledger.take_rates(&requests, crate::commands::now(&state.clock)) {
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
                let _ = reply.send(Ok(Admit::Taken(decision, admitted)));
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
