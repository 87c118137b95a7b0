//! Where an input URL goes: each engine and target of its property, and
//! for IndexNow only within its key location's folder. `submit`'s intake
//! and `serve` route every URL through here.

use super::findings::invalid;
use crate::engines::indexnow;
use crate::ingest::StoredUrl;
use crate::ledger::NewItem;
use crate::model::{Action, Channel, EngineKind, GroupKey, LocalReason, Position};
use crate::output::results::ResultEntry;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// Where an input URL goes: each engine and target of its property, and
/// for IndexNow only within its key location's folder. `submit` and
/// `serve` route every URL through here.
pub(crate) struct Routes {
    routes: FxHashMap<String, Vec<Arc<GroupKey>>>,
    /// Each property's timezone, which its items take (`NewItem::zone`).
    zones: FxHashMap<String, Tz>,
    /// Per property whose IndexNow key location is below its host's root:
    /// the folder the key vouches for (`engines::indexnow::key_scope`), and
    /// how it is shown.
    key_scopes: FxHashMap<String, (url::Url, String)>,
}

impl Routes {
    fn new(
        groups: Vec<GroupKey>,
        key_scopes: FxHashMap<String, (url::Url, String)>,
        zones: FxHashMap<String, Tz>,
    ) -> Routes {
        let mut routes: FxHashMap<String, Vec<Arc<GroupKey>>> = FxHashMap::default();
        for group in groups.into_iter().filter(|g| g.channel == Channel::Urls) {
            routes.entry(group.property.clone()).or_default().push(Arc::new(group));
        }
        Routes { routes, key_scopes, zones }
    }

    /// The routes of `groups`, with each property's key scope and
    /// timezone read from `settings`.
    pub(crate) fn of(settings: &crate::config::Settings, groups: Vec<GroupKey>) -> Routes {
        let zones = settings.properties.iter().map(|p| (p.name.clone(), p.timezone)).collect();
        Routes::new(groups, key_scopes(settings), zones)
    }

    /// Whether URLs of `property` go anywhere.
    pub(crate) fn routes_property(&self, property: &str) -> bool {
        self.routes.contains_key(property)
    }

    /// The timezone of `property` (every configured property has its own;
    /// one not configured has no groups either).
    pub(crate) fn zone(&self, property: &str) -> Tz {
        self.zones.get(property).copied().unwrap_or(Tz::UTC)
    }

    /// Routes `url` (of `property`, read as `text` at `place`; `None`: as
    /// its own text) to each group
    /// of its property, adding a queue item per group to `batch`; returns
    /// the `invalid` result of a URL outside its IndexNow key location's
    /// folder (not sent to IndexNow; its other engines still get it).
    pub(crate) fn route(
        &self,
        property: &str,
        url: StoredUrl,
        item: (Action, Option<DateTime<Utc>>),
        (text, place): (Option<&str>, &Position),
        batch: &mut Vec<NewItem>,
    ) -> Option<ResultEntry> {
        let (action, lastmod) = item;
        // IndexNow takes only the URLs under the key location's folder: the
        // others are not sent to it (one result, whatever the endpoints), and
        // still go to the property's other engines.
        let scope = self
            .key_scopes
            .get(property)
            .filter(|(scope, _)| !indexnow::in_key_scope(scope, url.host_str(), url.path()));
        let groups = self.routes.get(property).map_or(&[][..], Vec::as_slice);
        let zone = self.zone(property);
        let to_indexnow = groups.iter().any(|g| g.engine == EngineKind::IndexNow);
        let to_others = groups.iter().any(|g| g.engine != EngineKind::IndexNow);
        let outside = scope.filter(|_| to_indexnow).map(|(_, scope)| {
            let others = if to_others { " (its other engines still get it)" } else { "" };
            let why = format!(
                "outside {scope}, the folder of the IndexNow key location of property `{property}`: IndexNow takes \
                 only URLs under it, so it is not sent to IndexNow{others}"
            );
            let mut e = invalid(text.unwrap_or(url.as_str()), place, LocalReason::OutsideKeyLocation, why);
            (e.property, e.engine) = (Some(property.to_string()), Some(EngineKind::IndexNow));
            e.hint = Some(
                "serve the key file at the site's root and remove `key_location` (the root vouches for every URL \
                 of the host), or move it to a folder that holds every URL you submit"
                    .into(),
            );
            e
        });
        let mut to = groups.iter().filter(|g| g.engine != EngineKind::IndexNow || scope.is_none()).peekable();
        // The last item takes the URL's text, the others a copy.
        let mut url = Some(String::from(url));
        while let Some(group) = to.next() {
            let url = if to.peek().is_some() { url.clone() } else { url.take() }.unwrap_or_default();
            batch.push(NewItem { url, group: Arc::clone(group), action, lastmod, zone });
        }
        outside
    }
}

/// The folder each property's IndexNow key vouches for, when its key
/// location is below its host's root (the key itself masked, should a
/// folder be named after it).
fn key_scopes(settings: &crate::config::Settings) -> FxHashMap<String, (url::Url, String)> {
    let mut scopes = FxHashMap::default();
    for property in &settings.properties {
        let Some(table) = &property.indexnow else { continue };
        let Some(scope) = table.key_location.as_ref().and_then(|l| indexnow::key_scope(&property.site, l)) else {
            continue;
        };
        let shown = match crate::config::read_indexnow_key(table) {
            Ok(key) => crate::redact::mask(scope.as_str(), key.expose()),
            Err(_) => scope.to_string(),
        };
        scopes.insert(property.name.clone(), (scope, shown));
    }
    scopes
}
