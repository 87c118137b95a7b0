//! Which hosts a sitemap read may fetch from, and the addresses it may
//! connect to. A sitemap's content (an index child, a redirect) must not
//! decide what indexq reaches: only the configuration does. A URL is
//! fetched when its host and port are the source's own, or one the
//! [`Reach`] lists (the property's site, its other sources, its
//! `fetch_hosts`); and then only when every address its host resolves to is
//! public — or the host is one the configuration names itself, exactly
//! (not through a `*.` wildcard), since the owner may well mean an internal
//! or local server. The check is made on the addresses themselves before
//! any connection: the host is resolved here ([`Pins`]; `INDEXQ_RESOLVE`
//! first), each address checked, and the client connects only to the
//! addresses checked — its resolver answers from the same [`Pins`], which
//! keep the first answer for the reader's life, so a second DNS answer
//! cannot differ from the one checked. An IP literal needs no resolution:
//! it is its own address.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use crate::net::{non_public, HostPattern, Range};

/// The hosts a read may reach beyond its source's own host, and where the
/// configuration lists more (for the refusal's hint).
#[derive(Debug, Clone, Default)]
pub struct Reach {
    hosts: Vec<HostPattern>,
    /// Where a refused host would be listed, e.g. "`fetch_hosts` of
    /// property `blog`".
    listed_in: String,
}

impl Reach {
    /// `hosts` (each the configuration's word), listed more in `listed_in`.
    pub fn new(hosts: Vec<HostPattern>, listed_in: impl Into<String>) -> Reach {
        Reach { hosts, listed_in: listed_in.into() }
    }

    /// Why `url` may not be fetched on a read whose source is `source`
    /// (`None`: a local file), given what its host resolved to; `None`
    /// when it may. `addresses` are those of `url`'s host.
    pub(super) fn refusal(
        &self,
        source: Option<&HostPattern>,
        url: &url::Url,
        addresses: &[IpAddr],
    ) -> Option<Refusal> {
        let allowed: Vec<&HostPattern> = source.into_iter().chain(&self.hosts).filter(|h| h.matches(url)).collect();
        if allowed.is_empty() {
            return Some(Refusal::Host);
        }
        if allowed.iter().any(|h| h.is_exact()) {
            return None;
        }
        let (address, range) = addresses.iter().find_map(|a| non_public(*a).map(|r| (*a, r)))?;
        Some(Refusal::Address { address, range })
    }

    /// Whether `url`'s host and port are allowed at all (before resolving).
    pub(super) fn allows_host(&self, source: Option<&HostPattern>, url: &url::Url) -> bool {
        source.into_iter().chain(&self.hosts).any(|h| h.matches(url))
    }

    /// Where a refused host would be listed.
    pub(super) fn listed_in(&self) -> &str {
        if self.listed_in.is_empty() {
            "a property's `fetch_hosts`"
        } else {
            &self.listed_in
        }
    }
}

/// Why a URL was not fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Its host and port are neither the source's nor any the configuration lists.
    Host,
    /// Its host resolved to a non-public address and the configuration does
    /// not name that host itself.
    Address { address: IpAddr, range: Range },
}

/// The HTTP client sitemaps are fetched with: it follows no redirect
/// itself (the reader does, each hop checked) and resolves names only
/// through its [`Pins`]. Clones share the client and the pins.
#[derive(Clone)]
pub struct FetchClient {
    pub(super) client: reqwest::Client,
    pub(super) pins: Pins,
}

impl FetchClient {
    /// `builder`'s timeouts, agent and proxies, with no redirect policy and
    /// `pins` as its DNS resolver.
    pub fn new(builder: reqwest::ClientBuilder, pins: Pins) -> reqwest::Result<FetchClient> {
        let client =
            builder.redirect(reqwest::redirect::Policy::none()).dns_resolver(Arc::new(pins.clone())).build()?;
        Ok(FetchClient { client, pins })
    }
}

/// The addresses each host name resolved to, kept for the reader's life:
/// the check and the connection see the same answer. Also the client's DNS
/// resolver, answering from what was checked.
#[derive(Clone, Default)]
pub struct Pins {
    pinned: Arc<Mutex<HashMap<String, Vec<IpAddr>>>>,
    /// `INDEXQ_RESOLVE`: names resolved to these addresses instead of by DNS.
    overrides: Arc<HashMap<String, IpAddr>>,
}

impl Pins {
    /// Pins whose names resolve through `overrides` first.
    pub fn new(overrides: HashMap<String, IpAddr>) -> Pins {
        Pins { pinned: Arc::default(), overrides: Arc::new(overrides) }
    }

    /// The addresses of `host`: an IP literal is its own; a name is
    /// resolved once (`INDEXQ_RESOLVE`, else the system's resolver) and
    /// pinned.
    pub(super) async fn addresses(&self, host: url::Host<&str>) -> Result<Vec<IpAddr>, String> {
        let name = match host {
            url::Host::Ipv4(ip) => return Ok(vec![IpAddr::V4(ip)]),
            url::Host::Ipv6(ip) => return Ok(vec![IpAddr::V6(ip)]),
            url::Host::Domain(name) => name.trim_end_matches('.').to_ascii_lowercase(),
        };
        if let Some(pinned) = self.pinned().get(&name) {
            return Ok(pinned.clone());
        }
        let addresses = self.look_up(&name).await?;
        Ok(self.pinned().entry(name).or_insert(addresses).clone())
    }

