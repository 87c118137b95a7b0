//! What a sitemap's uncompressed bytes hold, told by the bytes themselves
//! (a name or a Content-Type decides nothing): XML when the first character
//! that is not whitespace is `<`, else text. UTF-16 is recognised by its
//! byte-order mark, or without one by an XML declaration's `<?` written in
//! it, and decoded to UTF-8 as it is read (encoding_rs); UTF-8 is passed
//! through untouched, so the common case costs one look at its first bytes.

use encoding_rs::{Encoding, UTF_16BE, UTF_16LE};
use std::io::{self, Cursor, Read};

use super::body::read_head;

/// How many bytes of whitespace may come before a sitemap's first character:
/// past them the body is taken for text (whose lines are then judged).
const LEADING_SPACE: usize = 64 * 1024;

/// The kind of sitemap a body's content says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Content {
    /// XML (a `<urlset>`, `<sitemapindex>`, RSS or Atom feed is told by its
    /// root element); `utf16`: decoded from UTF-16, which its declaration
    /// may then name.
    Xml { utf16: Option<&'static Encoding> },
    /// A text sitemap: one URL a line.
    Text,
}

/// A body whose content was looked at: its kind, and its bytes (UTF-8) from the start.
pub(super) struct Sniffed {
    pub(super) content: Content,
    pub(super) reader: Box<dyn Read + Send>,
}

/// Looks at the first bytes of uncompressed `reader` and gives them back in front of the rest.
pub(super) fn sniff(mut reader: Box<dyn Read + Send>) -> io::Result<Sniffed> {
    let mut head = [0u8; 4];
    let got = read_head(&mut reader, &mut head)?;
    let utf16 = match &head[..got] {
        [0xFF, 0xFE, ..] | [b'<', 0, b'?', 0] => Some(UTF_16LE),
        [0xFE, 0xFF, ..] | [0, b'<', 0, b'?'] => Some(UTF_16BE),
        _ => None,
    };
    let replay: Box<dyn Read + Send> = Box::new(Cursor::new(head[..got].to_vec()).chain(reader));
    let mut reader: Box<dyn Read + Send> = match utf16 {
        // An explicit encoding: its byte-order mark, if any, is removed as it is decoded.
        Some(encoding) => {
            Box::new(encoding_rs_io::DecodeReaderBytesBuilder::new().encoding(Some(encoding)).build(replay))
        }
        None => replay,
    };
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    let first = loop {
        if seen.len() >= LEADING_SPACE || read_head(&mut reader, &mut byte)? == 0 {
            break None;
        }
        seen.push(byte[0]);
        let after_bom = seen.len() > 3 || !b"\xEF\xBB\xBF".starts_with(&seen);
        if after_bom && !byte[0].is_ascii_whitespace() {
            break Some(byte[0]);
        }
    };
    let content = match first {
        Some(b'<') => Content::Xml { utf16 },
        _ => Content::Text,
    };
    Ok(Sniffed { content, reader: Box::new(Cursor::new(seen).chain(reader)) })
}

/// Whether an XML declaration's `encoding` is one this body is read in.
pub(super) fn declared_encoding_fits(declared: &str, utf16: Option<&'static Encoding>) -> bool {
    let declared = declared.trim().to_ascii_lowercase();
    match utf16 {
        Some(encoding) => {
            declared == "utf-16" || declared == encoding.name().to_ascii_lowercase() || declared == "utf16"
        }
        None => matches!(declared.as_str(), "utf-8" | "utf8" | "us-ascii" | "ascii"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sniffed(bytes: Vec<u8>) -> (Content, String) {
        let mut s = sniff(Box::new(Cursor::new(bytes))).unwrap();
        let mut bytes = Vec::new();
        s.reader.read_to_end(&mut bytes).unwrap();
        (s.content, String::from_utf8_lossy(&bytes).into_owned())
    }

    fn utf16(text: &str, big_endian: bool, bom: bool) -> Vec<u8> {
        let mut bytes = Vec::new();
        let units = bom.then_some(0xFEFF).into_iter().chain(text.encode_utf16());
        for unit in units {
            bytes.extend(if big_endian { unit.to_be_bytes() } else { unit.to_le_bytes() });
        }
        bytes
    }

    #[test]
    fn the_content_decides_and_is_given_back_whole() {
        let xml = "<?xml version=\"1.0\"?><urlset/>";
        assert_eq!(sniffed(xml.into()), (Content::Xml { utf16: None }, xml.to_string()));
        let spaced = "\u{feff}\n  \t<rss/>";
        assert_eq!(sniffed(spaced.into()), (Content::Xml { utf16: None }, spaced.to_string()));
        let text = "\u{feff}https://e.com/a\nhttps://e.com/<b>\n";
        assert_eq!(sniffed(text.into()), (Content::Text, text.to_string()));
        assert_eq!(sniffed(Vec::new()), (Content::Text, String::new()));
        assert_eq!(sniffed(b"  \n".to_vec()), (Content::Text, "  \n".to_string()));
        assert_eq!(sniffed(b"\xEF\xBB".to_vec()).0, Content::Text);
        for (big_endian, bom) in [(false, true), (true, true), (false, false), (true, false)] {
            let (content, decoded) =
                sniffed(utf16("<?xml version=\"1.0\" encoding=\"UTF-16\"?><feed/>", big_endian, bom));
            let encoding = if big_endian { UTF_16BE } else { UTF_16LE };
            assert_eq!(content, Content::Xml { utf16: Some(encoding) }, "big endian {big_endian}, bom {bom}");
            assert_eq!(decoded, "<?xml version=\"1.0\" encoding=\"UTF-16\"?><feed/>");
        }
        // A UTF-16 text file with its mark is decoded too (and then judged as text).
        assert_eq!(sniffed(utf16("https://e.com/é\n", false, true)), (Content::Text, "https://e.com/é\n".into()));
    }

    #[test]
    fn declared_encodings() {
        assert!(declared_encoding_fits("UTF-8", None));
        assert!(declared_encoding_fits("us-ascii", None));
        assert!(!declared_encoding_fits("ISO-8859-1", None));
        assert!(!declared_encoding_fits("UTF-16", None));
        assert!(declared_encoding_fits("UTF-16", Some(UTF_16LE)));
        assert!(declared_encoding_fits("utf-16be", Some(UTF_16BE)));
        assert!(!declared_encoding_fits("UTF-8", Some(UTF_16LE)));
    }
}
