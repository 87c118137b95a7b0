//! Network facts shared by the configuration and the HTTP clients: which
//! hosts are this machine, which redirects leave https, which addresses are
//! not the public internet (the address rule of sitemap fetches), the hosts
//! `fetch_hosts` names, and `INDEXQ_RESOLVE`'s overrides.

/// Whether `url` names this machine: `localhost` or a name under it
/// (`sub.localhost`, RFC 6761, a trailing dot allowed), 127.0.0.0/8 or
/// `[::1]`. Nothing is on the way there, so plain http is allowed: for an
/// endpoint or a `token_uri` (tests) and as the target of a redirect that
/// leaves https.
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// How many redirects a fetch of a public document follows.
pub const MAX_REDIRECTS: usize = 5;

/// A redirect not followed because it would leave https for plain http.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downgrade {
    pub from: url::Url,
    pub to: url::Url,
}

impl std::fmt::Display for Downgrade {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the redirect from {} to {} was refused: it leaves https for plain http, where anyone on the way can \
             change what is read",
            self.from, self.to
        )
    }
}

impl std::error::Error for Downgrade {}

/// Whether a redirect to `next`, after `previous` (the first URL asked for,
/// then every redirect followed), would leave https for plain http. A
/// loopback host (`localhost`, 127.0.0.0/8, `[::1]`) is the machine itself,
/// where nothing is on the way: a redirect there is followed.
pub fn downgrade(previous: &[url::Url], next: &url::Url) -> Option<Downgrade> {
    let after_https = previous.iter().any(|u| u.scheme() == "https");
    if !after_https || next.scheme() != "http" || is_loopback(next) {
        return None;
    }
    Some(Downgrade { from: previous.last()?.clone(), to: next.clone() })
}

/// A range of addresses that is not the public internet: this machine, the
/// local link, a private network. A fetch whose host resolves into one is
/// refused unless the configuration names that host itself
/// ([`HostPattern::is_exact`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// 127.0.0.0/8, `::1`.
    Loopback,
    /// 0.0.0.0/8 ("this network"; 0.0.0.0 reaches this machine) and `::`.
    Unspecified,
    /// 169.254.0.0/16 (where cloud metadata services answer), fe80::/10.
    LinkLocal,
    /// 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 (RFC 1918) and the
    /// deprecated IPv6 site-local fec0::/10.
    Private,
    /// 100.64.0.0/10, carrier-grade NAT (RFC 6598).
    Shared,
    /// fc00::/7 (RFC 4193).
    UniqueLocal,
}

impl std::fmt::Display for Range {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Range::Loopback => "a loopback address",
            Range::Unspecified => "an unspecified (\"this network\") address",
            Range::LinkLocal => "a link-local address",
            Range::Private => "a private address",
            Range::Shared => "a shared (carrier-grade NAT) address",
            Range::UniqueLocal => "a unique-local address",
        })
    }
}

/// The non-public range `ip` is in, or `None` for any other address. An
/// IPv6 address that carries an IPv4 one — mapped (`::ffff:a.b.c.d`),
/// compatible (`::a.b.c.d`, deprecated but still routed by some stacks) or
/// behind the well-known NAT64 prefix (`64:ff9b::/96`) — is judged by the
/// IPv4 address it carries, since that is where it leads.
pub fn non_public(ip: std::net::IpAddr) -> Option<Range> {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                return Some(Range::Loopback);
            }
            if v6.is_unspecified() {
                return Some(Range::Unspecified);
            }
            if let Some(v4) = embedded_v4(v6) {
                return non_public_v4(v4);
            }
            let first = v6.segments()[0];
            match first {
                _ if first & 0xffc0 == 0xfe80 => Some(Range::LinkLocal),
                _ if first & 0xffc0 == 0xfec0 => Some(Range::Private),
                _ if first & 0xfe00 == 0xfc00 => Some(Range::UniqueLocal),
                _ => None,
            }
        }
    }
}

