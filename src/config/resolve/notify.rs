//! `[notify]`: a command, or a chat webhook, that what needs a human is
//! sent to.

use super::values::written_zero;
use super::Resolver;
use crate::config::raw::RawNotify;
use crate::config::{defaults, ConfigError, NotifySettings, Secret, Webhook};

impl Resolver<'_> {
    /// `[notify]`: the command is split into words as a POSIX shell would
    /// split them (quotes and backslashes), and run without a shell; the
    /// webhook is written (`webhook`) or kept as a secret (`webhook_env`,
    /// `webhook_file`), in one place only. An error never shows the
    /// webhook, which is a secret.
    pub(super) fn notify(&self, raw: &RawNotify) -> Result<NotifySettings, ConfigError> {
        let command = match &raw.command {
            None => None,
            Some(v) => match shlex::split(v.get_ref()) {
                Some(words) if !words.is_empty() => Some(words),
                Some(_) => return Err(self.err(v, "notify.command", "the command is empty")),
                None => {
                    return Err(self
                        .err(v, "notify.command", "the command has an unclosed quote or a trailing backslash")
                        .hint("the command is split into words as a shell would; write `sh -c '…'` for a pipe"))
                }
            },
        };
        let kept = self.secret(raw.webhook_env.as_ref(), raw.webhook_file.as_ref(), "notify.webhook", "the webhook")?;
        let webhook = match (&raw.webhook, kept) {
            (Some(v), Some(_)) => {
                return Err(self.err(
                    v,
                    "notify.webhook",
                    "both webhook and webhook_env (or webhook_file) are set; the webhook must come from one place",
                ))
            }
            (Some(v), None) => {
                let place = self.err(v, "notify.webhook", String::new()).place;
                let webhook = Webhook::Written { url: Secret::written(v.get_ref()), place };
                // Checked now, as any URL of the file is; the error does not
                // show the URL.
                webhook.url()?;
                Some(webhook)
            }
            (None, kept) => kept.map(Webhook::Kept),
        };
        if let (Some(c), true) = (&raw.command, webhook.is_some()) {
            return Err(self
                .err(c, "notify.command", "both a command and a webhook are set; notifications go to one of them")
                .hint("a command can post to the webhook itself"));
        }
        if let Some(v) = written_zero(raw.timeout.as_ref()) {
            return Err(self.err(v, "notify.timeout", "a timeout of 0 would fail every notification"));
        }
        Ok(NotifySettings {
            command,
            webhook,
            timeout: self.duration(raw.timeout.as_ref(), "notify.timeout", defaults::NOTIFY_TIMEOUT)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{error_of, parse_str};

    #[test]
    fn a_command_is_split_as_a_shell_splits_words() {
        let s = parse_str("[notify]\ncommand = \"/usr/bin/notify-me --to 'ops room' a\\\\ b\"\ntimeout = \"2s\"\n")
            .unwrap();
        assert_eq!(s.notify.command.unwrap(), ["/usr/bin/notify-me", "--to", "ops room", "a b"]);
        assert_eq!(s.notify.timeout, std::time::Duration::from_secs(2));
        let e = error_of("[notify]\ncommand = \"notify 'open\"\n");
        assert_eq!(e.place, "indexq.toml:2:11: `notify.command`");
        assert!(e.message.contains("unclosed quote"), "{}", e.message);
    }

    #[test]
    fn a_webhook_is_https_and_never_shown_in_an_error() {
        let s = parse_str("[notify]\nwebhook = \"https://hooks.example/services/T0/B0/sEcReT\"\n").unwrap();
        let (url, _) = s.notify.webhook.as_ref().unwrap().url().unwrap();
        assert_eq!(url.as_str(), "https://hooks.example/services/T0/B0/sEcReT");
        assert!(!format!("{:?}", s.notify).contains("sEcReT"), "its Debug masks it");
        for (text, says) in [
            ("webhook = \"http://hooks.example/sEcReT\"", "https://"),
            ("webhook = \"hooks.example/sEcReT\"", "not a URL"),
            ("webhook = \"https://h.example/sEcReT\"\nwebhook_env = \"HOOK\"", "one place"),
            ("webhook = \"https://h.example/sEcReT\"\ncommand = \"x\"", "one of them"),
        ] {
            let e = error_of(&format!("[notify]\n{text}\n"));
            let shown = format!("{} {} {:?}", e.place, e.message, e.hint);
            assert!(e.message.contains(says), "{text}: {shown}");
            assert!(!shown.contains("sEcReT"), "{text}: {shown}");
        }
        let e = error_of("[notify]\nwebhook = \"http://hooks.example/sEcReT\"\n");
        assert_eq!(e.place, "indexq.toml:2:11: `notify.webhook`");
        let e = error_of("[notify]\ncommand = \"x\"\ntimeout = \"0s\"\n");
        assert_eq!(e.place, "indexq.toml:3:11: `notify.timeout`");
    }
}
