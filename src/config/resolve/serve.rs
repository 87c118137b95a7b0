//! `[serve]` and its `[[serve.token]]`s: where `indexq serve` listens, what
//! it takes, how fast each token may write, and who may write what.

use super::values::written_zero;
use super::Resolver;
use crate::config::raw::{RawServe, RawServeToken, RawServeWebhooks, S};
use crate::config::{
    defaults, ConfigError, ConnectionLimits, Property, RateRule, ServeSettings, ServeToken, ServeWebhooks, TokenScope,
};
use std::time::Duration;

/// The smallest `[serve] max_body` accepted: a few URLs.
const MIN_BODY: u64 = 1024;

impl Resolver<'_> {
    /// `[serve]`, once the properties its tokens name are known.
    pub(super) fn serve(&self, raw: &RawServe, properties: &[Property]) -> Result<ServeSettings, ConfigError> {
        let listen = match &raw.listen {
            None => defaults::SERVE_LISTEN.parse().expect("the default address parses"),
            Some(v) => v.get_ref().trim().parse().map_err(|_| {
                self.err(v, "serve.listen", format!("`{}` is not an address and port", v.get_ref()))
                    .hint("write an IP address and a port, e.g. \"127.0.0.1:8470\" or \"[::1]:8470\"")
            })?,
        };
        let max_body = match &raw.max_body {
            None => defaults::SERVE_MAX_BODY,
            Some(v) if *v.get_ref() < MIN_BODY => {
                return Err(self.err(v, "serve.max_body", format!("must be at least {MIN_BODY} (bytes)")));
            }
            Some(v) => *v.get_ref(),
        };
        let sources_every = match written_zero(raw.sources_every.as_ref()) {
            Some(_) => None,
            None => {
                Some(self.duration(raw.sources_every.as_ref(), "serve.sources_every", defaults::SERVE_SOURCES_EVERY)?)
            }
        };
        let requests = RateRule {
            per: self.positive(
                raw.requests_per_second.as_ref(),
                "serve.requests_per_second",
                defaults::SERVE_REQUESTS_PER_SECOND,
            )?,
            period: Duration::from_secs(1),
            burst: self.positive(raw.request_burst.as_ref(), "serve.request_burst", defaults::SERVE_REQUEST_BURST)?,
        };
        let urls = RateRule {
            per: self.positive(
                raw.urls_per_minute.as_ref(),
                "serve.urls_per_minute",
                defaults::SERVE_URLS_PER_MINUTE,
            )?,
            period: Duration::from_secs(60),
            burst: self.positive(raw.url_burst.as_ref(), "serve.url_burst", defaults::SERVE_URL_BURST)?,
        };
        let max_connections =
            self.positive(raw.max_connections.as_ref(), "serve.max_connections", defaults::SERVE_MAX_CONNECTIONS)?;
        let idle_timeout =
            self.duration(raw.idle_timeout.as_ref(), "serve.idle_timeout", defaults::SERVE_IDLE_TIMEOUT)?;
        if let Some(v) = written_zero(raw.idle_timeout.as_ref()) {
            return Err(self.err(v, "serve.idle_timeout", "a timeout of 0 would close every connection at once"));
        }
        let connections = self.connection_limits(raw)?;
        let tokens = self.tokens(raw, properties)?;
        let metrics_public = raw.metrics_public.as_ref().map_or(defaults::SERVE_METRICS_PUBLIC, |v| *v.get_ref());
        let indexnow = raw.indexnow.as_ref().is_some_and(|v| *v.get_ref());
        let webhooks = self.webhooks(&raw.webhooks)?;
        Ok(ServeSettings {
            listen,
            max_body,
            sources_every,
            requests,
            urls,
            max_connections,
            idle_timeout,
            connections,
            metrics_public,
            tokens,
            indexnow,
            webhooks,
        })
    }

    /// `[[serve.token]]`, each id once.
    fn tokens(&self, raw: &RawServe, properties: &[Property]) -> Result<Vec<ServeToken>, ConfigError> {
        let mut tokens: Vec<ServeToken> = Vec::new();
        for (i, token) in raw.token.iter().enumerate() {
            let token = self.token(i, token, properties)?;
            if tokens.iter().any(|t| t.id == token.id) {
                let v = &raw.token[i].get_ref().id;
                return Err(self
                    .err(v, &format!("serve.token[{i}].id"), format!("a second token `{}`", token.id))
                    .hint("give each token an id of its own: request logs name a token by it"));
            }
            tokens.push(token);
        }
        Ok(tokens)
    }

    /// `[serve.webhooks]`: the platforms' signing secrets.
    fn webhooks(&self, w: &RawServeWebhooks) -> Result<ServeWebhooks, ConfigError> {
        let secret = |env: Option<&S<String>>, platform: &str| {
            self.secret(
                env,
                None,
                &format!("serve.webhooks.{platform}_secret"),
                &format!("{platform}'s signing secret"),
            )
        };
        Ok(ServeWebhooks {
            ghost: secret(w.ghost_secret_env.as_ref(), "ghost")?,
            vercel: secret(w.vercel_secret_env.as_ref(), "vercel")?,
            netlify: secret(w.netlify_secret_env.as_ref(), "netlify")?,
        })
    }

    /// `[serve]`'s limits on slow clients and on one address's connections.
    fn connection_limits(&self, raw: &RawServe) -> Result<ConnectionLimits, ConfigError> {
        if let Some(v) = written_zero(raw.header_timeout.as_ref()) {
            return Err(self.err(
                v,
                "serve.header_timeout",
                "a timeout of 0 would close every connection at its first byte",
            ));
        }
        let header_timeout =
            self.duration(raw.header_timeout.as_ref(), "serve.header_timeout", defaults::SERVE_HEADER_TIMEOUT)?;
        let min_body_rate =
            self.positive(raw.min_body_rate.as_ref(), "serve.min_body_rate", defaults::SERVE_MIN_BODY_RATE)?;
        let per_address = self.positive(
            raw.max_connections_per_address.as_ref(),
            "serve.max_connections_per_address",
            defaults::SERVE_MAX_CONNECTIONS_PER_ADDRESS,
        )?;
        // 0 is allowed: no room kept beyond `max_connections`.
        let reserved = raw.reserved_connections.as_ref().map_or(defaults::SERVE_RESERVED_CONNECTIONS, |v| *v.get_ref());
        Ok(ConnectionLimits { header_timeout, min_body_rate, per_address, reserved })
    }

    /// A count that must be 1 or more.
    fn positive(&self, value: Option<&S<u32>>, key: &str, default: u32) -> Result<u32, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) if *v.get_ref() == 0 => Err(self.err(v, key, "must be at least 1")),
            Some(v) => Ok(*v.get_ref()),
        }
    }

    /// `[[serve.token]]` number `i`: an id, where the token lives, and the
    /// properties it may write (each a configured property).
    fn token(&self, i: usize, raw: &S<RawServeToken>, properties: &[Property]) -> Result<ServeToken, ConfigError> {
        let key = format!("serve.token[{i}]");
        let t = raw.get_ref();
        let id = t.id.get_ref().trim();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || id.len() > 64 {
            return Err(self.err(&t.id, &format!("{key}.id"), format!("`{id}` is not a token id")).hint(
                "an id is 1 to 64 letters, digits, `-`, `_` or `.`: logs name the token by it (e.g. \"ghost\")",
            ));
        }
        let secret = self
            .secret(t.token_env.as_ref(), t.token_file.as_ref(), &format!("{key}.token"), "the token")?
            .ok_or_else(|| {
                self.err(raw, &key, format!("token `{id}` has neither token_env nor token_file"))
                    .hint("name the environment variable (token_env = \"INDEXQ_GHOST_TOKEN\") or the file (token_file = \"/etc/indexq/ghost.token\") that holds it; never the token itself")
            })?;
        let Some(names) = &t.properties else {
            return Err(self
                .err(raw, &key, format!("token `{id}` names no properties"))
                .hint("list the properties whose URLs it may write, e.g. properties = [\"blog\"]"));
        };
        if names.get_ref().is_empty() {
            return Err(self
                .err(names, &format!("{key}.properties"), format!("token `{id}` names no properties"))
                .hint("list the properties whose URLs it may write, e.g. properties = [\"blog\"]"));
        }
        let mut allowed = Vec::new();
        for name in names.get_ref() {
            if !properties.iter().any(|p| p.name == *name.get_ref()) {
                let known: Vec<&str> = properties.iter().map(|p| p.name.as_str()).collect();
                return Err(self
                    .err(name, &format!("{key}.properties"), format!("no [[property]] is named `{}`", name.get_ref()))
                    .hint(format!("the configured properties: {}", known.join(", "))));
            }
            allowed.push(name.get_ref().clone());
        }
        let scope = match &t.scope {
            None => defaults::SERVE_TOKEN_SCOPE,
            Some(v) => match v.get_ref().as_str() {
                "read" => TokenScope::Read,
                "write" => TokenScope::Write,
                other => {
                    return Err(self
                        .err(v, &format!("{key}.scope"), format!("`{other}` is not a token's scope"))
                        .hint("write \"read\" (its properties' queue, budgets and metrics) or \"write\" (those, and their URLs)"))
                }
            },
        };
        Ok(ServeToken { id: id.to_string(), secret, properties: allowed, scope })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{error_of, parse_str};

    const PROPERTY: &str = "[[property]]\nname = \"blog\"\nsite = \"https://blog.example/\"\n";

    #[test]
    fn serve_defaults_to_loopback_and_no_token() {
        let s = parse_str(PROPERTY).unwrap();
        assert_eq!(s.serve.listen.to_string(), "127.0.0.1:8470");
        assert_eq!(s.serve.max_body, 1024 * 1024);
        assert!(s.serve.tokens.is_empty());
        assert_eq!(s.serve.sources_every, Some(std::time::Duration::from_secs(3600)));
    }

    #[test]
    fn a_token_names_its_place_and_properties() {
        let text = format!(
            "{PROPERTY}[serve]\nlisten = \"0.0.0.0:9000\"\nsources_every = \"0\"\n[[serve.token]]\nid = \"ghost\"\n\
             token_env = \"GHOST_TOKEN\"\nproperties = [\"blog\"]\n"
        );
        let s = parse_str(&text).unwrap();
        assert_eq!(s.serve.listen.to_string(), "0.0.0.0:9000");
        assert_eq!(s.serve.sources_every, None);
        let t = &s.serve.tokens[0];
        assert_eq!((t.id.as_str(), t.properties.as_slice()), ("ghost", &["blog".to_string()][..]));
        assert_eq!(t.secret.place(), "indexq.toml:9:13: `serve.token[0].token_env`");
    }

    #[test]
    fn indexnow_and_webhook_secrets_are_read_by_their_place() {
        let s = parse_str(PROPERTY).unwrap();
        assert!(!s.serve.indexnow && s.serve.webhooks.ghost.is_none());
        let text = format!(
            "{PROPERTY}[serve]\nindexnow = true\n[serve.webhooks]\nghost_secret_env = \"GHOST_SECRET\"\n\
             netlify_secret_env = \"NETLIFY_SECRET\"\n"
        );
        let s = parse_str(&text).unwrap();
        assert!(s.serve.indexnow);
        let ghost = s.serve.webhooks.ghost.as_ref().expect("ghost's secret");
        assert_eq!(ghost.place(), "indexq.toml:7:20: `serve.webhooks.ghost_secret_env`");
        assert!(s.serve.webhooks.netlify.is_some() && s.serve.webhooks.vercel.is_none());
        let e = error_of(&format!("{PROPERTY}[serve.webhooks]\nvercel_secret_env = \"$V\"\n"));
        assert_eq!(e.place, "indexq.toml:5:21: `serve.webhooks.vercel_secret_env`");
        let e = error_of(&format!("{PROPERTY}[serve.webhooks]\nghost_secret = \"x\"\n"));
        assert!(e.message.contains("ghost_secret"), "an unknown key: {}", e.message);
    }

    #[test]
    fn bad_serve_values_name_the_key_and_line() {
        let e = error_of(&format!("{PROPERTY}[serve]\nlisten = \"localhost\"\n"));
        assert_eq!(e.place, "indexq.toml:5:10: `serve.listen`");
        let e = error_of(&format!("{PROPERTY}[serve]\nmax_body = 10\n"));
        assert_eq!(e.place, "indexq.toml:5:12: `serve.max_body`");
        let e = error_of(&format!("{PROPERTY}[serve]\nrequests_per_second = 0\n"));
        assert_eq!(e.place, "indexq.toml:5:23: `serve.requests_per_second`");
        let token = |body: &str| error_of(&format!("{PROPERTY}[[serve.token]]\n{body}"));
        let e = token("id = \"ghost\"\ntoken_env = \"T\"\nproperties = [\"shop\"]\n");
        assert_eq!(e.place, "indexq.toml:7:15: `serve.token[0].properties`");
        assert!(e.message.contains("no [[property]] is named `shop`"), "{}", e.message);
        let e = token("id = \"ghost\"\nproperties = [\"blog\"]\n");
        assert!(e.message.contains("neither token_env nor token_file"), "{}", e.message);
        let e = token("id = \"ghost\"\ntoken_env = \"T\"\ntoken_file = \"t\"\nproperties = [\"blog\"]\n");
        assert!(e.place.ends_with("`serve.token[0].token_env`"), "{}", e.place);
        let e = token("id = \"a b\"\ntoken_env = \"T\"\nproperties = [\"blog\"]\n");
        assert_eq!(e.place, "indexq.toml:5:6: `serve.token[0].id`");
        let e = token("id = \"a\"\ntoken_env = \"T\"\nproperties = [\"blog\"]\nscope = \"admin\"\n");
        assert_eq!(e.place, "indexq.toml:8:9: `serve.token[0].scope`");
        assert!(e.message.contains("`admin` is not a token's scope"), "{}", e.message);
        let e = token("id = \"a\"\ntoken_env = \"T\"\nproperties = []\n");
        assert!(e.place.ends_with("`serve.token[0].properties`"), "{}", e.place);
        let e = error_of(&format!(
            "{PROPERTY}[[serve.token]]\nid = \"a\"\ntoken_env = \"T\"\nproperties = [\"blog\"]\n\
             [[serve.token]]\nid = \"a\"\ntoken_env = \"U\"\nproperties = [\"blog\"]\n"
        ));
        assert_eq!(e.place, "indexq.toml:9:6: `serve.token[1].id`");
    }
}
