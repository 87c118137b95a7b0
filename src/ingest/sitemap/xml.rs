//! One sitemap (`<urlset>` or `<sitemapindex>`) parsed as a stream with
//! quick-xml, never as a DOM: entries go to the caller as they are read,
//! index children are returned, and each problem names its line and column.

use crate::model::Position;
use quick_xml::events::{BytesRef, Event};
use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use super::body::{io_problem, uncompressed};
use super::lastmod::parse_lastmod;
use super::position::Tracked;
use super::{Child, Entry, Problem};
use crate::ingest::{human_size, MAX_URL_BYTES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Urlset,
    Index,
}

impl Kind {
    fn item_tag(self) -> &'static str {
        match self {
            Kind::Urlset => "url",
            Kind::Index => "sitemap",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Loc,
    Lastmod,
}

/// The text of a `<loc>` or `<lastmod>` being read: at most one byte more
/// than [`MAX_URL_BYTES`] of it is kept (leading whitespace dropped), the rest
/// only counted.
struct Text {
    field: Field,
    value: String,
    /// Bytes of the text after its leading whitespace, kept or not.
    len: usize,
    /// How many of those end the text as whitespace.
    trailing_space: usize,
    place: Position,
    unknown_entity: Option<String>,
}

impl Text {
    fn new(field: Field, place: Position) -> Text {
        Text { field, value: String::new(), len: 0, trailing_space: 0, place, unknown_entity: None }
    }

    fn push(&mut self, text: &str) {
        let text = if self.len == 0 { text.trim_start() } else { text };
        if text.is_empty() {
            return;
        }
        self.len += text.len();
        let body = text.trim_end().len();
        self.trailing_space = if body == 0 { self.trailing_space + text.len() } else { text.len() - body };
        let room = (MAX_URL_BYTES + 1).saturating_sub(self.value.len());
        let mut cut = text.len().min(room);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.value.push_str(&text[..cut]);
    }

    /// The length of the text without surrounding whitespace.
    fn trimmed_len(&self) -> usize {
        self.len - self.trailing_space
    }
}

/// A `<url>` or `<sitemap>` being read.
struct Item {
    place: Position,
    loc: Option<Text>,
    lastmod: Option<Text>,
}

/// What the event loop knows between events.
struct Parse<'a> {
    /// The sitemap's name, shared by the positions of its entries.
    name: crate::ingest::ahead::SourceName,
    each: &'a mut dyn FnMut(Entry),
    problems: &'a mut Vec<Problem>,
    children: Vec<Child>,
    kind: Option<Kind>,
    root_done: bool,
    /// The elements open, innermost last: where each starts in `names`, and
    /// where it was opened (one buffer for their names, not one each).
    open: Vec<(usize, (u64, u64))>,
    names: Vec<u8>,
    item: Option<Item>,
    text: Option<Text>,
    bad_lastmods: usize,
    first_bad_lastmod: Option<(Position, String)>,
}

