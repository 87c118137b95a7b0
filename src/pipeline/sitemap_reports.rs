//! The engines' reports on the sitemaps submitted to them (Search Console's
//! `sitemaps.get`, Bing's `GetFeeds`), read after sending: for each sitemap
//! group of the run's engines whose read is due (`SitemapState::read_due`:
//! submitted since its last read, or last read `[sitemap] read_interval`
//! ago), one read per property and engine, each kept in the ledger with
//! since when its problems hold. What the reports say a human must look at
//! is said at the end of the run, with what is parked (`attention`).

use super::Run;
use crate::model::{EngineKind, GroupKey};
use chrono::TimeDelta;
use std::collections::{BTreeMap, HashSet};

impl Run<'_> {
    /// Reads the reports that are due and keeps them; returns the problems
    /// they show that were not there before (said as this run's).
    pub(super) async fn read_sitemap_reports(&mut self) -> anyhow::Result<HashSet<(GroupKey, String)>> {
        let known = self.known_groups();
        if !known.iter().any(|g| g.sitemap_url().is_some()) {
            return Ok(HashSet::new());
        }
        let interval = TimeDelta::from_std(self.settings.sitemap.read_interval).unwrap_or(TimeDelta::MAX);
        let deadline = TimeDelta::from_std(self.settings.sitemap.download_deadline).unwrap_or(TimeDelta::MAX);
        let now = self.clock.now();
        let states: Vec<_> = self.ledger.sitemap_states()?.into_iter().filter(|s| known.contains(&s.group)).collect();
        let problems_of = |states: &[crate::model::SitemapState], now| -> HashSet<(GroupKey, String)> {
            states
                .iter()
                .flat_map(|s| {
                    crate::classify::sitemap_problems(s, now, deadline)
                        .into_iter()
                        .map(|p| (s.group.clone(), p.reason.to_string()))
                })
                .collect()
        };
        let before = problems_of(&states, now);
        let mut due: BTreeMap<(String, EngineKind), Vec<String>> = BTreeMap::new();
        for state in states.iter().filter(|s| s.read_due(now, interval)) {
            due.entry((state.group.property.clone(), state.group.engine)).or_default().push(state.group.target.clone());
        }
        for ((property, engine), sitemaps) in due {
            if self.stop.requested() {
                break;
            }
            let Some(engine_impl) = self.engines.get(&engine) else { continue };
            let stop_signal = self.stop.stop_signal().clone();
            let Some(reads) = stop_signal.within_grace(engine_impl.sitemap_reports(&property, &sitemaps)).await else {
                break;
            };
            let at = self.clock.now();
            for (sitemap, read) in reads {
                tracing::debug!(%property, %engine, %sitemap, ?read, "sitemap report read");
                self.ledger.record_sitemap_read(&GroupKey::sitemap(property.clone(), engine, sitemap), &read, at)?;
            }
        }
        let now = self.clock.now();
        let after: Vec<_> = self.ledger.sitemap_states()?.into_iter().filter(|s| known.contains(&s.group)).collect();
        Ok(problems_of(&after, now).into_iter().filter(|p| !before.contains(p)).collect())
    }
}
