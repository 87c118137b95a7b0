//! The IndexNow key and the file that publishes it: the rules for a key
//! ([`check_indexnow_key`]), and the verdict on what the key location served
//! when indexq fetched it itself ([`key_file`], after a 403 and for `doctor`).
//!
//! Exactly the key, give or take surrounding whitespace, is `key_pending`; a
//! 404 or 410 is `key_file_missing`; another status is `key_file_status`; a
//! UTF-8 byte order mark before the key is `key_file_bom`; the key inside HTML
//! or other text is `key_file_html`; anything else (another key, an empty
//! file, the key in other letter case, UTF-16 text) is `key_file_wrong`; a
//! failed fetch is `key_file_unreachable`.

use super::{excerpt, http_status, Verdict};
use crate::model::{KeyPendingReason, MisconfiguredReason};
use crate::redact::mask;

/// How many characters an IndexNow key has.
pub const KEY_LENGTH: std::ops::RangeInclusive<usize> = 8..=128;

/// The schema of an IndexNow key, as a person reads it ([`KEY_LENGTH`]).
pub const KEY_SCHEMA: &str = "8–128 characters of a–z, A–Z, 0–9 and '-'";

/// The rules for IndexNow keys: [`KEY_LENGTH`] characters of a-z, A-Z, 0-9 and `-`.
pub fn check_indexnow_key(key: &str) -> Result<(), String> {
    let len = key.chars().count();
    if !KEY_LENGTH.contains(&len) {
        return Err(format!(
            "the IndexNow key has {len} characters; it must have {} to {}",
            KEY_LENGTH.start(),
            KEY_LENGTH.end()
        ));
    }
    if let Some(bad) = key.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '-')) {
        return Err(format!(
            "the IndexNow key contains {:?}; only a-z, A-Z, 0-9 and - are allowed",
            if bad.is_ascii_graphic() { bad.to_string() } else { format!("U+{:04X}", bad as u32) }
        ));
    }
    Ok(())
}

/// What the key location served when indexq fetched it itself after a 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyFileCheck {
    Fetched { status: u16, body: String },
    Failed { error: String },
}

/// The verdict on a key file check alone (used by indexnow on 403, and later by `doctor`).
pub fn key_file(key: &str, key_location: &str, check: &KeyFileCheck) -> Verdict {
    let location = mask(key_location, key);
    let set_location = "or set `key_location` in the property's `indexnow` table to where the \
                        key file is served";
    let verdict = match check {
        KeyFileCheck::Failed { error } => Verdict::misconfigured(
            MisconfiguredReason::KeyFileUnreachable,
            format!(
                "indexq could not fetch the key file at {location}: {}.",
                excerpt(&mask(error, key)).trim_end_matches('.')
            ),
            format!(
                "Make sure {location} is publicly reachable and answers 200 with exactly the key \
                 as plain text; `indexq doctor` checks it without spending quota."
            ),
        ),
        KeyFileCheck::Fetched { status: status @ (404 | 410), .. } => Verdict::misconfigured(
            MisconfiguredReason::KeyFileMissing,
            format!("The key file at {location} is missing ({}).", http_status(*status)),
            format!("Serve exactly the key as plain text at {location}, {set_location}."),
        ),
        KeyFileCheck::Fetched { status: 200, body } => key_file_content(key, &location, body),
        KeyFileCheck::Fetched { status: status @ 300..=399, .. } => Verdict::misconfigured(
            MisconfiguredReason::KeyFileStatus,
            format!(
                "The key file at {location} answered {}, a redirect, which indexq refused to follow: the key must \
                 be served at the key location itself (and a redirect may lead from https to plain http, where \
                 anyone on the way can change it).",
                http_status(*status)
            ),
            format!(
                "Serve the key file at {location} itself, answering 200 OK with exactly the key, or set \
                 `key_location` in the property's `indexnow` table to the https:// URL it redirects to, on the \
                 property's host."
            ),
        ),
        KeyFileCheck::Fetched { status, .. } => Verdict::misconfigured(
            MisconfiguredReason::KeyFileStatus,
            format!("The key file at {location} answered {} instead of 200 OK.", http_status(*status)),
            format!("Make {location} answer 200 with exactly the key as plain text, {set_location}."),
        ),
    };
    verdict.redacted(key)
}

/// What a key file that answered 200 holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyContent {
    /// Exactly the key, give or take surrounding whitespace.
    Exact,
    /// A UTF-8 byte order mark, then the key.
    Bom,
    /// The key inside an HTML page.
    Html,
    /// The key with other text around it.
    InText,
    /// Nothing but whitespace.
    Empty,
    /// The key in other letter case (keys are case-sensitive).
    OtherCase,
    /// The key saved as UTF-16 (a NUL byte between the letters).
    Utf16,
    /// Something else.
    Other,
}

