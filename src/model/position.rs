//! Where an input URL was read: its source (a file, `<stdin>`, a sitemap's
//! URL or path) and, where known, its line and column — from ingest, which
//! finds it, to the report and the `--json` document, which show it as
//! `source:line:column`.

use std::fmt;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Position {
    /// Shared by the positions of one source (a list's lines are many).
    pub source: Arc<str>,
    pub line: Option<u64>,
    pub column: Option<u64>,
}

impl Position {
    /// A whole source (a sitemap that could not be read, say).
    pub fn of(source: impl Into<Arc<str>>) -> Position {
        Position { source: source.into(), line: None, column: None }
    }

    /// A line of a source (a URL list's).
    pub fn line(source: impl Into<Arc<str>>, line: u64) -> Position {
        Position { line: Some(line), ..Position::of(source) }
    }

    /// A line and column of a source (a sitemap's `<loc>`).
    pub fn at(source: impl Into<Arc<str>>, line: u64, column: u64) -> Position {
        Position { line: Some(line), column: Some(column), ..Position::of(source) }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// As shown: `source:line:column`.
impl serde::Serialize for Position {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_shows_as_source_line_column() {
        assert_eq!(Position::of("https://e.com:8080/s.xml").to_string(), "https://e.com:8080/s.xml");
        assert_eq!(Position::line("urls.txt", 3).to_string(), "urls.txt:3");
        assert_eq!(Position::at("https://e.com:8080/s.xml", 3, 14).to_string(), "https://e.com:8080/s.xml:3:14");
        assert_eq!(serde_json::to_string(&Position::line("<stdin>", 1)).unwrap(), r#""<stdin>:1""#);
    }
}
