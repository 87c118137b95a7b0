//! One sitemap parsed as a stream with quick-xml, never as a DOM: entries
//! go to the caller as they are read, index children are returned, and each
//! problem names its line and column. What the body is, is told by its
//! content ([`content`](super::content)): a text sitemap goes to
//! [`text`](super::text); XML by its root element — `<urlset>`,
//! `<sitemapindex>`, an RSS 2.0 feed (`<rss>`, and RSS 1.0's `<rdf:RDF>`)
//! or an Atom feed (`<feed>`, 1.0 and 0.3).
//!
//! What each gives: a `<url>`'s `<loc>` and `<lastmod>`; an RSS `<item>`'s
//! `<link>`, or when it has none its `<guid>` if that is a permalink
//! (`isPermaLink="true"`, or no attribute and the guid an http(s) URL:
//! RSS's default is a permalink, but many feeds write an identifier there
//! without saying so), with `<atom:updated>` or else `<pubDate>` (RFC 822)
//! as its lastmod; an Atom `<entry>`'s first `<link>` whose `rel` is
//! `alternate` or missing, with `<updated>` (0.3: `<modified>`).

use crate::model::Position;
use quick_xml::events::{BytesDecl, BytesRef, BytesStart, Event};
use std::borrow::Cow;
use std::fmt;
use std::io::Read;

use super::body::{io_problem, uncompressed};
use super::content::{declared_encoding_fits, sniff, Content};
use super::lastmod::{parse_lastmod, parse_rfc822};
use super::position::Tracked;
use super::text::parse_text;
use super::{Child, Entry, Problem};
use crate::ingest::{human_size, MAX_URL_BYTES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Urlset,
    Index,
    /// RSS 2.0 (and 0.9x): `<rss><channel><item>`.
    Rss,
    /// RSS 1.0: `<rdf:RDF><item>`.
    Rdf,
    /// Atom 1.0 and 0.3: `<feed><entry>`.
    Atom,
}

