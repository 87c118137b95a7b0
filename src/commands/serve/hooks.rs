//! Reads of the configured sources asked over HTTP (`POST /v1/sources`,
//! and the deploy hooks): handed to the worker, which reads them with
//! `--changed` as an unattended `submit` does, and answered once what they
//! hold is in the ledger.

use super::auth::Caller;
use super::http::{ErrorCode, Refusal};
use super::{SourcesJob, State};
use crate::commands::submit::SourcesRead;
use axum::http::StatusCode;
use std::sync::Arc;
use tokio::sync::oneshot;

/// Has the worker read the sources of `property` (or of every property
/// the caller may write), and says what it put in the ledger.
pub(super) async fn read_sources(
    state: &Arc<State>,
    caller: &Caller,
    property: Option<String>,
) -> Result<SourcesRead, Refusal> {
    let properties = match property {
        Some(p) if state.settings.property(&p).is_none() => {
            let known: Vec<&str> = state.settings.properties.iter().map(|p| p.name.as_str()).collect();
            return Err(Refusal::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::UnknownProperty,
                format!("no [[property]] is named `{p}`"),
            )
            .hint(format!("the configured properties: {}", known.join(", "))));
        }
        Some(p) if !caller.may_write(&p) => {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                ErrorCode::Forbidden,
                format!("token `{}` may not write property `{p}`", caller.id()),
            )
            .hint("use the token of that property, or add the property to this token's `properties`"));
        }
        Some(p) => Some(vec![p]),
        None => match caller {
            Caller::Anyone => None,
            Caller::Token { properties, .. } => Some(properties.clone()),
        },
    };
    let (reply, answer) = oneshot::channel();
    if state.sources.send(SourcesJob { properties, reply }).await.is_err() {
        return Err(Refusal::shutting_down());
    }
    match answer.await {
        Ok(Ok(read)) => Ok(read),
        Ok(Err(why)) => Err(Refusal::ledger(&anyhow::anyhow!(why))),
        // The worker stopped before it read them.
        Err(_) => Err(Refusal::shutting_down()),
    }
}
