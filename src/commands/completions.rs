//! `indexq completions SHELL` and `indexq man`: shell completions
//! (clap_complete) and the man page (clap_mangen), both generated from the
//! `cli` definitions and printed on stdout. They need no configuration, no
//! clock and no ledger, so `main` dispatches them before loading any.

use super::ExitStatus;
use crate::cli::Cli;
use clap::CommandFactory;
use clap_complete::Shell;
use std::io::Write;

/// The name completions and the man page are generated for.
const BIN: &str = "indexq";

/// Prints the completion script for `shell`.
pub fn completions(shell: Shell) -> anyhow::Result<ExitStatus> {
    let mut cmd = Cli::command();
    // Rendered into memory first: clap_complete panics on a failed write, and a
    // closed stdout (a pipe into `head`) must stay an ordinary error.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, BIN, &mut script);
    std::io::stdout().lock().write_all(&script)?;
    Ok(ExitStatus::Ok)
}

/// Prints one roff document: the page of `indexq`, then the page of every
/// subcommand (`indexq-submit`, `indexq-queue-list`, ...), depth first — what
/// `man ./indexq.1` shows one after the other.
pub fn man() -> anyhow::Result<ExitStatus> {
    let mut page = Vec::new();
    render_man(&mut page)?;
    std::io::stdout().lock().write_all(&page)?;
    Ok(ExitStatus::Ok)
}

fn render_man(out: &mut Vec<u8>) -> std::io::Result<()> {
    let mut root = Cli::command().disable_help_subcommand(true);
    // Building gives every subcommand its display name (`indexq-queue-list`)
    // and its bin name (`indexq queue list`) for the title and synopsis.
    root.build();
    render_tree(&root, out)
}

fn render_tree(cmd: &clap::Command, out: &mut Vec<u8>) -> std::io::Result<()> {
    let source = format!("{BIN} {}", env!("CARGO_PKG_VERSION"));
    clap_mangen::Man::new(cmd.clone())
        // No date (the page stays reproducible), but the argument must be there:
        // an empty one is dropped from `.TH`, and source and manual would shift left.
        .date(r"\&")
        .source(source)
        .manual("User Commands")
        .render(out)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        render_tree(sub, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_man_page_has_a_title_for_every_command() {
        let mut page = Vec::new();
        render_man(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.starts_with(".ie"), "{}", &page[..200.min(page.len())]);
        for title in [".TH indexq ", ".TH indexq-submit ", ".TH indexq-queue-list ", ".TH indexq-key-generate "] {
            assert!(page.contains(title), "no `{title}` in the page");
        }
        assert!(!page.contains(".TH indexq-help"), "the help subcommand has no page");
    }
}
