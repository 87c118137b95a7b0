//! `property.fetch_hosts`: the hosts a property's sitemaps may fetch from
//! beyond its site's and its sources' own (`net::HostPattern`).

use super::Resolver;
use crate::config::raw::S;
use crate::config::{defaults, ConfigError};
use crate::net::{HostPattern, HostPatternError};

impl Resolver<'_> {
    /// `property.fetch_hosts`: each a host name or IP address with an
    /// optional port, or `*.` and a domain; none given, the default (none).
    pub(super) fn fetch_hosts(&self, raw: &[S<String>], prefix: &str) -> Result<Vec<HostPattern>, ConfigError> {
        if raw.is_empty() {
            return Ok(defaults::PROPERTY_FETCH_HOSTS.iter().filter_map(|h| HostPattern::parse(h).ok()).collect());
        }
        let mut hosts = Vec::with_capacity(raw.len());
        for (i, value) in raw.iter().enumerate() {
            let key = format!("{prefix}.fetch_hosts[{i}]");
            let host = HostPattern::parse(value.get_ref()).map_err(|e| {
                let hint = match e {
                    HostPatternError::Url(_) => "write the host alone, e.g. \"cdn.example.com\" (a port after a colon)",
                    _ => "e.g. \"cdn.example.com\", \"cdn.example.com:8443\", \"*.example.com\" or \"10.0.0.5\"",
                };
                self.err(value, &key, e.to_string()).hint(hint)
            })?;
            hosts.push(host);
        }
        Ok(hosts)
    }
}
