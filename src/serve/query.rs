//! `GET /v1/queue`'s filter, read from its query string: the parameters
//! are `queue list`'s options, but serve reads them into a type of its own
//! and hands the ledger its `ItemFilter`, so that the HTTP side owes
//! nothing to the command line's parser.

use super::refusal::Refusal;
use crate::ledger::{ItemFilter, StateFilter};
use crate::model::EngineKind;

/// What a `GET /v1/queue` asks for: `state`, `property`, `engine`,
/// `endpoint`, `url` and `limit`, each as `queue list` takes it.
#[derive(Debug, Default)]
pub(super) struct QueueQuery {
    pub states: Vec<StateFilter>,
    pub property: Option<String>,
    pub engine: Option<EngineKind>,
    pub endpoint: Option<String>,
    pub url: Option<String>,
    pub limit: Option<usize>,
}

/// The names a `state` holds, as `queue list --state` spells them (ASCII
/// case ignored), and the states each stands for: `queued` is due or
/// waiting, and `in-flight` is the name earlier versions took for
/// `in_flight`.
const STATE_NAMES: [(&str, &[StateFilter]); 7] = [
    ("due", &[StateFilter::Due]),
    ("waiting", &[StateFilter::Waiting]),
    ("queued", &[StateFilter::Due, StateFilter::Waiting]),
    ("parked", &[StateFilter::Parked]),
    ("in_flight", &[StateFilter::InFlight]),
    ("in-flight", &[StateFilter::InFlight]),
    ("accepted", &[StateFilter::Accepted]),
];

impl QueueQuery {
    /// The filter a query string asks for; an unknown parameter or a value
    /// that cannot be read is a `400` naming it.
    pub(super) fn parse(query: &str) -> Result<QueueQuery, Refusal> {
        let mut f = QueueQuery::default();
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            let bad = |why: String| Refusal::bad_request(format!("`{key}={value}`: {why}"));
            match key.as_ref() {
                "state" => {
                    for s in value.split(',') {
                        f.states.extend_from_slice(states_named(s).map_err(bad)?);
                    }
                }
                "property" => f.property = Some(value.into_owned()),
                "engine" => f.engine = Some(value.parse().map_err(|e: String| bad(e))?),
                "endpoint" => f.endpoint = Some(value.into_owned()),
                "url" => f.url = Some(value.into_owned()),
                "limit" => f.limit = Some(value.parse().map_err(|e: std::num::ParseIntError| bad(e.to_string()))?),
                _ => {
                    return Err(Refusal::bad_request(format!("unknown parameter `{key}`"))
                        .hint("the parameters: state, property, engine, endpoint, url, limit"))
                }
            }
        }
        Ok(f)
    }

    /// The ledger's filter for this query, its URL in the form the ledger
    /// stores.
    pub(super) fn filter(self) -> ItemFilter {
        ItemFilter {
            states: self.states,
            property: self.property,
            engine: self.engine,
            target: self.endpoint,
            url: self.url.as_deref().map(crate::ingest::stored_form),
            limit: self.limit,
        }
    }
}

/// The states that `name` stands for, or why it names none (in the words
/// `queue list --state` has always answered a query with).
fn states_named(name: &str) -> Result<&'static [StateFilter], String> {
    STATE_NAMES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|(_, states)| *states)
        .ok_or_else(|| format!("invalid variant: {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum as _;

    /// The query takes every name `queue list --state` takes, aliases
    /// included, and refuses the others in the same words.
    #[test]
    fn the_state_names_are_queue_lists() {
        let mut names = Vec::new();
        for state in crate::cli::StateArg::value_variants() {
            let value = state.to_possible_value().expect("every state has a name");
            names.extend(value.get_name_and_aliases().map(str::to_string));
        }
        let ours: Vec<&str> = STATE_NAMES.iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ours);
        for name in ["lost", "due,waiting", ""] {
            let theirs = crate::cli::StateArg::from_str(name, true).map(|_| ()).unwrap_err();
            assert_eq!(states_named(name).map(|_| ()).unwrap_err(), theirs);
        }
        assert_eq!(states_named("In_Flight"), Ok(&[StateFilter::InFlight][..]));
        assert_eq!(states_named("QUEUED"), Ok(&[StateFilter::Due, StateFilter::Waiting][..]));
    }

    #[test]
    fn a_query_is_read_into_the_ledgers_filter() {
        let q = QueueQuery::parse("state=due,in-flight&property=shop&engine=bing&limit=5").unwrap();
        assert_eq!(q.states, [StateFilter::Due, StateFilter::InFlight]);
        assert_eq!((q.property.as_deref(), q.engine, q.limit), (Some("shop"), Some(EngineKind::Bing), Some(5)));
        let bad = QueueQuery::parse("state=lost").unwrap_err();
        assert!(bad.message.contains("`state=lost`: invalid variant: lost"), "{}", bad.message);
        assert!(QueueQuery::parse("colour=red").is_err());
    }
}
