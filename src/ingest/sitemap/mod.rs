//! Sitemaps (sitemaps.org protocol) for `submit --sitemap SRC`: this module owns
//! turning one source — a local file, an http(s) URL, or a `robots.txt` whose
//! `Sitemap:` lines are followed — into a stream of URL entries with their
//! lastmod and the file:line:column they came from, and the problems met on
//! the way. Every kind sitemaps.org accepts is read, told by its content
//! (`content`), never by a name or a Content-Type: gzip by its magic bytes
//! (1f 8b), then XML by its root element (`<urlset>`, `<sitemapindex>`, RSS,
//! Atom: `xml`), else a text sitemap (`text`). XML is read as a stream with
//! quick-xml, never as a DOM; UTF-16 is decoded as it is read. A download is stored in an anonymous temporary file and is
//! stopped at the cap, and so are the uncompressed bytes parsed: nothing past
//! the cap is read. `<sitemapindex>` children are followed depth-first (the
//! source is depth 0, at most depth 3), each sitemap at most once per `Reader`;
//! a child that is one of its own ancestors is reported as a loop. A child of
//! a *local* sitemap index (or local robots.txt) that is an http(s) URL is read
//! from the index's own directory when a file named like the URL's last path
//! segment is there, and fetched otherwise: so in CI `public/sitemap.xml`
//! listing `https://example.com/sitemap-1.xml` reads `public/sitemap-1.xml`,
//! the copy about to be deployed. A relative child `<loc>` is resolved against
//! its index: a URL as a browser would, a local file within its own folder
//! (`location`: nothing a file says becomes an absolute path, and `..` out
//! of the folder is refused). A `<loc>` longer than
//! [`MAX_URL_BYTES`](crate::ingest::MAX_URL_BYTES) is a problem at its place
//! (only its first bytes are kept). This module must not know the ledger, the
//! configuration (the cap is passed in; only the problem text names the key
//! that sets it) or how responses are classified, and it does not judge URLs
//! beyond an empty `<loc>`: the caller checks them.
//!
//! A `Reader` may be told what earlier runs read ([`Known`]: the validators
//! and digest of remote `<urlset>` sitemaps): it then fetches those
//! conditionally, and a 304, or a body with the same digest, is not parsed.
//! It tells what it fetched ([`Fetched`]) for the caller to keep.
//!
//! What a read may fetch is the configuration's to say, not the sitemap's:
//! the source's own host, and the hosts of the [`Reach`] it is given (the
//! property's site, sources and `fetch_hosts`); an index child or a
//! redirect elsewhere, or to a non-public address the configuration does
//! not name, is a problem at its place and is not fetched (`reach`).
//!
//! The walk through indexes and robots.txt is here. Beside it, one job a
//! file: `location` (where a source or a child is read from), `fetch` (the
//! download, following redirects), `reach` (which hosts and addresses it
//! may reach), `body` (gzip and the cap), `content` (XML or text, UTF-16),
//! `xml` (one XML sitemap or feed, as a stream), `text` (a text sitemap),
//! `position` (line and column), `robots` (`Sitemap:` lines) and `lastmod`
//! (W3C datetimes, RFC 822 dates).

mod body;
mod content;
mod fetch;
mod lastmod;
mod location;
mod position;
mod reach;
mod robots;
#[cfg(test)]
mod tests;
mod text;
mod xml;

use crate::model::Position;
use chrono::{DateTime, Utc};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;

use body::Body;
use location::{location_name, resolve_child, source_location, Location, Target};
pub use reach::{FetchClient, Pins, Reach};
use robots::parse_robots;
use xml::parse_sitemap;

/// How deep `<sitemapindex>` children are followed (the source is depth 0).
const MAX_DEPTH: usize = 3;

/// One URL found in a sitemap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub loc: String,
    pub lastmod: Option<DateTime<Utc>>,
    /// Where the `<loc>` is: the sitemap, its line and column.
    pub place: Position,
}

