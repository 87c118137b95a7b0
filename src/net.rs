//! Network facts shared by the configuration and the HTTP clients.

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
}