    async fn look_up(&self, name: &str) -> Result<Vec<IpAddr>, String> {
        if let Some(ip) = self.overrides.get(name) {
            return Ok(vec![*ip]);
        }
        let found = tokio::net::lookup_host((name, 0)).await.map_err(|e| format!("cannot resolve {name}: {e}"))?;
        let mut addresses: Vec<IpAddr> = Vec::new();
        for a in found {
            if !addresses.contains(&a.ip()) {
                addresses.push(a.ip());
            }
        }
        if addresses.is_empty() {
            return Err(format!("cannot resolve {name}: no address"));
        }
        Ok(addresses)
    }

    fn pinned(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<IpAddr>>> {
        // A panic while the lock was held left a map that is still whole.
        self.pinned.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl reqwest::dns::Resolve for Pins {
    /// A sitemap host was resolved and checked before its request: its
    /// pinned addresses are the answer. Any other name is the way to a
    /// proxy the environment sets (`HTTPS_PROXY`, …), the operator's own
    /// choice: it is resolved like any name and not held to the rule.
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let pins = self.clone();
        Box::pin(async move {
            let key = name.as_str().trim_end_matches('.').to_ascii_lowercase();
            let pinned = pins.pinned().get(&key).cloned();
            let addresses = match pinned {
                Some(pinned) => pinned,
                None => pins.look_up(&key).await.map_err(Box::<dyn std::error::Error + Send + Sync>::from)?,
            };
            let addrs: reqwest::dns::Addrs = Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> url::Url {
        url::Url::parse(text).unwrap()
    }

    fn reach(hosts: &[&str]) -> Reach {
        Reach::new(hosts.iter().map(|h| HostPattern::parse(h).unwrap()).collect(), "`fetch_hosts`")
    }

    #[test]
    fn the_source_host_and_the_listed_ones_are_reached() {
        let source = HostPattern::of_url(&url("http://127.0.0.1:8000/sitemap.xml"));
        let r = reach(&["cdn.example.com", "*.example.net", "127.0.0.1:9000"]);
        let local = [IpAddr::from([127, 0, 0, 1])];
        let public = [IpAddr::from([93, 184, 216, 34])];
        let metadata = [IpAddr::from([169, 254, 169, 254])];
        #[rustfmt::skip]
        let table: &[(&str, &[IpAddr], Option<Refusal>)] = &[
            // The source's own host and port, whatever it resolves to: named by the configuration.
            ("http://127.0.0.1:8000/child.xml", &local, None),
            // Another loopback port: only when listed.
            ("http://127.0.0.1:9000/child.xml", &local, None),
            ("https://cdn.example.com/s.xml", &public, None),
            ("http://cdn.example.com/s.xml", &public, None),
            // An exact name is the configuration's word even for a private address.
            ("https://cdn.example.com/s.xml", &metadata, None),
            // A wildcard reaches public addresses only.
            ("https://a.b.example.net/s.xml", &public, None),
            ("https://meta.example.net/s.xml", &metadata,
                Some(Refusal::Address { address: metadata[0], range: Range::LinkLocal })),
            ("https://meta.example.net/s.xml", &[public[0], metadata[0]],
                Some(Refusal::Address { address: metadata[0], range: Range::LinkLocal })),
        ];
        for (u, addresses, expected) in table {
            let u = url(u);
            assert!(r.allows_host(source.as_ref(), &u), "{u}");
            assert_eq!(r.refusal(source.as_ref(), &u, addresses), *expected, "{u}");
        }
        for u in [
            "http://127.0.0.1:8001/child.xml",
            "http://localhost:8000/child.xml",
            "https://cdn.example.com:8443/s.xml",
            "https://example.net/s.xml",
            "https://other.example/s.xml",
            "http://169.254.169.254/latest/meta-data/",
        ] {
            assert!(!r.allows_host(source.as_ref(), &url(u)), "{u}");
        }
    }

    #[tokio::test]
    async fn a_name_is_resolved_once_and_overrides_come_first() {
        let pins = Pins::new(HashMap::from([("meta.test".to_string(), IpAddr::from([169, 254, 169, 254]))]));
        let got = pins.addresses(url::Host::Domain("META.test.")).await.unwrap();
        assert_eq!(got, vec![IpAddr::from([169, 254, 169, 254])]);
        assert_eq!(
            pins.addresses(url::Host::Ipv4([10, 0, 0, 1].into())).await.unwrap(),
            vec![IpAddr::from([10, 0, 0, 1])]
        );
        // The answer the client's resolver gives is the pinned one.
        let mut resolved: Vec<SocketAddr> =
            reqwest::dns::Resolve::resolve(&pins, "meta.test".parse().unwrap()).await.unwrap().collect();
        resolved.sort();
        assert_eq!(resolved, vec![SocketAddr::from(([169, 254, 169, 254], 0))]);
    }
}