/// A problem with one source (the others still go through).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The source, or where in it.
    pub place: Position,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

/// How a source as a whole could not be read ([`Reader::take_failure`]):
/// what the caller tells a person, in its own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with this status (not 2xx, nor a 304 asked for).
    Status(u16),
    /// No answer within the client's timeout.
    Timeout,
    /// The host name did not resolve.
    Dns,
    /// The TLS handshake failed.
    Tls,
    /// No connection, or it broke off (refused, reset, a redirect refused).
    Connect,
    /// The source, or a redirect from it, leads to a host or an address
    /// this read may not reach (`fetch_hosts`, the address rule): not
    /// fetched.
    NotAllowed,
    /// A local file, or the temporary file of a download, could not be read.
    Unreadable,
    /// Read, but no sitemap, feed, URL list or robots.txt `Sitemap:` line in it.
    NotASitemap,
}

/// What an earlier read of a remote `<urlset>` sitemap left: what makes the
/// next fetch conditional, and the digest of its body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    /// SHA-256 of the body as downloaded (hex).
    pub digest: String,
}

/// A remote sitemap the reader fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub url: String,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub digest: String,
    /// A `<sitemapindex>`: its children were followed.
    pub index: bool,
    /// Read without a problem (only such a read may spare the next one).
    pub clean: bool,
    /// Not changed since it was [`Known`] (a 304, or the same digest): not parsed.
    pub unchanged: bool,
}

/// What a local file holds, told by its content (see [`open_by_content`]).
pub enum FileContent {
    /// XML, gzipped or not: read it as a sitemap (with [`Reader::read`]).
    Sitemap,
    /// Text: its lines, uncompressed (and decoded from UTF-16 when it has
    /// that byte-order mark).
    Text(crate::ingest::Input),
}

/// `reader` as text: its gzip undone when its first bytes are gzip's magic,
/// and UTF-16 with a byte-order mark decoded (for URL lists, which come
/// like sitemaps); no cap: a list's reader bounds what it holds itself.
pub(crate) fn as_text(reader: Box<dyn std::io::Read + Send>) -> std::io::Result<Box<dyn std::io::Read + Send>> {
    body::decoded(reader).and_then(content::sniff).map(|sniffed| sniffed.reader)
}

/// Opens a local file and tells by its content whether it is a sitemap or
/// feed (XML, after any gzip) or text, which a caller may read as a URL list.
pub fn open_by_content(path: &std::path::Path) -> std::io::Result<FileContent> {
    let named = |e: std::io::Error| std::io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()));
    let file = File::open(path).map_err(named)?;
    let sniffed = body::decoded(Box::new(file)).and_then(content::sniff).map_err(named)?;
    Ok(match sniffed.content {
        content::Content::Xml { .. } => FileContent::Sitemap,
        content::Content::Text => FileContent::Text(Box::new(std::io::BufReader::new(sniffed.reader))),
    })
}

/// Reads sitemap sources; remembers which sitemaps it has read so that each is
/// read at most once, across calls to [`Reader::read`].
pub struct Reader {
    client: FetchClient,
    /// The hosts reads may reach beyond each source's own.
    reach: Reach,
    /// The host of the source being read (`None`: a local file).
    source: Option<crate::net::HostPattern>,
    cap: u64,
    seen: HashSet<String>,
    known: HashMap<String, Known>,
    fetched: Vec<Fetched>,
    /// How the source of the last `read` failed as a whole, if it did.
    failure: Option<(Failure, String)>,
}

impl Reader {
    /// `client`: what fetches (the pins it resolves through are kept for
    /// as long as it is). `cap`: the most uncompressed bytes read from any
    /// one sitemap (the default, `[sitemap] max_bytes`, is the sitemaps.org
    /// limit).
    pub fn new(client: FetchClient, cap: u64) -> Reader {
        Reader {
            client,
            reach: Reach::default(),
            source: None,
            cap,
            seen: HashSet::new(),
            known: HashMap::new(),
            fetched: Vec::new(),
            failure: None,
        }
    }