impl<'a> Parse<'a> {
    fn new(name: &'a str, each: &'a mut dyn FnMut(Entry), problems: &'a mut Vec<Problem>) -> Parse<'a> {
        Parse {
            name: crate::ingest::ahead::SourceName::new(name),
            each,
            problems,
            children: Vec::new(),
            kind: None,
            root_done: false,
            open: Vec::new(),
            names: Vec::new(),
            item: None,
            text: None,
            bad_lastmods: 0,
            first_bad_lastmod: None,
        }
    }

    fn place(&self, (line, col): (u64, u64)) -> Position {
        Position::at(self.name.get(), line, col)
    }

    fn problem(&mut self, place: Position, message: String) {
        self.problems.push(Problem { place, message });
    }

    /// Opens an element; false stops the parse (not a sitemap).
    fn open(&mut self, local: &[u8], at: (u64, u64)) -> bool {
        match self.open.len() {
            0 => {
                let tag = String::from_utf8_lossy(local);
                if self.root_done {
                    let message = format!("malformed XML: a second root element <{tag}>");
                    self.problem(self.place(at), message);
                    return false;
                }
                self.kind = match local {
                    b"urlset" => Some(Kind::Urlset),
                    b"sitemapindex" => Some(Kind::Index),
                    _ => {
                        let message =
                            format!("not a sitemap: the root element is <{tag}>, not <urlset> or <sitemapindex>");
                        self.problem(self.place(at), message);
                        return false;
                    }
                };
            }
            1 if self.kind.is_some_and(|k| k.item_tag().as_bytes() == local) => {
                let (line, col) = at;
                self.item =
                    Some(Item { place: Position::at(self.name.next_value(), line, col), loc: None, lastmod: None });
            }
            2 if self.item.is_some() => {
                let field = match local {
                    b"loc" => Some(Field::Loc),
                    b"lastmod" => Some(Field::Lastmod),
                    _ => None,
                };
                if let Some(field) = field {
                    self.text = Some(Text::new(field, self.place(at)));
                }
            }
            _ => {}
        }
        self.open.push((self.names.len(), at));
        self.names.extend_from_slice(local);
        true
    }

    fn close(&mut self) {
        let Some((name, _)) = self.open.pop() else { return };
        self.names.truncate(name);
        match self.open.len() {
            0 => self.root_done = true,
            1 => {
                if let Some(item) = self.item.take() {
                    self.finish_item(item);
                }
            }
            2 => {
                if let (Some(text), Some(item)) = (self.text.take(), self.item.as_mut()) {
                    match text.field {
                        Field::Loc if item.loc.is_some() => {
                            let tag = self.kind.map_or("url", Kind::item_tag);
                            self.problem(text.place, format!("a second <loc> in one <{tag}>; ignored"));
                        }
                        Field::Loc => item.loc = Some(text),
                        Field::Lastmod => {
                            item.lastmod.get_or_insert(text);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn finish_item(&mut self, item: Item) {
        let Some(kind) = self.kind else { return };
        let Some(loc) = item.loc else {
            self.problem(item.place, format!("<{}> without <loc>", kind.item_tag()));
            return;
        };
        if let Some(entity) = loc.unknown_entity {
            let message = format!(
                "unknown entity {entity} in <loc>; XML defines only &amp; &lt; &gt; &quot; &apos; and &#…; references"
            );
            self.problem(loc.place, message);
            return;
        }
        if loc.trimmed_len() > MAX_URL_BYTES {
            let message = format!(
                "<loc> is {} long; a URL is at most {} here (URLs stay under 2 KiB, and engines refuse longer ones): \
                 `{}…` is skipped",
                human_size(loc.trimmed_len() as u64),
                human_size(MAX_URL_BYTES as u64),
                loc.value.chars().take(80).collect::<String>()
            );
            self.problem(loc.place, message);
            return;
        }
        let trimmed = loc.value.trim();
        if trimmed.is_empty() {
            self.problem(loc.place, "empty <loc>".to_string());
            return;
        }
        // The text as read, unless it had whitespace around it.
        let value = match trimmed.len() == loc.value.len() {
            true => loc.value,
            false => trimmed.to_string(),
        };
        match kind {
            Kind::Urlset => {
                let lastmod = item.lastmod.and_then(|text| {
                    let raw = text.value.trim();
                    if raw.is_empty() {
                        return None;
                    }
                    let parsed = parse_lastmod(raw);
                    if parsed.is_none() {
                        self.bad_lastmods += 1;
                        let shown: String = raw.chars().take(80).collect();
                        self.first_bad_lastmod.get_or_insert_with(|| (text.place.clone(), shown));
                    }
                    parsed
                });
                (self.each)(Entry { loc: value, lastmod, place: loc.place });
            }
            Kind::Index => self.children.push(Child { loc: value, place: loc.place }),
        }
    }

    fn push_text(&mut self, text: &str) {
        if let Some(t) = self.text.as_mut() {
            t.push(text);
        }
    }

    /// Adds the text of a character or predefined entity reference; any
    /// other is kept, the first of the text, as unknown.
    fn push_reference(&mut self, e: &BytesRef<'_>) {
        let resolved = match e.resolve_char_ref() {
            Ok(Some(c)) => Some(c.to_string()),
            Ok(None) => {
                e.decode().ok().and_then(|name| quick_xml::escape::resolve_predefined_entity(&name).map(str::to_string))
            }
            Err(_) => None,
        };
        match resolved {
            Some(text) => self.push_text(&text),
            None => {
                let raw = format!("&{};", String::from_utf8_lossy(e));
                if let Some(t) = self.text.as_mut() {
                    t.unknown_entity.get_or_insert(raw);
                }
            }
        }
    }

    /// Adds the text of a text or CDATA event; one that cannot be decoded is
    /// malformed XML, and false stops the parse.
    fn push_decoded(&mut self, text: Result<Cow<'_, str>, impl fmt::Display>, at: (u64, u64)) -> bool {
        match text {
            Ok(text) => {
                self.push_text(&text);
                true
            }
            Err(err) => {
                let place = self.place(at);
                self.problem(place, format!("malformed XML: {err}"));
                false
            }
        }
    }

    fn eof(&mut self, at: (u64, u64)) {
        if let Some(&(name, opened)) = self.open.last() {
            let message = format!(
                "malformed XML: the file ends inside <{}> opened at {}:{}",
                String::from_utf8_lossy(&self.names[name..]),
                opened.0,
                opened.1
            );
            let place = self.place(at);
            self.problem(place, message);
        } else if self.kind.is_none() {
            self.problem(Position::of(self.name.get()), "empty: no <urlset> or <sitemapindex> in it".to_string());
        }
    }

    fn finish(mut self) -> Vec<Child> {
        if let Some((place, raw)) = self.first_bad_lastmod.take() {
            let message = match self.bad_lastmods {
                1 => format!("<lastmod> {raw:?} is not a W3C datetime; that URL goes without a lastmod"),
                n => format!(
                    "{n} <lastmod> values are not W3C datetimes (the first: {raw:?}); those URLs go without a lastmod"
                ),
            };
            self.problem(place, message);
        }
        self.children
    }
}

/// Parses one sitemap body (plain or gzip) as a stream: entries go to `each`, index children are returned.
pub(super) fn parse_sitemap(
    raw: Box<dyn Read>,
    name: &str,
    cap: u64,
    each: &mut dyn FnMut(Entry),
    problems: &mut Vec<Problem>,
) -> Vec<Child> {
    let tracked = match uncompressed(raw, cap).and_then(Tracked::new) {
        Ok(tracked) => tracked,
        Err(e) => {
            problems.push(io_problem(name, &e, cap));
            return Vec::new();
        }
    };
    let mut xml = quick_xml::Reader::from_reader(tracked);
    let mut state = Parse::new(name, each, problems);
    let mut buf = Vec::new();
    loop {
        let pos = xml.buffer_position();
        xml.get_mut().mark(pos);
        let event = xml.read_event_into(&mut buf);
        let at = xml.get_ref().mark_place();
        match event {
            Ok(Event::Start(e)) => {
                if !state.open(e.local_name().as_ref(), at) {
                    break;
                }
            }
            Ok(Event::Empty(e)) => {
                if !state.open(e.local_name().as_ref(), at) {
                    break;
                }
                state.close();
            }
            Ok(Event::End(_)) => state.close(),
            Ok(Event::Text(e)) if state.text.is_some() => {
                if !state.push_decoded(e.decode(), at) {
                    break;
                }
            }
            Ok(Event::CData(e)) if state.text.is_some() => {
                if !state.push_decoded(e.decode(), at) {
                    break;
                }
            }
            Ok(Event::GeneralRef(e)) if state.text.is_some() => state.push_reference(&e),
            Ok(Event::Eof) => {
                state.eof(at);
                break;
            }
            Ok(_) => {}
            Err(quick_xml::Error::Io(e)) => {
                state.problems.push(io_problem(name, &e, cap));
                break;
            }
            Err(e) => {
                let place = state.place(xml.get_ref().place_of(xml.error_position()));
                state.problem(place, format!("malformed XML: {e}"));
                break;
            }
        }
        buf.clear();
    }
    state.finish()
}