fn key_content(key: &str, body: &str) -> KeyContent {
    let trimmed = body.trim();
    if key.is_empty() {
        return KeyContent::Other;
    }
    if trimmed == key {
        return KeyContent::Exact;
    }
    if trimmed.strip_prefix('\u{FEFF}').is_some_and(|rest| rest.trim() == key) {
        return KeyContent::Bom;
    }
    if trimmed.contains(key) {
        let lower = trimmed.to_ascii_lowercase();
        let html = trimmed.starts_with('<') || ["<html", "<body", "<!doctype"].iter().any(|tag| lower.contains(tag));
        return if html { KeyContent::Html } else { KeyContent::InText };
    }
    if trimmed.is_empty() {
        return KeyContent::Empty;
    }
    if trimmed.to_ascii_lowercase().contains(&key.to_ascii_lowercase()) {
        return KeyContent::OtherCase;
    }
    if body.contains('\0') {
        let narrowed: String = body.chars().filter(|c| !matches!(c, '\0' | '\u{FEFF}' | '\u{FFFD}')).collect();
        if narrowed.trim() == key {
            return KeyContent::Utf16;
        }
    }
    KeyContent::Other
}

/// The verdict on a key file that answered 200. `location` is already redacted.
fn key_file_content(key: &str, location: &str, body: &str) -> Verdict {
    let served = excerpt(&mask(body, key));
    let only_the_key = format!(
        "Make the key file at {location} contain exactly the key that `key_env`/`key_file` in \
         the property's `indexnow` table provide, or point `key_env`/`key_file` at the key the \
         site serves."
    );
    let wrong = |what: String| {
        Verdict::misconfigured(
            MisconfiguredReason::KeyFileWrong,
            format!("The key file at {location} does not contain the configured key: {what}."),
            only_the_key.clone(),
        )
    };
    match key_content(key, body) {
        KeyContent::Exact => Verdict::new(
            KeyPendingReason::KeyPending,
            format!(
                "The key file at {location} serves exactly the configured key, so the key is \
                 published correctly and IndexNow has not fetched it yet; indexq retries \
                 automatically."
            ),
        ),
        KeyContent::Bom => Verdict::misconfigured(
            MisconfiguredReason::KeyFileBom,
            format!(
                "The key file at {location} starts with a byte order mark (U+FEFF) before the key, \
                 so it does not serve exactly the key."
            ),
            format!(
                "Save the key file at {location} as plain text without a byte order mark \
                 (UTF-8 without BOM, or ASCII), containing only the key."
            ),
        ),
        content @ (KeyContent::Html | KeyContent::InText) => {
            let around = if content == KeyContent::Html { "inside an HTML page" } else { "with other text around it" };
            Verdict::misconfigured(
                MisconfiguredReason::KeyFileHtml,
                format!(
                    "The key file at {location} contains the configured key {around}, \
                     not the key alone: {served}"
                ),
                format!(
                    "Serve the key file at {location} as a static plain-text file containing only \
                     the key, not through a page template or with other text."
                ),
            )
        }
        KeyContent::Empty => wrong("it is empty".to_string()),
        KeyContent::OtherCase => {
            wrong("it serves the key in other upper/lower case, and keys are case-sensitive".to_string())
        }
        KeyContent::Utf16 => {
            wrong("it is saved as UTF-16 text (a NUL byte between the letters); save it as UTF-8 or ASCII".to_string())
        }
        KeyContent::Other => wrong(format!("it serves {served}")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;
    use crate::model::Class;

    #[test]
    fn key_rules() {
        assert!(check_indexnow_key("abcd-1234").is_ok());
        assert!(check_indexnow_key(&"a".repeat(8)).is_ok());
        assert!(check_indexnow_key(&"a".repeat(128)).is_ok());
        assert!(check_indexnow_key(KEY).is_ok());
        assert!(check_indexnow_key("short").is_err());
        assert!(check_indexnow_key(&"a".repeat(129)).is_err());
        assert!(check_indexnow_key("has space1").is_err());
        assert!(check_indexnow_key("under_score").is_err());
        assert!(check_indexnow_key("bad_key!").is_err());
        assert!(check_indexnow_key("ünïcödé-key").is_err());
        let why = check_indexnow_key("abcdefg\u{7}").unwrap_err();
        assert!(why.contains("U+0007"), "{why}");
    }

    #[test]
    fn key_file_checks() {
        let utf16: String =
            std::iter::once("\u{FFFD}\u{FFFD}".to_string()).chain(KEY.chars().map(|c| format!("{c}\0"))).collect();
        let upper = KEY.to_ascii_uppercase();
        let failed =
            KeyFileCheck::Failed { error: format!("error sending request for url ({}): dns error", location()) };
        #[rustfmt::skip]
        let table: Vec<(KeyFileCheck, Class, &str)> = vec![
            (fetched(200, "KEY"), Class::KeyPending, "key_pending"),
            (fetched(200, "KEY\n"), Class::KeyPending, "key_pending"),
            (fetched(200, "KEY\r\n"), Class::KeyPending, "key_pending"),
            (fetched(200, "  KEY \t\n\n"), Class::KeyPending, "key_pending"),
            (fetched(200, "\u{FEFF}KEY"), Class::Misconfigured, "key_file_bom"),
            (fetched(200, "\u{FEFF}KEY\r\n"), Class::Misconfigured, "key_file_bom"),
            (fetched(200, "<html><body>KEY</body></html>"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "<!DOCTYPE html>\n<p>KEY</p>"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "indexnow key: KEY"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "KEY\nKEY"), Class::Misconfigured, "key_file_html"),
            (fetched(200, "some-other-key-0000"), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, ""), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, "\n"), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, &upper), Class::Misconfigured, "key_file_wrong"),
            (fetched(200, &utf16), Class::Misconfigured, "key_file_wrong"),
            (fetched(404, "<html><body>Not Found</body></html>"), Class::Misconfigured, "key_file_missing"),
            (fetched(410, ""), Class::Misconfigured, "key_file_missing"),
            (fetched(301, ""), Class::Misconfigured, "key_file_status"),
            (fetched(302, "KEY"), Class::Misconfigured, "key_file_status"),
            (fetched(403, ""), Class::Misconfigured, "key_file_status"),
            (fetched(500, "KEY"), Class::Misconfigured, "key_file_status"),
            (fetched(204, ""), Class::Misconfigured, "key_file_status"),
            (failed, Class::Misconfigured, "key_file_unreachable"),
        ];
        for (check, class, reason) in &table {
            let alone = key_file(KEY, &location(), check);
            assert_no_secret(&alone, KEY, &format!("{check:?}"));
            assert_eq!(
                (alone.class(), alone.reason.to_string().as_str()),
                (*class, *reason),
                "{check:?}: {}",
                alone.message
            );
            // On a 403 the key file decides, whatever the engine said; its
            // `errorCode` only words a key file that serves the key exactly.
            for body in [
                r#"{"errorCode":"SiteVerificationNotCompleted"}"#,
                r#"{"code":"UserForbiddedToAccessSite","message":"User is unauthorized to access the site. Please verify the site using the key and try again"}"#,
                r#"{"errorCode":"UserForbiddedToAccessSite","message":"User is unauthorized to access the site. Please verify the site using the key and try again","details":null}"#,
                "",
            ] {
                let v = indexnow_verdict(403, &[], body, Some(check));
                assert_eq!((v.class(), v.reason.to_string().as_str()), (*class, *reason), "{check:?} / {body}");
                assert_eq!(v.hint, alone.hint);
                let forbidden = body.contains("UserForbiddedToAccessSite") && *class == Class::KeyPending;
                assert_eq!(v.message.ends_with(&alone.message), !forbidden, "{}", v.message);
                assert_eq!(v.message.contains("says UserForbiddedToAccessSite"), forbidden, "{}", v.message);
                assert!(v.message.contains(&excerpt(body)), "{}", v.message);
            }
        }
    }

    #[test]
    fn key_file_messages_say_what_was_found() {
        let loc = location();
        let v = key_file(KEY, &loc, &fetched(301, ""));
        assert!(v.message.contains("HTTP 301") && v.message.contains("refused to follow"), "{}", v.message);
        assert!(v.hint.as_deref().is_some_and(|h| h.contains("https:// URL it redirects to")));
        let v = key_file(KEY, &loc, &fetched(500, ""));
        assert!(v.message.contains("instead of 200 OK") && !v.message.contains("redirect"), "{}", v.message);

        let v = key_file(KEY, &loc, &fetched(200, "some-other-key-0000"));
        assert!(v.message.contains("does not contain the configured key"), "{}", v.message);
        assert!(v.message.contains("some-other-key-0000"), "{}", v.message);
        assert!(v.message.contains("https://example.com/[REDACTED].txt"), "{}", v.message);

        let v = key_file(KEY, &loc, &fetched(200, "<html><body>KEY</body></html>"));
        assert!(v.message.contains("<html><body>[REDACTED]</body></html>"), "{}", v.message);

        let v = key_file(KEY, &loc, &fetched(200, "KEY\r\n"));
        assert!(v.message.contains("published correctly"), "{}", v.message);
        assert!(v.message.contains("retries"), "{}", v.message);
        assert_eq!(v.hint, None);

        let custom = "https://example.com/.well-known/indexnow.txt";
        let v = key_file(KEY, custom, &fetched(404, ""));
        assert!(v.message.contains(custom), "{}", v.message);
        assert!(v.hint.as_deref().is_some_and(|h| h.contains("key_location")));
    }
}