    /// The hosts the next reads may reach beyond each source's own.
    pub fn reach(&mut self, reach: Reach) {
        self.reach = reach;
    }

    /// What earlier reads left of remote `<urlset>` sitemaps, by URL: those
    /// are fetched conditionally, and not parsed when unchanged.
    pub fn remember(&mut self, known: HashMap<String, Known>) {
        self.known = known;
    }

    /// Whether the source of the last [`Reader::read`] failed as a whole —
    /// it could not be fetched or opened, or gave nothing of a sitemap (no
    /// URL, no child, and a problem) — how, and the message of its problem.
    /// Its problems are among those `read` returned; a child that failed
    /// is not a failure of the source.
    pub fn take_failure(&mut self) -> Option<(Failure, String)> {
        self.failure.take()
    }

    /// The remote sitemaps fetched since the last call (robots.txt files are not among them).
    pub fn take_fetched(&mut self) -> Vec<Fetched> {
        std::mem::take(&mut self.fetched)
    }

    /// Reads SRC — a local file path, an https:// or http:// URL (sitemaps are public; plain http is allowed, but a
    /// redirect from https to http is refused: the refusal is a Problem naming the redirect), or a
    /// robots.txt (file or URL, recognised by its file name `robots.txt`) whose `Sitemap:` lines (case-insensitive)
    /// are followed — calling `each` for every `<url><loc>` found, following `<sitemapindex>` children recursively
    /// (depth ≤ 3: the source is depth 0), each sitemap read at most once per Reader (a second reference is skipped
    /// silently unless it is a cycle: a child that is one of its own ancestors is a Problem naming the loop, e.g.
    /// "a.xml → b.xml → a.xml"). Returns the problems; never panics; one broken child does not stop the others.
    ///
    /// A URL whose host is neither SRC's own (host and port) nor one of the [`Reach`], or whose host resolves to a
    /// non-public address the configuration does not name itself, is not fetched: a Problem at its place.
    ///
    /// The sitemaps a robots.txt lists are each at depth 0. Parsing is synchronous between downloads (files and
    /// temporary files are read on the calling task).
    pub async fn read(&mut self, source: &str, each: &mut (dyn FnMut(Entry) + Send)) -> Vec<Problem> {
        let mut problems = Vec::new();
        self.failure = None;
        let location = match source_location(source) {
            Ok(location) => location,
            Err(message) => {
                self.failure = Some((Failure::Unreadable, message.clone()));
                problems.push(Problem { place: Position::of(source), message });
                return problems;
            }
        };
        self.source = match &location {
            Location::Url(url) => crate::net::HostPattern::of_url(url),
            Location::File(_) => None,
        };
        let target = Target::new(location, source.to_string(), None);
        if target.is_robots() {
            self.read_robots(target, each, &mut problems).await;
        } else {
            self.walk(target, each, &mut problems).await;
        }
        problems
    }

    async fn read_robots(&mut self, robots: Target, each: &mut (dyn FnMut(Entry) + Send), problems: &mut Vec<Problem>) {
        if !self.seen.insert(robots.key.clone()) {
            return;
        }
        let lines = match self.open(&robots, None).await {
            Ok(Opened::Body(body, _)) => parse_robots(body.reader(), &robots.name, self.cap, problems),
            Ok(Opened::NotModified) => Vec::new(),
            Err((failure, message)) => {
                self.failure = Some((failure, message.clone()));
                problems.push(robots.problem(message));
                return;
            }
        };
        if lines.is_empty() {
            let message = "no `Sitemap:` line in it".to_string();
            self.failure = Some((Failure::NotASitemap, message.clone()));
            problems.push(robots.problem(message));
        }
        for line in lines {
            match resolve_child(&robots.location, &line.loc) {
                Ok(location) => {
                    let name = location_name(&location);
                    self.walk(Target::new(location, name, Some(line.place)), each, problems).await;
                }
                Err(message) => problems.push(Problem { place: line.place, message }),
            }
        }
    }

