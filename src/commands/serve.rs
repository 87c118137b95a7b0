//! `indexq serve`: the HTTP intake and the sending worker (`src/serve/`),
//! on the address `--listen` asks for, else `[serve] listen`.

use super::ExitStatus;
use crate::cli::ServeArgs;
use crate::clock::Clock;
use crate::config::Settings;
use crate::output::printer::Printer;

pub fn run(settings: Settings, clock: Clock, args: &ServeArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    crate::serve::run(settings, clock, args.listen, printer)
}
