//! A configuration problem and its place in the file.

use std::path::Path;

/// A configuration problem, located in the file. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ConfigError {
    pub place: String,
    pub message: String,
    pub hint: Option<String>,
}

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