impl Kind {
    fn item_tag(self) -> &'static str {
        match self {
            Kind::Urlset => "url",
            Kind::Index => "sitemap",
            Kind::Rss | Kind::Rdf => "item",
            Kind::Atom => "entry",
        }
    }

    /// How many elements are open around an item.
    fn item_depth(self) -> usize {
        match self {
            Kind::Rss => 2,
            _ => 1,
        }
    }

    /// The field of an item an element at `local` is.
    fn field(self, local: &[u8], start: &BytesStart<'_>) -> Option<Field> {
        match (self, local) {
            (Kind::Urlset | Kind::Index, b"loc") => Some(Field::Loc),
            (Kind::Urlset, b"lastmod") => Some(Field::Lastmod),
            (Kind::Rss | Kind::Rdf, b"link") => Some(Field::Loc),
            (Kind::Rss | Kind::Rdf, b"guid") => {
                let said = start.try_get_attribute("isPermaLink").ok().flatten().and_then(|a| {
                    let value = a.unescape_value().ok()?;
                    Some(!value.trim().eq_ignore_ascii_case("false"))
                });
                Some(Field::Guid(said))
            }
            (Kind::Rss | Kind::Rdf, b"pubDate") => Some(Field::PubDate),
            (Kind::Rss | Kind::Rdf | Kind::Atom, b"updated") | (Kind::Atom, b"modified") => Some(Field::Lastmod),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Loc,
    Lastmod,
    /// RSS's `<pubDate>`, an RFC 822 date.
    PubDate,
    /// RSS's `<guid>`, and what its `isPermaLink` says (nothing: no attribute).
    Guid(Option<bool>),
}

/// The text of a `<loc>` or `<lastmod>` being read: at most one byte more
/// than [`MAX_URL_BYTES`] of it is kept (leading whitespace dropped), the rest
/// only counted.
struct Text {
    field: Field,
    /// The element (or attribute) it is read from, as messages name it.
    tag: &'static str,
    value: String,
    /// Bytes of the text after its leading whitespace, kept or not.
    len: usize,
    /// How many of those end the text as whitespace.
    trailing_space: usize,
    place: Position,
    unknown_entity: Option<String>,
}

impl Text {
    fn new(field: Field, tag: &'static str, place: Position) -> Text {
        Text { field, tag, value: String::new(), len: 0, trailing_space: 0, place, unknown_entity: None }
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
    pub_date: Option<Text>,
    guid: Option<Text>,
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
    /// The first date not read: where, its text, and its element's name.
    first_bad_lastmod: Option<(Position, String, &'static str)>,
    /// Decoded from UTF-16 (which the XML declaration may then name).
    utf16: Option<&'static encoding_rs::Encoding>,
}

impl<'a> Parse<'a> {
    fn new(
        name: &'a str,
        each: &'a mut dyn FnMut(Entry),
        problems: &'a mut Vec<Problem>,
        utf16: Option<&'static encoding_rs::Encoding>,
    ) -> Parse<'a> {
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
            utf16,
        }
    }

    fn place(&self, (line, col): (u64, u64)) -> Position {
        Position::at(self.name.get(), line, col)
    }

    fn problem(&mut self, place: Position, message: String) {
        self.problems.push(Problem { place, message });
    }

    /// Opens an element; false stops the parse (not a sitemap).
    fn open(&mut self, start: &BytesStart<'_>, at: (u64, u64)) -> bool {
        let local = start.local_name();
        let local = local.as_ref();
        let depth = self.open.len();
        let item_depth = self.kind.map_or(1, Kind::item_depth);
        match depth {
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
                    b"rss" => Some(Kind::Rss),
                    b"RDF" => Some(Kind::Rdf),
                    b"feed" => Some(Kind::Atom),
                    _ => {
                        let message = format!(
                            "not a sitemap: the root element is <{tag}>, not <urlset>, <sitemapindex>, <rss> or <feed>"
                        );
                        self.problem(self.place(at), message);
                        return false;
                    }
                };
            }
            _ if depth == item_depth && self.kind.is_some_and(|k| k.item_tag().as_bytes() == local) => {
                let (line, col) = at;
                let place = Position::at(self.name.next_value(), line, col);
                self.item = Some(Item { place, loc: None, lastmod: None, pub_date: None, guid: None });
            }
            _ if depth == item_depth + 1 && self.item.is_some() => {
                let Some(kind) = self.kind else { return true };
                if kind == Kind::Atom && local == b"link" {
                    self.atom_link(start, at);
                } else if let Some(field) = kind.field(local, start) {
                    let tag = match field {
                        Field::Loc if kind == Kind::Urlset || kind == Kind::Index => "loc",
                        Field::Loc => "link",
                        Field::Lastmod if kind == Kind::Urlset => "lastmod",
                        Field::Lastmod if local == b"modified" => "modified",
                        Field::Lastmod => "updated",
                        Field::PubDate => "pubDate",
                        Field::Guid(_) => "guid",
                    };
                    self.text = Some(Text::new(field, tag, self.place(at)));
                }
            }
            _ => {}
        }
        self.open.push((self.names.len(), at));
        self.names.extend_from_slice(local);
        true
    }

    /// An Atom entry's `<link>`: the first whose `rel` is `alternate` (or
    /// missing) is the entry's URL, read from its `href`.
    fn atom_link(&mut self, start: &BytesStart<'_>, at: (u64, u64)) {
        let attribute = |name: &str| start.try_get_attribute(name).ok().flatten();
        let alternate = attribute("rel")
            .and_then(|a| a.unescape_value().ok().map(|v| v.trim().eq_ignore_ascii_case("alternate")))
            .unwrap_or(true);
        let place = self.place(at);
        let Some(item) = self.item.as_mut().filter(|item| alternate && item.loc.is_none()) else { return };
        let mut text = Text::new(Field::Loc, "link href", place);
        match attribute("href").map(|a| a.unescape_value().map(|v| v.into_owned())) {
            Some(Ok(href)) => text.push(&href),
            Some(Err(e)) => text.unknown_entity = Some(e.to_string()),
            None => return,
        }
        item.loc = Some(text);
    }

    fn close(&mut self) {
        let Some((name, _)) = self.open.pop() else { return };
        self.names.truncate(name);
        let item_depth = self.kind.map_or(1, Kind::item_depth);
        match self.open.len() {
            0 => self.root_done = true,
            depth if depth == item_depth => {
                if let Some(item) = self.item.take() {
                    self.finish_item(item);
                }
            }
            depth if depth == item_depth + 1 => {
                if let (Some(text), Some(item)) = (self.text.take(), self.item.as_mut()) {
                    match text.field {
                        Field::Loc if item.loc.is_some() => {
                            let (tag, item_tag) = (text.tag, self.kind.map_or("url", Kind::item_tag));
                            self.problem(text.place, format!("a second <{tag}> in one <{item_tag}>; ignored"));
                        }
                        Field::Loc => item.loc = Some(text),
                        Field::Lastmod => {
                            item.lastmod.get_or_insert(text);
                        }
                        Field::PubDate => {
                            item.pub_date.get_or_insert(text);
                        }
                        Field::Guid(_) => {
                            item.guid.get_or_insert(text);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// An RSS item's `<guid>` when it has no `<link>`: its URL if it is a
    /// permalink, else the problem to say.
    fn permalink(guid: Option<Text>) -> Result<Text, &'static str> {
        let Some(guid) = guid else { return Err("without <link> or <guid>") };
        let Field::Guid(said) = guid.field else { return Err("without <link>") };
        let text = guid.value.trim_start();
        let is_url = ["http://", "https://"]
            .iter()
            .any(|scheme| text.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme)));
        match said {
            Some(true) => Ok(guid),
            None if is_url => Ok(guid),
            Some(false) => Err("without <link>, and its <guid> is not a permalink (isPermaLink=\"false\")"),
            None => Err("without <link>, and its <guid> is not a URL"),
        }
    }

    /// An item's lastmod: its W3C date, else its RFC 822 one; a value that
    /// is neither is counted for [`Parse::finish`] to say.
    fn lastmod(&mut self, item: &mut Item) -> Option<chrono::DateTime<chrono::Utc>> {
        let mut read = |text: Option<Text>, parse: fn(&str) -> Option<chrono::DateTime<chrono::Utc>>| {
            let text = text?;
            let raw = text.value.trim();
            if raw.is_empty() {
                return None;
            }
            let parsed = parse(raw);
            if parsed.is_none() {
                self.bad_lastmods += 1;
                let shown: String = raw.chars().take(80).collect();
                self.first_bad_lastmod.get_or_insert_with(|| (text.place.clone(), shown, text.tag));
            }
            parsed
        };
        let w3c = read(item.lastmod.take(), parse_lastmod);
        w3c.or_else(|| read(item.pub_date.take(), parse_rfc822))
    }

    fn finish_item(&mut self, mut item: Item) {
        let Some(kind) = self.kind else { return };
        let loc = match (item.loc.take(), kind) {
            (Some(loc), _) => loc,
            (None, Kind::Urlset | Kind::Index) => {
                self.problem(item.place, format!("<{}> without <loc>", kind.item_tag()));
                return;
            }
            (None, Kind::Atom) => {
                self.problem(item.place, "<entry> without <link rel=\"alternate\" href=…>".to_string());
                return;
            }
            (None, Kind::Rss | Kind::Rdf) => match Self::permalink(item.guid.take()) {
                Ok(guid) => guid,
                Err(why) => {
                    self.problem(item.place, format!("<item> {why}"));
                    return;
                }
            },
        };
        let tag = loc.tag;
        if let Some(entity) = loc.unknown_entity {
            let message = format!(
                "unknown entity {entity} in <{tag}>; XML defines only &amp; &lt; &gt; &quot; &apos; and &#…; references"
            );
            self.problem(loc.place, message);
            return;
        }
        if loc.trimmed_len() > MAX_URL_BYTES {
            let message = format!(
                "<{tag}> is {} long; a URL is at most {} here (URLs stay under 2 KiB, and engines refuse longer ones): \
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
            self.problem(loc.place, format!("empty <{tag}>"));
            return;
        }
        // The text as read, unless it had whitespace around it.
        let value = match trimmed.len() == loc.value.len() {
            true => loc.value,
            false => trimmed.to_string(),
        };
        match kind {
            Kind::Index => self.children.push(Child { loc: value, place: loc.place }),
            _ => {
                let lastmod = self.lastmod(&mut item);
                (self.each)(Entry { loc: value, lastmod, place: loc.place });
            }
        }
    }

    fn push_text(&mut self, text: &str) {
        if let Some(t) = self.text.as_mut() {
            t.push(text);
        }
    }

    /// Adds the text of a character or predefined entity reference; any
    /// other is kept, the first of the text, as unknown.
    /// Whether the XML declaration's encoding, if it names one, is the one
    /// the body is read in; if not, a problem says so and nothing more is
    /// read (returns false).
    fn declared(&mut self, e: &BytesDecl<'_>, at: (u64, u64)) -> bool {
        let Some(Ok(declared)) = e.encoding() else { return true };
        let declared = String::from_utf8_lossy(&declared).into_owned();
        if declared_encoding_fits(&declared, self.utf16) {
            return true;
        }
        let read_as = match self.utf16 {
            Some(encoding) => format!("{} (by its byte order)", encoding.name()),
            None => "UTF-8".to_string(),
        };
        let message = format!(
            "encoded in {declared} (its XML declaration says so), but read as {read_as}: indexq reads sitemaps in \
             UTF-8, or UTF-16 with a byte-order mark; nothing more of it was read"
        );
        self.problem(self.place(at), message);
        false
    }

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
            let message = "empty: no <urlset>, <sitemapindex>, <rss> or <feed> in it".to_string();
            self.problem(Position::of(self.name.get()), message);
        }
    }

    fn finish(mut self) -> Vec<Child> {
        if let Some((place, raw, tag)) = self.first_bad_lastmod.take() {
            let what = if tag == "pubDate" { "an RFC 822 date" } else { "a W3C datetime" };
            let message = match self.bad_lastmods {
                1 => format!("<{tag}> {raw:?} is not {what}; that URL goes without a lastmod"),
                n if tag == "lastmod" => format!(
                    "{n} <lastmod> values are not W3C datetimes (the first: {raw:?}); those URLs go without a lastmod"
                ),
                n => format!(
                    "{n} dates are not read (the first, <{tag}> {raw:?}, is not {what}); those URLs go without a \
                     lastmod"
                ),
            };
            self.problem(place, message);
        }
        self.children
    }
}

/// A sitemap's body as it is read.
type Body = Box<dyn Read + Send>;

/// The body unpacked (gzip) and read by its content: a text sitemap is
/// parsed here, whole, and gives `None`; XML gives its reader, with the
/// UTF-16 encoding its bytes showed, if any. A read that fails is a problem.
fn xml_body(
    raw: Box<dyn Read + Send>,
    name: &str,
    cap: u64,
    each: &mut dyn FnMut(Entry),
    problems: &mut Vec<Problem>,
) -> Option<(Tracked<Body>, Option<&'static encoding_rs::Encoding>)> {
    let sniffed = uncompressed(raw, cap).and_then(|r| sniff(Box::new(r)));
    let (reader, utf16) = match sniffed {
        Ok(sniffed) => match sniffed.content {
            Content::Xml { utf16 } => (sniffed.reader, utf16),
            Content::Text => {
                parse_text(sniffed.reader, name, cap, each, problems);
                return None;
            }
        },
        Err(e) => {
            problems.push(io_problem(name, &e, cap));
            return None;
        }
    };
    match Tracked::new(reader) {
        Ok(tracked) => Some((tracked, utf16)),
        Err(e) => {
            problems.push(io_problem(name, &e, cap));
            None
        }
    }
}

/// Parses one sitemap body (plain or gzip; XML or text, by its content) as a
/// stream: entries go to `each`, index children are returned.
pub(super) fn parse_sitemap(
    raw: Box<dyn Read + Send>,
    name: &str,
    cap: u64,
    each: &mut dyn FnMut(Entry),
    problems: &mut Vec<Problem>,
) -> Vec<Child> {
    let (tracked, utf16) = match xml_body(raw, name, cap, each, problems) {
        Some(body) => body,
        None => return Vec::new(),
    };
    let mut xml = quick_xml::Reader::from_reader(tracked);
    let mut state = Parse::new(name, each, problems, utf16);
    let mut buf = Vec::new();
    loop {
        let pos = xml.buffer_position();
        xml.get_mut().mark(pos);
        let event = xml.read_event_into(&mut buf);
        let at = xml.get_ref().mark_place();
        match event {
            Ok(Event::Start(e)) => {
                if !state.open(&e, at) {
                    break;
                }
            }
            Ok(Event::Empty(e)) => {
                if !state.open(&e, at) {
                    break;
                }
                state.close();
            }
            Ok(Event::Decl(e)) => {
                if !state.declared(&e, at) {
                    break;
                }
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
