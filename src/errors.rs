//! Helpers for errors that cross module lines.

/// An error and its sources on one line, `outer: cause: root cause`; a
/// source whose text the line already holds is not repeated.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn sources_join_on_one_line_without_repeats() {
        let root = Layer("connection refused", None);
        let middle = Layer("tcp connect error: connection refused", Some(Box::new(root)));
        let top = Layer("error sending request", Some(Box::new(middle)));
        assert_eq!(error_chain(&top), "error sending request: tcp connect error: connection refused");
        assert_eq!(error_chain(&Layer("alone", None)), "alone");
    }
}