    /// Depth-first walk from one sitemap through its index children; the stack holds the ancestors.
    async fn walk(&mut self, root: Target, each: &mut (dyn FnMut(Entry) + Send), problems: &mut Vec<Problem>) {
        if !self.seen.insert(root.key.clone()) {
            return;
        }
        let mut stack: Vec<Frame> = Vec::new();
        let children = self.visit(&root, each, problems).await;
        if !children.is_empty() {
            stack.push(Frame::new(root, 0, children));
        }
        while let Some(frame) = stack.last_mut() {
            let Some(child) = frame.children.next() else {
                if let Some(done) = stack.pop() {
                    if let Some(deep) = done.too_deep {
                        problems.push(deep.problem());
                    }
                }
                continue;
            };
            let depth = frame.depth + 1;
            let location = match resolve_child(&frame.target.location, &child.loc) {
                Ok(location) => location,
                Err(message) => {
                    problems.push(Problem { place: child.place, message });
                    continue;
                }
            };
            let name = location_name(&location);
            let target = Target::new(location, name, Some(child.place.clone()));
            if let Some(start) = stack.iter().position(|f| f.target.key == target.key) {
                let mut names: Vec<&str> = stack[start..].iter().map(|f| f.target.name.as_str()).collect();
                names.push(&stack[start].target.name);
                problems.push(Problem {
                    place: child.place,
                    message: format!("sitemap index loop: {}; not followed again", names.join(" → ")),
                });
                continue;
            }
            if self.seen.contains(&target.key) {
                continue;
            }
            if depth > MAX_DEPTH {
                if let Some(deep) = stack.last_mut().and_then(|f| f.too_deep.as_mut()) {
                    deep.count += 1;
                    continue;
                }
                let names = stack.iter().map(|f| f.target.name.as_str()).chain([target.name.as_str()]);
                let chain = names.collect::<Vec<_>>().join(" → ");
                if let Some(frame) = stack.last_mut() {
                    frame.too_deep = Some(TooDeep { place: child.place, chain, count: 1 });
                }
                continue;
            }
            self.seen.insert(target.key.clone());
            let children = self.visit(&target, each, problems).await;
            if !children.is_empty() {
                stack.push(Frame::new(target, depth, children));
            }
        }
    }

    /// Reads one sitemap: its entries go to `each`, its index children are
    /// returned. A remote one that is [`Known`] and did not change is not
    /// parsed; every remote one is told in [`Reader::take_fetched`].
    async fn visit(
        &mut self,
        target: &Target,
        each: &mut (dyn FnMut(Entry) + Send),
        problems: &mut Vec<Problem>,
    ) -> Vec<Child> {
        let url = match &target.location {
            Location::Url(url) => Some(url.to_string()),
            Location::File(_) => None,
        };
        let known = url.as_ref().and_then(|u| self.known.get(u)).cloned();
        // The source itself, not a sitemap it lists.
        let root = target.listed_at.is_none();
        let opened = match self.open(target, known.as_ref()).await {
            Ok(opened) => opened,
            Err((failure, message)) => {
                if root {
                    self.failure = Some((failure, message.clone()));
                }
                problems.push(target.problem(message));
                return Vec::new();
            }
        };
        let (body, downloaded) = match (opened, known) {
            (Opened::NotModified, Some(known)) => {
                self.fetched.push(unchanged(url.unwrap_or_default(), known));
                return Vec::new();
            }
            (Opened::Body(_, Some(d)), Some(known)) if d.digest == known.digest => {
                let known = Known { etag: d.etag.or(known.etag), last_modified: d.last_modified, ..known };
                self.fetched.push(unchanged(url.unwrap_or_default(), known));
                return Vec::new();
            }
            (Opened::NotModified, None) => return Vec::new(),
            (Opened::Body(body, downloaded), _) => (body, downloaded),
        };
        let before = problems.len();
        // Parsed on a thread of its own, up to about 14,000 entries ahead
        // of `each` (the ledger's work), as a list's lines are.
        let (reader, name, cap) = (body.reader(), &target.name, self.cap);
        let mut entries = 0u64;
        let mut counted = |entry: Entry| {
            entries += 1;
            each(entry);
        };
        let children = super::ahead::read_ahead(|emit| parse_sitemap(reader, name, cap, emit, problems), &mut counted);
        if root && entries == 0 && children.is_empty() && problems.len() > before {
            self.failure = Some((Failure::NotASitemap, problems[before].message.clone()));
        }
        if let (Some(url), Some(d)) = (url, downloaded) {
            self.fetched.push(Fetched {
                url,
                etag: d.etag,
                last_modified: d.last_modified,
                digest: d.digest,
                index: !children.is_empty(),
                clean: problems.len() == before,
                unchanged: false,
            });
        }
        children
    }