fn non_public_v4(ip: std::net::Ipv4Addr) -> Option<Range> {
    let [a, b, ..] = ip.octets();
    match (a, b) {
        (127, _) => Some(Range::Loopback),
        (0, _) => Some(Range::Unspecified),
        (169, 254) => Some(Range::LinkLocal),
        (10, _) | (192, 168) => Some(Range::Private),
        (172, 16..=31) => Some(Range::Private),
        (100, 64..=127) => Some(Range::Shared),
        _ => None,
    }
}

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:0:0/96`),
/// compatible (`::/96`, but for `::` and `::1`, which are IPv6's own) or
/// NAT64's well-known prefix (`64:ff9b::/96`).
fn embedded_v4(ip: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = ip.segments();
    let v4 = std::net::Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s[..6] {
        [0, 0, 0, 0, 0, 0xffff] | [0x64, 0xff9b, 0, 0, 0, 0] => Some(v4),
        [0, 0, 0, 0, 0, 0] if !ip.is_loopback() && !ip.is_unspecified() => Some(v4),
        _ => None,
    }
}

/// A host a fetch may reach, as the configuration writes it (`fetch_hosts`)
/// or as a URL names it: a host name or an IP address — or `*.` and a
/// domain, for every name under that domain (not the domain itself) — with
/// an optional port. Without a port it allows the web's own ports, 80 and
/// 443 (so that a site's move from http to https is followed); with one,
/// only that port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: HostName,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostName {
    Exact(url::Host<String>),
    /// `*.example.com`: the domain, lowercase, without the `*.`.
    Under(String),
}

/// Why a `fetch_hosts` entry is not a host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPatternError {
    #[error("`{0}` is empty")]
    Empty(String),
    #[error("`{0}` is a URL, not a host")]
    Url(String),
    #[error("`{0}` is not a host name or an IP address, with an optional port")]
    NotAHost(String),
    #[error("`{0}`: a `*.` wildcard takes a domain of at least two labels (e.g. `*.example.com`)")]
    WideWildcard(String),
}

impl HostPattern {
    /// Reads `text`: `cdn.example.com`, `cdn.example.com:8443`,
    /// `*.example.com`, `10.0.0.5`, `[fd00::1]:8080`.
    pub fn parse(text: &str) -> Result<HostPattern, HostPatternError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(HostPatternError::Empty(text.to_string()));
        }
        if text.contains("://") || text.contains(['/', '?', '#', '@']) {
            return Err(HostPatternError::Url(text.to_string()));
        }
        if text.contains(char::is_whitespace) {
            return Err(HostPatternError::NotAHost(text.to_string()));
        }
        let (wildcard, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if rest.contains('*') {
            return Err(HostPatternError::NotAHost(text.to_string()));
        }
        // The URL parser reads the host as a browser would (IDNA, IPv4
        // forms, IPv6 in brackets) and the port after it.
        let url = url::Url::parse(&format!("http://{rest}/")).map_err(|_| HostPatternError::NotAHost(text.into()))?;
        let port = url.port_or_known_default().filter(|_| url.port().is_some() || rest.ends_with(":80"));
        let host = match url.host() {
            Some(url::Host::Domain(d)) => {
                let d = d.trim_end_matches('.').to_string();
                if d.is_empty() {
                    return Err(HostPatternError::NotAHost(text.to_string()));
                }
                if wildcard {
                    if !d.contains('.') {
                        return Err(HostPatternError::WideWildcard(text.to_string()));
                    }
                    HostName::Under(d)
                } else {
                    HostName::Exact(url::Host::Domain(d))
                }
            }
            Some(_) if wildcard => return Err(HostPatternError::NotAHost(text.to_string())),
            Some(ip) => HostName::Exact(ip.to_owned()),
            None => return Err(HostPatternError::NotAHost(text.to_string())),
        };
        Ok(HostPattern { host, port })
    }

    /// The host and port of `url` itself (no port: one of the web's own).
    pub fn of_url(url: &url::Url) -> Option<HostPattern> {
        let host = match url.host()? {
            url::Host::Domain(d) => url::Host::Domain(d.trim_end_matches('.').to_string()),
            ip => ip.to_owned(),
        };
        Some(HostPattern { host: HostName::Exact(host), port: url.port() })
    }

    /// Whether `url`'s host and port are this one's.
    pub fn matches(&self, url: &url::Url) -> bool {
        let port = url.port_or_known_default();
        let port_ok = match self.port {
            Some(p) => port == Some(p),
            None => matches!(port, Some(80 | 443)),
        };
        if !port_ok {
            return false;
        }
        match (&self.host, url.host()) {
            (HostName::Exact(url::Host::Domain(d)), Some(url::Host::Domain(h))) => d == h.trim_end_matches('.'),
            (HostName::Exact(url::Host::Ipv4(a)), Some(url::Host::Ipv4(b))) => *a == b,
            (HostName::Exact(url::Host::Ipv6(a)), Some(url::Host::Ipv6(b))) => *a == b,
            (HostName::Under(domain), Some(url::Host::Domain(h))) => {
                let h = h.trim_end_matches('.');
                h.len() > domain.len() + 1 && h.ends_with(domain.as_str()) && h[..h.len() - domain.len()].ends_with('.')
            }
            _ => false,
        }
    }

    /// Names one host (no `*.`): the configuration's word for that host,
    /// which may then resolve to any address, a private one included.
    pub fn is_exact(&self) -> bool {
        matches!(self.host, HostName::Exact(_))
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.host {
            HostName::Exact(host) => write!(f, "{host}")?,
            HostName::Under(domain) => write!(f, "*.{domain}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// Reads `INDEXQ_RESOLVE`'s text, `name=address,name2=address2` (curl's
/// `--resolve` in spirit, without the port): the address each name
/// resolves to instead of asking DNS. A testing and what-if aid; a name
/// resolved through it is still held to the address rule ([`non_public`]).
pub fn resolve_overrides(
    text: &str,
) -> Result<std::collections::HashMap<String, std::net::IpAddr>, ResolveOverrideError> {
    let mut overrides = std::collections::HashMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || ResolveOverrideError(part.to_string());
        let (name, address) = part.split_once('=').ok_or_else(bad)?;
        let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
        let address = address.trim();
        let address = address.strip_prefix('[').and_then(|a| a.strip_suffix(']')).unwrap_or(address);
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == ':' || c == '/') {
            return Err(bad());
        }
        overrides.insert(name, address.parse().map_err(|_| bad())?);
    }
    Ok(overrides)
}

/// An entry of `INDEXQ_RESOLVE` that is not `name=address`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("INDEXQ_RESOLVE: `{0}` is not `name=address` (e.g. `sitemaps.test=127.0.0.1`)")]
pub struct ResolveOverrideError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        #[rustfmt::skip]
        let table = [
            ("http://localhost/", true),
            ("http://LOCALHOST:8080/x", true),
            ("http://sub.localhost./", true),
            ("http://127.0.0.1:1/", true),
            ("http://127.1.2.3/", true),
            ("http://[::1]:8080/", true),
            ("http://localhost.example/", false),
            ("http://notlocalhost/", false),
            ("http://10.0.0.1/", false),
            ("http://[::2]/", false),
            ("https://example.com/", false),
            ("file:///tmp/x", false),
        ];
        for (url, loopback) in table {
            assert_eq!(is_loopback(&url::Url::parse(url).unwrap()), loopback, "{url}");
        }
    }

    fn urls(list: &[&str]) -> Vec<url::Url> {
        list.iter().map(|u| url::Url::parse(u).unwrap()).collect()
    }

    #[test]
    fn downgrades_are_refused_except_to_loopback() {
        #[rustfmt::skip]
        let table: &[(&[&str], &str, bool)] = &[
            (&["https://a.example/s.xml"], "http://a.example/s.xml", true),
            (&["https://a.example/s.xml"], "http://b.example/s.xml", true),
            (&["https://a.example/s.xml"], "HTTP://B.EXAMPLE/s.xml", true),
            // Once on https, any later step to plain http is a downgrade.
            (&["http://a.example/", "https://a.example/"], "http://a.example/x", true),
            (&["https://a.example/", "http://127.0.0.1/"], "http://b.example/", true),
            (&["https://a.example/s.xml"], "https://b.example/s.xml", false),
            (&["http://a.example/s.xml"], "https://a.example/s.xml", false),
            (&["http://a.example/s.xml"], "http://b.example/s.xml", false),
            // Loopback: this machine, nothing on the way.
            (&["https://a.example/s.xml"], "http://127.0.0.1:8080/s.xml", false),
            (&["https://a.example/s.xml"], "http://127.1.2.3/s.xml", false),
            (&["https://a.example/s.xml"], "http://[::1]:8080/s.xml", false),
            (&["https://a.example/s.xml"], "http://localhost/s.xml", false),
            (&["https://a.example/s.xml"], "http://sub.localhost./s.xml", false),
            (&["https://a.example/s.xml"], "http://localhost.example/s.xml", true),
            (&["https://a.example/s.xml"], "http://10.0.0.1/s.xml", true),
            (&["https://a.example/s.xml"], "ftp://a.example/s.xml", false),
        ];
        for (previous, next, refused) in table {
            let previous = urls(previous);
            let next = url::Url::parse(next).unwrap();
            let got = downgrade(&previous, &next);
            assert_eq!(got.is_some(), *refused, "{previous:?} → {next}");
            if let Some(d) = got {
                assert_eq!((&d.from, &d.to), (previous.last().unwrap(), &next));
                assert!(d.to_string().contains("was refused"), "{d}");
            }
        }
    }

    #[test]
    fn non_public_ranges_v4_v6_and_mapped() {
        use std::net::IpAddr;
        #[rustfmt::skip]
        let table: &[(&str, Option<Range>)] = &[
            ("127.0.0.1", Some(Range::Loopback)),
            ("127.255.255.254", Some(Range::Loopback)),
            ("::1", Some(Range::Loopback)),
            ("0.0.0.0", Some(Range::Unspecified)),
            ("0.255.255.255", Some(Range::Unspecified)),
            ("::", Some(Range::Unspecified)),
            ("169.254.169.254", Some(Range::LinkLocal)),
            ("169.254.0.0", Some(Range::LinkLocal)),
            ("169.255.0.1", None),
            ("fe80::1", Some(Range::LinkLocal)),
            ("febf:ffff::1", Some(Range::LinkLocal)),
            ("fec0::1", Some(Range::Private)),
            ("fc00::1", Some(Range::UniqueLocal)),
            ("fd12:3456::1", Some(Range::UniqueLocal)),
            ("fe00::1", None),
            ("10.0.0.1", Some(Range::Private)),
            ("10.255.255.255", Some(Range::Private)),
            ("11.0.0.1", None),
            ("172.16.0.1", Some(Range::Private)),
            ("172.31.255.255", Some(Range::Private)),
            ("172.15.255.255", None),
            ("172.32.0.0", None),
            ("192.168.1.1", Some(Range::Private)),
            ("192.169.0.1", None),
            ("100.64.0.1", Some(Range::Shared)),
            ("100.127.255.255", Some(Range::Shared)),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("93.184.216.34", None),
            ("8.8.8.8", None),
            ("2606:4700::1111", None),
            // IPv4-mapped: where they lead is the IPv4 address.
            ("::ffff:127.0.0.1", Some(Range::Loopback)),
            ("::ffff:0.0.0.0", Some(Range::Unspecified)),
            ("::ffff:169.254.169.254", Some(Range::LinkLocal)),
            ("::ffff:10.0.0.1", Some(Range::Private)),
            ("::ffff:172.16.0.1", Some(Range::Private)),
            ("::ffff:192.168.0.1", Some(Range::Private)),
            ("::ffff:100.64.0.1", Some(Range::Shared)),
            ("::ffff:a9fe:a9fe", Some(Range::LinkLocal)),
            ("::ffff:8.8.8.8", None),
            // IPv4-compatible (deprecated) and NAT64's well-known prefix.
            ("::127.0.0.1", Some(Range::Loopback)),
            ("::169.254.169.254", Some(Range::LinkLocal)),
            ("::10.0.0.1", Some(Range::Private)),
            ("64:ff9b::10.0.0.1", Some(Range::Private)),
            ("64:ff9b::169.254.169.254", Some(Range::LinkLocal)),
            ("64:ff9b::8.8.8.8", None),
        ];
        for (text, range) in table {
            let ip: IpAddr = text.parse().unwrap();
            assert_eq!(non_public(ip), *range, "{text}");
        }
    }

    #[test]
    fn host_patterns_match_hosts_and_ports() {
        let url = |u: &str| url::Url::parse(u).unwrap();
        #[rustfmt::skip]
        let table: &[(&str, &str, bool)] = &[
            ("cdn.example.com", "https://cdn.example.com/s.xml", true),
            ("cdn.example.com", "http://cdn.example.com/s.xml", true),
            ("CDN.Example.com.", "https://cdn.example.com./s.xml", true),
            ("cdn.example.com", "https://cdn.example.com:8443/s.xml", false),
            ("cdn.example.com", "https://a.cdn.example.com/s.xml", false),
            ("cdn.example.com:8443", "https://cdn.example.com:8443/s.xml", true),
            ("cdn.example.com:8443", "https://cdn.example.com/s.xml", false),
            ("cdn.example.com:80", "http://cdn.example.com/s.xml", true),
            ("cdn.example.com:80", "https://cdn.example.com/s.xml", false),
            ("*.example.com", "https://a.example.com/s.xml", true),
            ("*.example.com", "https://a.b.example.com/s.xml", true),
            ("*.example.com", "https://example.com/s.xml", false),
            ("*.example.com", "https://badexample.com/s.xml", false),
            ("*.example.com", "https://a.example.com:8080/s.xml", false),
            ("127.0.0.1:9000", "http://127.0.0.1:9000/s.xml", true),
            ("127.0.0.1:9000", "http://127.0.0.1:9001/s.xml", false),
            ("127.0.0.1:9000", "http://localhost:9000/s.xml", false),
            ("[::1]:9000", "http://[::1]:9000/s.xml", true),
            ("[::1]:9000", "http://[0:0:0:0:0:0:0:1]:9000/s.xml", true),
            ("10.0.0.5", "https://10.0.0.5/s.xml", true),
        ];
        for (pattern, u, expected) in table {
            let p = HostPattern::parse(pattern).unwrap();
            assert_eq!(p.matches(&url(u)), *expected, "{pattern} ~ {u}");
        }
        assert!(HostPattern::parse("a.example").unwrap().is_exact());
        assert!(!HostPattern::parse("*.example.com").unwrap().is_exact());
        assert_eq!(HostPattern::parse(" *.Example.COM:8443 ").unwrap().to_string(), "*.example.com:8443");
        let own = HostPattern::of_url(&url("http://127.0.0.1:8000/sitemap.xml")).unwrap();
        assert!(own.matches(&url("http://127.0.0.1:8000/child.xml")) && !own.matches(&url("http://127.0.0.1:8001/")));
    }

    #[test]
    fn host_patterns_refuse_what_is_not_a_host() {
        use HostPatternError::*;
        #[rustfmt::skip]
        let table: &[(&str, HostPatternError)] = &[
            ("", Empty(String::new())),
            ("https://cdn.example.com", Url("https://cdn.example.com".into())),
            ("cdn.example.com/sitemaps", Url("cdn.example.com/sitemaps".into())),
            ("user@cdn.example.com", Url("user@cdn.example.com".into())),
            ("cdn example.com", NotAHost("cdn example.com".into())),
            ("cdn.*.com", NotAHost("cdn.*.com".into())),
            ("*.*.example.com", NotAHost("*.*.example.com".into())),
            ("*.com", WideWildcard("*.com".into())),
            ("*.10.0.0.1", NotAHost("*.10.0.0.1".into())),
            ("cdn.example.com:99999", NotAHost("cdn.example.com:99999".into())),
            ("::1", NotAHost("::1".into())),
        ];
        for (text, error) in table {
            assert_eq!(HostPattern::parse(text).as_ref(), Err(error), "{text}");
        }
    }

    #[test]
    fn resolve_overrides_are_name_equals_address() {
        let got = resolve_overrides(" meta.test=169.254.169.254, Intranet.Test.=10.0.0.1 ,v6.test=[fd00::1],").unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got["meta.test"], std::net::IpAddr::from([169, 254, 169, 254]));
        assert_eq!(got["intranet.test"], std::net::IpAddr::from([10, 0, 0, 1]));
        assert_eq!(got["v6.test"], "fd00::1".parse::<std::net::IpAddr>().unwrap());
        assert!(resolve_overrides("").unwrap().is_empty());
        for bad in ["meta.test", "meta.test=nowhere", "=10.0.0.1", "meta.test:80=10.0.0.1"] {
            assert_eq!(resolve_overrides(bad), Err(ResolveOverrideError(bad.to_string())), "{bad}");
        }
    }
}
