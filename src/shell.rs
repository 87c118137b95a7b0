//! Command lines for a person to paste into a shell: the words quoted so
//! that the shell reads them as written, and a secret read from where the
//! configuration keeps it rather than shown (`key`, `init` and `doctor`
//! print them). Not in `output/`, which knows nothing of the
//! configuration: a secret's source is the configuration's type.

use crate::config::SecretSource;

/// The shell line that fetches the key file at `location` as an engine
/// does, for a person to paste where indexq runs. The key never appears in
/// it: each place the location holds the key reads it from where the
/// configuration does — `${VAR}` for `key_env`, `$(cat FILE)` for
/// `key_file` — so `doctor` and `init` can show it while the key stays
/// masked in every other output (`key generate`, whose purpose is to hand
/// the key over, shows the real URL instead).
pub(crate) fn curl_key_file(location: &url::Url, key: &str, source: &SecretSource) -> String {
    let read = match source {
        SecretSource::Env { var, .. } if is_shell_name(var) => format!("${{{var}}}"),
        SecretSource::Env { var, .. } => format!("$(printenv {})", single_quoted(var)),
        SecretSource::File { path, .. } => format!("$(cat {})", single_quoted(&path.display().to_string())),
    };
    let mut line = String::from("curl -fsS \"");
    for (n, part) in location.as_str().split(key).enumerate() {
        if n > 0 {
            line.push_str(&read);
        }
        for c in part.chars() {
            match c {
                '\\' | '$' | '`' | '"' => {
                    line.push('\\');
                    line.push(c);
                }
                // Out of the double quotes: an interactive shell expands `!` in them.
                '!' => line.push_str("\"'!'\""),
                _ => line.push(c),
            }
        }
    }
    line.push('"');
    line
}

/// Whether `name` can be written `${name}` in a shell.
fn is_shell_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` as one single-quoted shell word.
pub(crate) fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curl_line_reads_the_key_from_where_the_configuration_does() {
        let key = "0123456789abcdef";
        let env = |var: &str| SecretSource::Env { var: var.into(), place: String::new() };
        let at = |text: &str| url::Url::parse(text).unwrap();
        let default = at("https://example.org/0123456789abcdef.txt");
        assert_eq!(
            curl_key_file(&default, key, &env("INDEXNOW_KEY")),
            r#"curl -fsS "https://example.org/${INDEXNOW_KEY}.txt""#
        );
        assert_eq!(
            curl_key_file(&default, key, &env("odd-name")),
            r#"curl -fsS "https://example.org/$(printenv 'odd-name').txt""#
        );
        let file = SecretSource::File { path: "/etc/indexq/it's key.txt".into(), place: String::new() };
        assert_eq!(
            curl_key_file(&default, key, &file),
            r#"curl -fsS "https://example.org/$(cat '/etc/indexq/it'\''s key.txt').txt""#
        );
        // A key location of its own: the key only where it is, the rest as it is, quoted.
        let own = at("https://example.org/keys/indexnow.txt?v=$1&k=0123456789abcdef!");
        let line = curl_key_file(&own, key, &env("K"));
        assert_eq!(line, r#"curl -fsS "https://example.org/keys/indexnow.txt?v=\$1&k=${K}"'!'"""#);
        assert!(!line.contains(key));
    }
}