    /// Opens a sitemap: a file, or a download (conditional with `known`).
    /// A download refused by this read's reach is not counted as read: a
    /// later read whose reach allows it (another property's) still reads it.
    async fn open(&mut self, target: &Target, known: Option<&Known>) -> Result<Opened, (Failure, String)> {
        match &target.location {
            Location::File(path) => File::open(path)
                .map(|f| Opened::Body(Body::whole(f), None))
                .map_err(|e| (Failure::Unreadable, format!("cannot read: {e}"))),
            Location::Url(url) => {
                let fetcher = fetch::Fetcher {
                    client: &self.client.client,
                    pins: &self.client.pins,
                    reach: &self.reach,
                    source: self.source.as_ref(),
                };
                let download = fetch::download(&fetcher, url, self.cap, known).await.inspect_err(|(failure, _)| {
                    if *failure == Failure::NotAllowed {
                        self.seen.remove(&target.key);
                    }
                })?;
                Ok(match download {
                    fetch::Download::NotModified => Opened::NotModified,
                    fetch::Download::Body { body, etag, last_modified, digest } => {
                        Opened::Body(body, Some(Known { etag, last_modified, digest }))
                    }
                })
            }
        }
    }
}

/// A sitemap opened: its body (and, downloaded, what the next fetch needs),
/// or the server's word that it did not change.
enum Opened {
    Body(Body, Option<Known>),
    NotModified,
}

/// A remote sitemap found unchanged since `known`.
fn unchanged(url: String, known: Known) -> Fetched {
    Fetched {
        url,
        etag: known.etag,
        last_modified: known.last_modified,
        digest: known.digest,
        index: false,
        clean: true,
        unchanged: true,
    }
}

/// A sitemap being walked: its remaining index children.
struct Frame {
    target: Target,
    depth: usize,
    children: std::vec::IntoIter<Child>,
    too_deep: Option<TooDeep>,
}

impl Frame {
    fn new(target: Target, depth: usize, children: Vec<Child>) -> Frame {
        Frame { target, depth, children: children.into_iter(), too_deep: None }
    }
}

/// Children of one index that were not read because they are too deep: one problem per index.
struct TooDeep {
    place: Position,
    chain: String,
    count: usize,
}

impl TooDeep {
    fn problem(self) -> Problem {
        let what =
            if self.count == 1 { "1 child sitemap".to_string() } else { format!("{} child sitemaps", self.count) };
        Problem {
            place: self.place,
            message: format!(
                "sitemap indexes nested more than {MAX_DEPTH} deep ({}): {what} of this index not read",
                self.chain
            ),
        }
    }
}

/// A `<sitemap><loc>` of an index or a `Sitemap:` line of a robots.txt.
struct Child {
    loc: String,
    place: Position,
}
