//! A configuration problem's place in the file (`ConfigError` itself is
//! defined with the other errors a run ends with, in `crate::error`).

pub use crate::error::ConfigError;
use std::path::Path;

impl ConfigError {
    pub(super) fn at(file: &Path, source: &str, span: std::ops::Range<usize>, key: &str, message: String) -> Self {
        let (line, column) = line_col(source, span.start);
        ConfigError { place: format!("{}:{line}:{column}: `{key}`", file.display()), message, hint: None }
    }

    pub(super) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

pub(super) fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, column)
}
