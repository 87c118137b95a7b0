//! Secrets: where each one lives ([`SecretSource`]), read only when a
//! command needs it, and the rules the IndexNow and Bing keys follow. A
//! secret's value never reaches a message or a `Debug`.

use std::fmt;
use std::path::PathBuf;

use super::{ConfigError, PropertyIndexNow};

/// Where a secret lives. Never the secret itself; `read` fetches it.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretSource {
    Env { var: String, place: String },
    File { path: PathBuf, place: String },
}

impl fmt::Debug for SecretSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretSource::Env { var, .. } => write!(f, "env ${var}"),
            SecretSource::File { path, .. } => write!(f, "file {}", path.display()),
        }
    }
}

/// A secret value. Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// A secret value read by the config itself (a webhook URL written in
    /// the file).
    pub(super) fn written(value: &str) -> Secret {
        Secret(value.trim().to_string())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret({})", crate::redact::MASK)
    }
}

impl SecretSource {
    /// Reads the secret, trimmed of surrounding whitespace. Errors name the
    /// config key and line, never the value.
    pub fn read(&self) -> Result<Secret, ConfigError> {
        match self {
            SecretSource::Env { var, place } => match std::env::var(var) {
                Ok(value) if !value.trim().is_empty() => Ok(Secret(value.trim().to_string())),
                Ok(_) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("the environment variable ${var} is empty"),
                    hint: Some(format!("export {var}=... in the environment that runs indexq")),
                }),
                Err(_) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("the environment variable ${var} is not set"),
                    hint: Some(format!(
                        "export {var}=... in the environment that runs indexq (cron and CI have their own environment)"
                    )),
                }),
            },
            SecretSource::File { path, place } => match std::fs::read_to_string(path) {
                Ok(value) if !value.trim().is_empty() => Ok(Secret(value.trim().to_string())),
                Ok(_) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("the file {} is empty", path.display()),
                    hint: None,
                }),
                Err(err) => Err(ConfigError {
                    place: place.clone(),
                    message: format!("cannot read {}: {err}", path.display()),
                    hint: None,
                }),
            },
        }
    }

    pub fn place(&self) -> &str {
        match self {
            SecretSource::Env { place, .. } | SecretSource::File { place, .. } => place,
        }
    }
}

/// The characters a Bing Webmaster API key may have. Bing documents no
/// alphabet (its keys are 32 letters and digits in practice); indexq
/// accepts what travels in the `apikey` query parameter as it is — the
/// unreserved characters of RFC 3986 — so the key has one form on the wire
/// and in every redaction.
pub fn check_bing_key(key: &str) -> Result<(), String> {
    let Some((at, bad)) = key.chars().enumerate().find(|(_, c)| !(c.is_ascii_alphanumeric() || "-._~".contains(*c)))
    else {
        return Ok(());
    };
    // The character itself is not shown: it is part of a secret.
    let kind = match bad {
        c if c.is_whitespace() => "white space",
        c if c.is_control() => "a control character",
        c if !c.is_ascii() => "a non-ASCII character",
        _ => "a character a URL must encode",
    };
    Err(format!(
        "the Bing Webmaster API key has {kind} (character {} of {}); only A-Z, a-z, 0-9 and - . _ ~ are accepted, \
         the characters that travel in a URL as they are",
        at + 1,
        key.chars().count()
    ))
}

/// Reads the Bing Webmaster API key and checks its characters.
pub fn read_bing_key(source: &SecretSource) -> Result<Secret, ConfigError> {
    let key = source.read()?;
    check_bing_key(key.expose()).map_err(|why| ConfigError {
        place: source.place().to_string(),
        message: why,
        hint: Some(
            "copy the key again from Bing Webmaster Tools (Settings → API access → API key): keys are letters and \
             digits; check that the variable or file holds nothing else (quotes, spaces, a second line)"
                .into(),
        ),
    })?;
    Ok(key)
}

/// Reads a property's IndexNow key and checks it against the key rules.
pub fn read_indexnow_key(table: &PropertyIndexNow) -> Result<Secret, ConfigError> {
    let key = table.key.read()?;
    crate::classify::check_indexnow_key(key.expose()).map_err(|why| ConfigError {
        place: table.key.place().to_string(),
        message: why,
        hint: Some("generate a valid key with `indexq key generate`, or 32 random hex characters".into()),
    })?;
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    #[test]
    fn key_file_errors_name_the_key_and_never_the_value() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("key.txt"), "not a valid key!\n").unwrap();
        let path = dir.path().join("indexq.toml");
        let text = "[[property]]\nname = \"a\"\nsite = \"https://a.example/\"\nindexnow = { key_file = \"key.txt\" }\n";
        let s = parse(&path, text).unwrap();
        let e = read_indexnow_key(s.properties[0].indexnow.as_ref().unwrap()).unwrap_err();
        assert!(e.place.ends_with(":4:25: `property[0].indexnow.key_file`"), "{}", e.place);
        assert!(!e.to_string().contains("not a valid key"));
    }

    #[test]
    fn bing_keys_are_what_a_url_carries_as_is() {
        for good in ["0123456789abcdefABCDEF0123456789", "sampleapikeyEDECC1EA4AE341CC8B6", "a-b.c_d~e"] {
            assert!(check_bing_key(good).is_ok(), "{good}");
        }
        for (bad, kind) in [
            ("abc+def/ghi=", "a character a URL must encode (character 4 of 12)"),
            ("abc def", "white space"),
            ("abc%41def", "a character a URL must encode"),
            ("abc\u{7f}", "a control character"),
            ("clé", "a non-ASCII character"),
        ] {
            let why = check_bing_key(bad).unwrap_err();
            assert!(why.contains(kind), "{bad:?}: {why}");
            assert!(!why.contains(bad), "the key is never quoted: {why}");
        }
    }

    #[test]
    fn secrets_do_not_show_in_debug() {
        assert_eq!(format!("{:?}", Secret("hunter2hunter2".into())), "Secret([REDACTED])");
    }
}
