//! `--env-file FILE`: the variables of a systemd `EnvironmentFile=`, set in
//! indexq's own environment before anything else reads it. With it an
//! operator runs a command as the service would (`sudo -u indexq indexq
//! --env-file /etc/indexq/env --config /etc/indexq/config.toml doctor`)
//! without the secrets passing through a command line, where every local
//! user could read them in the process list.
//!
//! The syntax read is the part of systemd's that the units' comments
//! document: one `VAR=value` a line, blank lines and lines starting with `#`
//! or `;` ignored, blanks around the name and the value dropped, and a value
//! wholly in single or double quotes taken without them (in double quotes, a
//! backslash keeps the next character). Anything else (a line without `=`,
//! a name that is not one, a line continued with a backslash) is refused
//! with the file and line: a variable misread is a secret missing later,
//! said far from its cause. A value is never shown.

use crate::error::ConfigError;
use std::path::Path;

/// The variables of `text` (the file `path`), in order.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut vars = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let place = || format!("{}:{}", path.display(), n + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let refuse = |message: &str| ConfigError {
            place: place(),
            message: message.into(),
            hint: Some(
                "write one VAR=value a line, as systemd's EnvironmentFile= reads them (a value with blanks in quotes)"
                    .into(),
            ),
        };
        let Some((name, value)) = line.split_once('=') else {
            return Err(refuse("not a VAR=value line"));
        };
        let name = name.trim();
        let is_name = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !is_name {
            return Err(refuse("the part before `=` is not a variable name"));
        }
        let value = value.trim();
        if value.ends_with('\\') {
            return Err(refuse("a line continued with a backslash is not read here"));
        }
        vars.push((name.to_string(), unquoted(value).ok_or_else(|| refuse("a quote that is not closed"))?));
    }
    Ok(vars)
}

/// `value` without the quotes around it; `None` for a quote opened and
/// not closed.
fn unquoted(value: &str) -> Option<String> {
    let Some(quote) = value.chars().next().filter(|c| *c == '"' || *c == '\'') else {
        return Some(value.to_string());
    };
    let inner = value.strip_prefix(quote)?.strip_suffix(quote)?;
    if quote == '\'' {
        return Some(inner.to_string());
    }
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    Some(out)
}

/// Reads `path` and sets its variables in this process's environment,
/// each replacing a value inherited (as systemd's file replaces the unit's
/// `Environment=`). Called by `main` before any thread starts.
pub fn apply(path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        place: format!("--env-file {}", path.display()),
        message: format!("cannot read it: {e}"),
        hint: Some("run as a user that can read it (the service's own, when the file is 0640 root:indexq)".into()),
    })?;
    for (name, value) in parse(path, &text)? {
        std::env::set_var(name, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_systemd_reads_and_refuses_the_rest_by_line() {
        let path = Path::new("/etc/indexq/env");
        let text = "# the secrets\n\n; also a comment\nINDEXNOW_KEY=abc\n  BING_WEBMASTER_API_KEY = 'x y' \n\
                    A=\"q\\\"uote\"\nEMPTY=\n";
        let vars = parse(path, text).unwrap();
        let want = [("INDEXNOW_KEY", "abc"), ("BING_WEBMASTER_API_KEY", "x y"), ("A", "q\"uote"), ("EMPTY", "")];
        assert_eq!(vars, want.map(|(k, v)| (k.to_string(), v.to_string())));
        for (bad, why) in [
            ("export KEY=s3cret\n", "not a variable name"),
            ("KEY s3cret\n", "not a VAR=value"),
            ("KEY=\"s3cret\n", "not closed"),
            ("KEY=s3cret \\\n", "backslash"),
            ("=s3cret\n", "not a variable name"),
        ] {
            let err = parse(path, &format!("# x\n{bad}")).unwrap_err();
            assert_eq!(err.place, "/etc/indexq/env:2", "{bad}");
            assert!(err.message.contains(why), "{bad}: {}", err.message);
            assert!(!format!("{err} {:?}", err.hint).contains("s3cret"), "a value is never shown: {err}");
        }
    }
}
