//! Sitemaps (sitemaps.org protocol) for `submit --sitemap SRC`: this module owns
//! turning one source — a local file, an http(s) URL, or a `robots.txt` whose
//! `Sitemap:` lines are followed — into a stream of `<url><loc>` entries with
//! their `<lastmod>` and the file:line:column they came from, and the problems
//! met on the way. XML is read as a stream with quick-xml, never as a DOM;
//! gzip is recognised by its magic bytes (1f 8b), not by a name or a
//! Content-Type. A download is stored in an anonymous temporary file and is
//! stopped at the cap, and so are the uncompressed bytes parsed: nothing past
//! the cap is read. `<sitemapindex>` children are followed depth-first (the
//! source is depth 0, at most depth 3), each sitemap at most once per `Reader`;
//! a child that is one of its own ancestors is reported as a loop. A child of
//! a *local* sitemap index (or local robots.txt) that is an http(s) URL is read
//! from the index's own directory when a file named like the URL's last path
//! segment is there, and fetched otherwise: so in CI `public/sitemap.xml`
//! listing `https://example.com/sitemap-1.xml` reads `public/sitemap-1.xml`,
//! the copy about to be deployed. A relative child `<loc>` is resolved against
//! its index (URL or directory). A `<loc>` longer than
//! [`MAX_URL_BYTES`](crate::input::MAX_URL_BYTES) is a problem at its place
//! (only its first bytes are kept). This module must not know the ledger, the
//! configuration (the cap is passed in; only the problem text names the key
//! that sets it) or how responses are classified, and it does not judge URLs
//! beyond an empty `<loc>`: the caller checks them.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, TimeZone, Utc};
use flate2::read::MultiGzDecoder;
use quick_xml::events::Event;
use std::collections::HashSet;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufRead, BufReader, Cursor, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use url::Url;

use crate::errors::error_chain;
use crate::input::MAX_URL_BYTES;

/// How deep `<sitemapindex>` children are followed (the source is depth 0).
const MAX_DEPTH: usize = 3;
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// One URL found in a sitemap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub loc: String,
    pub lastmod: Option<DateTime<Utc>>,
    /// "SOURCE:LINE:COL" of the <loc>
    pub place: String,
}

/// A problem with one source (the others still go through).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// "SOURCE" or "SOURCE:LINE:COL"
    pub place: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

/// Reads sitemap sources; remembers which sitemaps it has read so that each is
/// read at most once, across calls to [`Reader::read`].
pub struct Reader {
    client: reqwest::Client,
    cap: u64,
    seen: HashSet<String>,
}

impl Reader {
    /// `cap`: the most uncompressed bytes read from any one sitemap (default 50 MiB, the sitemaps.org limit).
    pub fn new(client: reqwest::Client, cap: u64) -> Reader {
        Reader { client, cap, seen: HashSet::new() }
    }

    /// Reads SRC — a local file path, an https:// or http:// URL (sitemaps are public; plain http is allowed, but the
    /// client given should refuse a redirect from https to http, as `engines::fetch_client` does: the refusal is a
    /// Problem naming the redirect), or a
    /// robots.txt (file or URL, recognised by its file name `robots.txt`) whose `Sitemap:` lines (case-insensitive)
    /// are followed — calling `each` for every <url><loc> found, following <sitemapindex> children recursively
    /// (depth ≤ 3: the source is depth 0), each sitemap read at most once per Reader (a second reference is skipped
    /// silently unless it is a cycle: a child that is one of its own ancestors is a Problem naming the loop, e.g.
    /// "a.xml → b.xml → a.xml"). Returns the problems; never panics; one broken child does not stop the others.
    ///
    /// The sitemaps a robots.txt lists are each at depth 0. Parsing is synchronous between downloads (files and
    /// temporary files are read on the calling task).
    pub async fn read(&mut self, source: &str, each: &mut (dyn FnMut(Entry) + Send)) -> Vec<Problem> {
        let mut problems = Vec::new();
        let location = match source_location(source) {
            Ok(location) => location,
            Err(message) => {
                problems.push(Problem { place: source.to_string(), message });
                return problems;
            }
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
        let lines = match self.open(&robots).await {
            Ok(body) => parse_robots(body.reader(), &robots.name, self.cap, problems),
            Err(message) => {
                problems.push(robots.problem(message));
                return;
            }
        };
        if lines.is_empty() {
            problems.push(robots.problem("no `Sitemap:` line in it".to_string()));
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

    /// Reads one sitemap: its entries go to `each`, its index children are returned.
    async fn visit(
        &self,
        target: &Target,
        each: &mut (dyn FnMut(Entry) + Send),
        problems: &mut Vec<Problem>,
    ) -> Vec<Child> {
        match self.open(target).await {
            Ok(body) => parse_sitemap(body.reader(), &target.name, self.cap, each, problems),
            Err(message) => {
                problems.push(target.problem(message));
                Vec::new()
            }
        }
    }

    async fn open(&self, target: &Target) -> Result<Body, String> {
        match &target.location {
            Location::File(path) => File::open(path)
                .map(|file| Body { file, truncated: false, _temp: TempPath(None) })
                .map_err(|e| format!("cannot read: {e}")),
            Location::Url(url) => self.download(url).await,
        }
    }

    /// Downloads a body into an anonymous temporary file, stopping at the cap.
    async fn download(&self, url: &Url) -> Result<Body, String> {
        let mut response =
            self.client.get(url.clone()).header(reqwest::header::ACCEPT_ENCODING, "gzip").send().await.map_err(
                |e| match e.is_redirect().then(|| innermost(&e)).flatten() {
                    // A redirect the client's policy refused (a downgrade to http, too many): its own words.
                    Some(why) => format!("cannot fetch: {why}"),
                    None => format!("cannot fetch: {}", error_chain(&e)),
                },
            )?;
        let status = response.status();
        if !status.is_success() {
            let reason = status.canonical_reason().map(|r| format!(" {r}")).unwrap_or_default();
            return Err(format!("HTTP {}{reason}", status.as_u16()));
        }
        let (mut file, temp) =
            temp_file().map_err(|e| format!("cannot store the download in {}: {e}", std::env::temp_dir().display()))?;
        let store_error =
            |e: io::Error| format!("cannot store the download in {}: {e}", std::env::temp_dir().display());
        let mut written: u64 = 0;
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("cannot fetch: {}", error_chain(&e)))? {
            let room = self.cap - written;
            if chunk.len() as u64 > room {
                // `room` < chunk.len() here, so it fits in usize and the slice is in bounds.
                file.write_all(&chunk[..room as usize]).map_err(store_error)?;
                truncated = true;
                break;
            }
            file.write_all(&chunk).map_err(store_error)?;
            written += chunk.len() as u64;
        }
        file.rewind().map_err(store_error)?;
        Ok(Body { file, truncated, _temp: temp })
    }
}

/// Where a sitemap (or robots.txt) is read from.
#[derive(Debug, Clone)]
enum Location {
    File(PathBuf),
    Url(Url),
}

/// A sitemap to read: where, its name in places and messages, its identity for "read once", and where it was listed.
struct Target {
    location: Location,
    name: String,
    key: String,
    listed_at: Option<String>,
}

impl Target {
    fn new(location: Location, name: String, listed_at: Option<String>) -> Target {
        let key = match &location {
            Location::File(path) => {
                format!("file:{}", fs::canonicalize(path).unwrap_or_else(|_| path.clone()).display())
            }
            Location::Url(url) => {
                let mut url = url.clone();
                url.set_fragment(None);
                url.to_string()
            }
        };
        Target { location, name, key, listed_at }
    }

    fn is_robots(&self) -> bool {
        let file_name = match &self.location {
            Location::File(path) => path.file_name().and_then(|n| n.to_str()).map(str::to_string),
            Location::Url(url) => url.path_segments().and_then(|mut s| s.next_back()).map(str::to_string),
        };
        file_name.is_some_and(|n| n.eq_ignore_ascii_case("robots.txt"))
    }

    fn problem(&self, message: String) -> Problem {
        let message = match &self.listed_at {
            Some(at) => format!("{message} (listed at {at})"),
            None => message,
        };
        Problem { place: self.name.clone(), message }
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
    place: String,
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
    place: String,
}

/// Tells a URL from a path: `scheme://` with an ASCII scheme of two letters or more (so `C:\` stays a path).
fn source_location(source: &str) -> Result<Location, String> {
    let has_scheme = source.find("://").is_some_and(|i| {
        i > 1
            && source[..i].starts_with(|c: char| c.is_ascii_alphabetic())
            && source[..i].chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !has_scheme {
        return Ok(Location::File(PathBuf::from(source)));
    }
    let url = Url::parse(source).map_err(|e| format!("not a valid URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(Location::Url(url)),
        other => Err(format!("cannot read {other}: URLs; give an https:// or http:// URL or a local path")),
    }
}

fn location_name(location: &Location) -> String {
    match location {
        Location::File(path) => path.display().to_string(),
        Location::Url(url) => url.to_string(),
    }
}

/// Where an index child (or a robots.txt `Sitemap:`) is read from; see the module notes.
fn resolve_child(parent: &Location, loc: &str) -> Result<Location, String> {
    match Url::parse(loc) {
        Ok(url) => {
            if !matches!(url.scheme(), "http" | "https") {
                return Err(format!(
                    "cannot follow {}: URLs; only https:// and http:// sitemaps are read",
                    url.scheme()
                ));
            }
            if let Location::File(parent) = parent {
                if let Some(local) = local_copy(parent, &url) {
                    return Ok(Location::File(local));
                }
            }
            Ok(Location::Url(url))
        }
        Err(url::ParseError::RelativeUrlWithoutBase) => match parent {
            Location::Url(base) => base.join(loc).map(Location::Url).map_err(|e| format!("not a valid URL: {e}")),
            Location::File(parent) => Ok(Location::File(parent_dir(parent).join(loc))),
        },
        Err(e) => Err(format!("not a valid URL: {e}")),
    }
}

fn parent_dir(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

/// The file beside a local index named like the URL's last path segment, if there is one.
fn local_copy(parent: &Path, url: &Url) -> Option<PathBuf> {
    let segment = url.path_segments()?.next_back()?;
    let name = percent_decode(segment)?;
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return None;
    }
    let candidate = parent_dir(parent).join(name);
    candidate.is_file().then_some(candidate)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The last error of a chain, if there is more than one.
fn innermost(error: &dyn std::error::Error) -> Option<String> {
    let mut last = error.source()?;
    while let Some(next) = last.source() {
        last = next;
    }
    Some(last.to_string())
}

// ---------------------------------------------------------------------------
// Bodies: files, downloads, gzip, the cap.

/// An opened body: a local file, or a download in a temporary file (deleted when this is dropped).
struct Body {
    file: File,
    /// The download was stopped at the cap: reaching its end means the cap was passed.
    truncated: bool,
    // Dropped after `file` (fields drop in order), so the file is closed before it is removed.
    _temp: TempPath,
}

impl Body {
    fn reader(self) -> Box<dyn Read> {
        Box::new(self)
    }
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read(buf)?;
        if n == 0 && self.truncated && !buf.is_empty() {
            return Err(io::Error::other(OverCap));
        }
        Ok(n)
    }
}

/// Removes a temporary file when dropped (on Unix it is removed as soon as it is open, so `None`).
struct TempPath(Option<PathBuf>);

impl Drop for TempPath {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = fs::remove_file(path);
        }
    }
}

fn temp_file() -> io::Result<(File, TempPath)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // A per-process random seed without a clock or an RNG dependency: std seeds RandomState randomly.
    let salt = std::collections::hash_map::RandomState::new().build_hasher().finish();
    let dir = std::env::temp_dir();
    for _ in 0..100 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(".indexq-sitemap-{}-{salt:016x}-{n}", std::process::id()));
        match OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
            Ok(file) => {
                if cfg!(unix) && fs::remove_file(&path).is_ok() {
                    return Ok((file, TempPath(None)));
                }
                return Ok((file, TempPath(Some(path))));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(io::ErrorKind::AlreadyExists, "no free temporary file name"))
}

/// The error a capped read returns past the cap.
#[derive(Debug)]
struct OverCap;

impl fmt::Display for OverCap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("over the size cap")
    }
}

impl std::error::Error for OverCap {}

fn is_over_cap(error: &io::Error) -> bool {
    error.get_ref().is_some_and(|inner| inner.is::<OverCap>())
}

fn io_problem(name: &str, error: &io::Error, cap: u64) -> Problem {
    let message = if is_over_cap(error) {
        let cap = human_size(cap);
        format!("larger than the {cap} cap (sitemap.max_bytes); nothing past the first {cap} was read")
    } else {
        format!("cannot read: {error}")
    };
    Problem { place: name.to_string(), message }
}

fn human_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= KIB && bytes % KIB == 0 {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} B")
    }
}

/// Passes at most `left` bytes; asked for more while more exist, it fails with [`OverCap`].
struct Capped<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            let mut probe = [0u8; 1];
            return loop {
                match self.inner.read(&mut probe) {
                    Ok(0) => break Ok(0),
                    Ok(_) => break Err(io::Error::other(OverCap)),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => break Err(e),
                }
            };
        }
        let max = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..max])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Undoes gzip found by its magic bytes, twice at most (a `.gz` file served with `Content-Encoding: gzip`).
fn decoded(mut reader: Box<dyn Read>) -> io::Result<Box<dyn Read>> {
    for _ in 0..2 {
        let (gzip, replay) = sniff_gzip(reader)?;
        if !gzip {
            return Ok(replay);
        }
        reader = Box::new(MultiGzDecoder::new(replay));
    }
    Ok(reader)
}

/// Reads the first two bytes and gives them back in front of the rest.
fn sniff_gzip(mut reader: Box<dyn Read>) -> io::Result<(bool, Box<dyn Read>)> {
    let mut head = [0u8; 2];
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    let gzip = got == 2 && head == GZIP_MAGIC;
    Ok((gzip, Box::new(Cursor::new(head[..got].to_vec()).chain(reader))))
}

// ---------------------------------------------------------------------------
// Line and column.

/// A `BufRead` that knows the line:column of what the XML parser has consumed. Columns count characters.
///
/// quick-xml consumes exactly the bytes of each event, except that after a text event it has already taken the
/// `<` that follows, which its `buffer_position` leaves out; so `mark` accepts a parser position at most one byte
/// behind what was consumed, and positions up to the end of the next event are found from the bytes since the mark.
struct Tracked<R> {
    inner: BufReader<R>,
    consumed: u64,
    line: u64,
    col: u64,
    /// Line:col before the last consumed byte, and that byte.
    before_last: (u64, u64),
    last: Option<u8>,
    mark_pos: u64,
    mark_line: u64,
    mark_col: u64,
    since_mark: Vec<u8>,
}

impl<R: Read> Tracked<R> {
    fn new(inner: R) -> io::Result<Tracked<R>> {
        let mut inner = BufReader::with_capacity(64 * 1024, inner);
        // A byte-order mark is neither shown by editors nor counted by quick-xml: drop it before counting.
        if inner.fill_buf()?.starts_with(UTF8_BOM) {
            inner.consume(UTF8_BOM.len());
        }
        Ok(Tracked {
            inner,
            consumed: 0,
            line: 1,
            col: 1,
            before_last: (1, 1),
            last: None,
            mark_pos: 0,
            mark_line: 1,
            mark_col: 1,
            since_mark: Vec::new(),
        })
    }

    /// Called with the parser's position before each event.
    fn mark(&mut self, pos: u64) {
        self.since_mark.clear();
        match (self.consumed.checked_sub(pos), self.last) {
            (Some(1), Some(byte)) => {
                (self.mark_line, self.mark_col) = self.before_last;
                self.since_mark.push(byte);
            }
            _ => (self.mark_line, self.mark_col) = (self.line, self.col),
        }
        self.mark_pos = pos;
    }

    fn mark_place(&self) -> (u64, u64) {
        (self.mark_line, self.mark_col)
    }

    /// Line:col of a parser position at or after the last mark.
    fn place_of(&self, pos: u64) -> (u64, u64) {
        let ahead = pos.saturating_sub(self.mark_pos).min(self.since_mark.len() as u64) as usize;
        advance((self.mark_line, self.mark_col), &self.since_mark[..ahead])
    }
}

fn advance((mut line, mut col): (u64, u64), bytes: &[u8]) -> (u64, u64) {
    for &byte in bytes {
        if byte == b'\n' {
            line += 1;
            col = 1;
        } else if byte & 0xC0 != 0x80 {
            col += 1;
        }
    }
    (line, col)
}

impl<R: Read> Read for Tracked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Tracked<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        let buffered = self.inner.buffer();
        let bytes = &buffered[..amt.min(buffered.len())];
        if let Some((&last, init)) = bytes.split_last() {
            self.before_last = advance((self.line, self.col), init);
            (self.line, self.col) = advance(self.before_last, &[last]);
            self.last = Some(last);
            self.consumed += bytes.len() as u64;
            self.since_mark.extend_from_slice(bytes);
        }
        self.inner.consume(amt);
    }
}

// ---------------------------------------------------------------------------
// Sitemap XML.

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
    place: String,
    unknown_entity: Option<String>,
}

impl Text {
    fn new(field: Field, place: String) -> Text {
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
    place: String,
    loc: Option<Text>,
    lastmod: Option<Text>,
}

/// What the event loop knows between events.
struct Parse<'a> {
    name: &'a str,
    each: &'a mut dyn FnMut(Entry),
    problems: &'a mut Vec<Problem>,
    children: Vec<Child>,
    kind: Option<Kind>,
    root_done: bool,
    open: Vec<(Vec<u8>, (u64, u64))>,
    item: Option<Item>,
    text: Option<Text>,
    bad_lastmods: usize,
    first_bad_lastmod: Option<(String, String)>,
}

impl Parse<'_> {
    fn place(&self, (line, col): (u64, u64)) -> String {
        format!("{}:{line}:{col}", self.name)
    }

    fn problem(&mut self, place: String, message: String) {
        self.problems.push(Problem { place, message });
    }

    /// Opens an element; false stops the parse (not a sitemap).
    fn open(&mut self, local: &[u8], at: (u64, u64)) -> bool {
        let place = self.place(at);
        match self.open.len() {
            0 => {
                let tag = String::from_utf8_lossy(local);
                if self.root_done {
                    self.problem(place, format!("malformed XML: a second root element <{tag}>"));
                    return false;
                }
                self.kind = match local {
                    b"urlset" => Some(Kind::Urlset),
                    b"sitemapindex" => Some(Kind::Index),
                    _ => {
                        let message =
                            format!("not a sitemap: the root element is <{tag}>, not <urlset> or <sitemapindex>");
                        self.problem(place, message);
                        return false;
                    }
                };
            }
            1 if self.kind.is_some_and(|k| k.item_tag().as_bytes() == local) => {
                self.item = Some(Item { place, loc: None, lastmod: None });
            }
            2 if self.item.is_some() => {
                let field = match local {
                    b"loc" => Some(Field::Loc),
                    b"lastmod" => Some(Field::Lastmod),
                    _ => None,
                };
                if let Some(field) = field {
                    self.text = Some(Text::new(field, place));
                }
            }
            _ => {}
        }
        self.open.push((local.to_vec(), at));
        true
    }

    fn close(&mut self) {
        if self.open.pop().is_none() {
            return;
        }
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
                crate::input::human_size(loc.trimmed_len() as u64),
                crate::input::human_size(MAX_URL_BYTES as u64),
                loc.value.chars().take(80).collect::<String>()
            );
            self.problem(loc.place, message);
            return;
        }
        let value = loc.value.trim();
        if value.is_empty() {
            self.problem(loc.place, "empty <loc>".to_string());
            return;
        }
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
                (self.each)(Entry { loc: value.to_string(), lastmod, place: loc.place });
            }
            Kind::Index => self.children.push(Child { loc: value.to_string(), place: loc.place }),
        }
    }

    fn push_text(&mut self, text: &str) {
        if let Some(t) = self.text.as_mut() {
            t.push(text);
        }
    }

    fn eof(&mut self, at: (u64, u64)) {
        if let Some((tag, opened)) = self.open.last() {
            let message = format!(
                "malformed XML: the file ends inside <{}> opened at {}:{}",
                String::from_utf8_lossy(tag),
                opened.0,
                opened.1
            );
            let place = self.place(at);
            self.problem(place, message);
        } else if self.kind.is_none() {
            self.problem(self.name.to_string(), "empty: no <urlset> or <sitemapindex> in it".to_string());
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
fn parse_sitemap(
    raw: Box<dyn Read>,
    name: &str,
    cap: u64,
    each: &mut dyn FnMut(Entry),
    problems: &mut Vec<Problem>,
) -> Vec<Child> {
    let tracked = match decoded(raw).and_then(|r| Tracked::new(Capped { inner: r, left: cap })) {
        Ok(tracked) => tracked,
        Err(e) => {
            problems.push(io_problem(name, &e, cap));
            return Vec::new();
        }
    };
    let mut xml = quick_xml::Reader::from_reader(tracked);
    let mut state = Parse {
        name,
        each,
        problems,
        children: Vec::new(),
        kind: None,
        root_done: false,
        open: Vec::new(),
        item: None,
        text: None,
        bad_lastmods: 0,
        first_bad_lastmod: None,
    };
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
            Ok(Event::Text(e)) if state.text.is_some() => match e.decode() {
                Ok(text) => state.push_text(&text),
                Err(err) => {
                    let place = state.place(at);
                    state.problem(place, format!("malformed XML: {err}"));
                    break;
                }
            },
            Ok(Event::CData(e)) if state.text.is_some() => match e.decode() {
                Ok(text) => state.push_text(&text),
                Err(err) => {
                    let place = state.place(at);
                    state.problem(place, format!("malformed XML: {err}"));
                    break;
                }
            },
            Ok(Event::GeneralRef(e)) if state.text.is_some() => {
                let resolved = match e.resolve_char_ref() {
                    Ok(Some(c)) => Some(c.to_string()),
                    Ok(None) => e
                        .decode()
                        .ok()
                        .and_then(|name| quick_xml::escape::resolve_predefined_entity(&name).map(str::to_string)),
                    Err(_) => None,
                };
                match resolved {
                    Some(text) => state.push_text(&text),
                    None => {
                        let raw = format!("&{};", String::from_utf8_lossy(&e));
                        if let Some(t) = state.text.as_mut() {
                            t.unknown_entity.get_or_insert(raw);
                        }
                    }
                }
            }
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

// ---------------------------------------------------------------------------
// robots.txt.

/// The `Sitemap:` lines of a robots.txt (any case, any spacing); other lines are ignored.
fn parse_robots(raw: Box<dyn Read>, name: &str, cap: u64, problems: &mut Vec<Problem>) -> Vec<Child> {
    let mut reader = match decoded(raw) {
        Ok(r) => BufReader::new(Capped { inner: r, left: cap }),
        Err(e) => {
            problems.push(io_problem(name, &e, cap));
            return Vec::new();
        }
    };
    let mut children = Vec::new();
    let mut bytes = Vec::new();
    let mut number = 0u64;
    loop {
        bytes.clear();
        match reader.read_until(b'\n', &mut bytes) {
            Ok(0) => break,
            Ok(_) => number += 1,
            Err(e) => {
                problems.push(io_problem(name, &e, cap));
                break;
            }
        }
        let line = String::from_utf8_lossy(&bytes);
        let line = if number == 1 { line.trim_start_matches('\u{feff}') } else { &line };
        let Some((key, value)) = line.split_once(':') else { continue };
        if !key.trim().eq_ignore_ascii_case("sitemap") {
            continue;
        }
        let indent = value.len() - value.trim_start().len();
        let col = line[..key.len() + 1 + indent].chars().count() + 1;
        let place = format!("{name}:{number}:{col}");
        match value.split_whitespace().next() {
            Some(loc) => children.push(Child { loc: loc.to_string(), place }),
            None => problems.push(Problem { place, message: "empty `Sitemap:` line".to_string() }),
        }
    }
    children
}

// ---------------------------------------------------------------------------
// lastmod.

/// Parses a sitemap lastmod: W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DDThh:mmTZD, with seconds and fractions); date-only means 00:00 UTC. None if unparseable.
///
/// Also accepted, as generators write them: a space or `t` for `T`, `z` for `Z`, `+hhmm` and `+hh` offsets, and a
/// time without offset, taken as UTC.
pub fn parse_lastmod(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    let (date, time) = match s.find(['T', 't', ' ']) {
        Some(i) => (&s[..i], Some(s[i + 1..].trim_start())),
        None => (s, None),
    };
    let mut parts = date.split('-');
    let year = digits(parts.next()?, 4)?;
    let month = parts.next().map_or(Some(1), |m| digits(m, 2))?;
    let day = match parts.next() {
        Some(d) => digits(d, 2)?,
        None if time.is_some() => return None,
        None => 1,
    };
    if parts.next().is_some() {
        return None;
    }
    // `year` has four digits, so it fits in i32.
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    let Some(time) = time else {
        return Some(date.and_time(NaiveTime::MIN).and_utc());
    };
    let (clock, offset) = split_offset(time)?;
    let mut fields = clock.split(':');
    let hour = digits(fields.next()?, 2)?;
    let minute = digits(fields.next()?, 2)?;
    let (second, nano) = match fields.next() {
        None => (0, 0),
        Some(sec) => {
            let (whole, fraction) = match sec.split_once('.') {
                Some((whole, fraction)) => (whole, Some(fraction)),
                None => (sec, None),
            };
            (digits(whole, 2)?, fraction.map_or(Some(0), nanos)?)
        }
    };
    if fields.next().is_some() {
        return None;
    }
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nano)?;
    Some(offset.from_local_datetime(&date.and_time(time)).single()?.with_timezone(&Utc))
}

/// Exactly `len` ASCII digits.
fn digits(s: &str, len: usize) -> Option<u32> {
    if s.len() != len || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// A decimal fraction of a second as nanoseconds (digits past the ninth are dropped).
fn nanos(fraction: &str) -> Option<u32> {
    if fraction.is_empty() || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut padded: String = fraction.chars().take(9).collect();
    while padded.len() < 9 {
        padded.push('0');
    }
    padded.parse().ok()
}

/// Splits `hh:mm[:ss[.s]]TZD` into the clock and its offset (none: UTC).
fn split_offset(time: &str) -> Option<(&str, FixedOffset)> {
    if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        return Some((clock.trim_end(), FixedOffset::east_opt(0)?));
    }
    let Some(i) = time.rfind(['+', '-']) else {
        return Some((time, FixedOffset::east_opt(0)?));
    };
    let (clock, zone) = time.split_at(i);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    // `zone` starts with the ASCII sign found above, so byte 1 is a character boundary.
    let zone = &zone[1..];
    let (hours, minutes) = match zone.split_once(':') {
        Some((h, m)) => (digits(h, 2)?, digits(m, 2)?),
        None if zone.len() == 4 => (digits(zone.get(..2)?, 2)?, digits(zone.get(2..)?, 2)?),
        None => (digits(zone, 2)?, 0),
    };
    if hours > 23 || minutes > 59 {
        return None;
    }
    // hours ≤ 23 and minutes ≤ 59, so the seconds fit in i32.
    let seconds = i32::try_from(hours * 3600 + minutes * 60).ok()?;
    Some((clock.trim_end(), FixedOffset::east_opt(sign * seconds)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use flate2::Compression;
    use std::collections::HashMap;
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};
    use std::thread::JoinHandle;

    const MIB: u64 = 1024 * 1024;

    fn client() -> reqwest::Client {
        reqwest::Client::builder().no_proxy().timeout(std::time::Duration::from_secs(10)).build().unwrap()
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn urlset(urls: &[(&str, Option<&str>)]) -> String {
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for (loc, lastmod) in urls {
            xml.push_str(&format!("  <url>\n    <loc>{loc}</loc>\n"));
            if let Some(lastmod) = lastmod {
                xml.push_str(&format!("    <lastmod>{lastmod}</lastmod>\n"));
            }
            xml.push_str("  </url>\n");
        }
        xml.push_str("</urlset>\n");
        xml
    }

    fn index(locs: &[&str]) -> String {
        let mut xml = String::from(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
        );
        for loc in locs {
            xml.push_str(&format!(
                "  <sitemap>\n    <loc>{loc}</loc>\n    <lastmod>2024-01-01</lastmod>\n  </sitemap>\n"
            ));
        }
        xml.push_str("</sitemapindex>\n");
        xml
    }

    fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
    }

    async fn read_all(reader: &mut Reader, source: &str) -> (Vec<Entry>, Vec<Problem>) {
        let mut entries = Vec::new();
        let problems = reader.read(source, &mut |e| entries.push(e)).await;
        (entries, problems)
    }

    fn locs(entries: &[Entry]) -> Vec<&str> {
        let mut locs: Vec<&str> = entries.iter().map(|e| e.loc.as_str()).collect();
        locs.sort();
        locs
    }

    /// A tiny HTTP/1.1 server on 127.0.0.1: fixed responses by path, one request per connection.
    struct Server {
        base: String,
        addr: SocketAddr,
        stop: Arc<AtomicBool>,
        requests: Arc<Mutex<Vec<String>>>,
        thread: Option<JoinHandle<()>>,
    }

    struct Response {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
        location: Option<String>,
    }

    fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Response {
        Response { status: 200, content_type, body: body.into(), location: None }
    }

    fn redirect(to: &str) -> Response {
        Response { status: 301, content_type: "text/plain", body: Vec::new(), location: Some(to.to_string()) }
    }

    /// The test certificate (tests/fixtures/tls: self-signed for 127.0.0.1 and localhost, valid until 2126).
    fn test_certificate() -> (Vec<u8>, Vec<u8>) {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tls");
        (fs::read(format!("{dir}/cert.der")).unwrap(), fs::read(format!("{dir}/key.der")).unwrap())
    }

    /// Answers one request on `stream` from `routes`.
    fn answer(mut stream: impl Read + Write, routes: &HashMap<String, Response>, requests: &Mutex<Vec<String>>) {
        let mut head = Vec::new();
        let mut chunk = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
            match stream.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        let head = String::from_utf8_lossy(&head);
        let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
        requests.lock().unwrap().push(path.clone());
        let (status, reason, content_type, body, location) = match routes.get(&path) {
            Some(r) => (
                r.status,
                if r.status == 200 { "OK" } else { "Nope" },
                r.content_type,
                &r.body[..],
                r.location.as_deref().map(|to| format!("Location: {to}\r\n")).unwrap_or_default(),
            ),
            None => (404, "Not Found", "text/plain", &b"not found"[..], String::new()),
        };
        let header = format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{location}Connection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(header.as_bytes());
        let _ = stream.write_all(body);
        let _ = stream.flush();
    }

    impl Server {
        fn start(routes: impl FnOnce(&str) -> HashMap<String, Response>) -> Server {
            Server::serve(false, routes)
        }

        /// The same over TLS with [`test_certificate`]: `https://127.0.0.1:PORT`.
        fn start_tls(routes: impl FnOnce(&str) -> HashMap<String, Response>) -> Server {
            Server::serve(true, routes)
        }

        fn serve(tls: bool, routes: impl FnOnce(&str) -> HashMap<String, Response>) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let base = format!("{}://{addr}", if tls { "https" } else { "http" });
            let routes = routes(&base);
            let stop = Arc::new(AtomicBool::new(false));
            let requests = Arc::new(Mutex::new(Vec::new()));
            let (stop2, requests2) = (stop.clone(), requests.clone());
            let config = tls.then(|| {
                use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
                let (cert, key) = test_certificate();
                let provider = Arc::new(rustls::crypto::ring::default_provider());
                let config = rustls::ServerConfig::builder_with_provider(provider)
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_no_client_auth()
                    .with_single_cert(
                        vec![CertificateDer::from(cert)],
                        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
                    )
                    .unwrap();
                Arc::new(config)
            });
            let thread = std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop2.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    match &config {
                        Some(config) => {
                            let Ok(conn) = rustls::ServerConnection::new(config.clone()) else { continue };
                            answer(rustls::StreamOwned::new(conn, stream), &routes, &requests2);
                        }
                        None => answer(stream, &routes, &requests2),
                    }
                }
            });
            Server { base, addr, stop, requests, thread: Some(thread) }
        }

        fn hits(&self, path: &str) -> usize {
            self.requests.lock().unwrap().iter().filter(|p| *p == path).count()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            let _ = TcpStream::connect(self.addr);
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }

    fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> String {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        path.display().to_string()
    }

    #[tokio::test]
    async fn urlset_with_lastmod_in_several_forms() {
        let dir = tempfile::tempdir().unwrap();
        let xml = urlset(&[
            ("https://e.com/year", Some("2024")),
            ("https://e.com/month", Some("2024-05")),
            ("https://e.com/day", Some("2024-05-06")),
            ("https://e.com/minutes", Some("2024-05-06T07:08+02:00")),
            ("https://e.com/seconds", Some("2024-05-06T07:08:09Z")),
            ("https://e.com/fraction", Some(" 2024-05-06T07:08:09.25-01:30 ")),
            ("https://e.com/none", None),
            ("https://e.com/bad", Some("last tuesday")),
        ]);
        let path = write(dir.path(), "sitemap.xml", &xml);
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &path).await;
        let got: Vec<(&str, Option<DateTime<Utc>>)> = entries.iter().map(|e| (e.loc.as_str(), e.lastmod)).collect();
        assert_eq!(
            got,
            vec![
                ("https://e.com/year", Some(utc(2024, 1, 1, 0, 0, 0))),
                ("https://e.com/month", Some(utc(2024, 5, 1, 0, 0, 0))),
                ("https://e.com/day", Some(utc(2024, 5, 6, 0, 0, 0))),
                ("https://e.com/minutes", Some(utc(2024, 5, 6, 5, 8, 0))),
                ("https://e.com/seconds", Some(utc(2024, 5, 6, 7, 8, 9))),
                ("https://e.com/fraction", Some(utc(2024, 5, 6, 8, 38, 9) + chrono::Duration::milliseconds(250))),
                ("https://e.com/none", None),
                ("https://e.com/bad", None),
            ]
        );
        // Each <url> takes 4 lines (3 without lastmod); <loc> is at column 5.
        assert_eq!(entries[0].place, format!("{path}:4:5"));
        assert_eq!(entries[1].place, format!("{path}:8:5"));
        assert_eq!(entries[7].place, format!("{path}:31:5"));
        assert_eq!(
            problems,
            vec![Problem {
                place: format!("{path}:32:5"),
                message: "<lastmod> \"last tuesday\" is not a W3C datetime; that URL goes without a lastmod".into(),
            }]
        );
    }

    #[tokio::test]
    async fn entities_cdata_and_trimming() {
        let dir = tempfile::tempdir().unwrap();
        let xml = "\u{feff}<urlset>\n<url><loc>\n   https://e.com/?a=1&amp;b=2&#x41;&#66;&lt;  \n</loc></url>\n\
                   <url><loc><![CDATA[ https://e.com/?x=1&y=<2> ]]></loc></url>\n\
                   <url><loc>https://e.com/<![CDATA[é]]>&apos;s</loc></url>\n\
                   <url><loc>https://e.com/&nbsp;</loc></url>\n\
                   <url><loc>  </loc></url>\n\
                   <url><loc/></url>\n\
                   <url><lastmod>2024-01-01</lastmod></url>\n\
                   </urlset>";
        let path = write(dir.path(), "s.xml", xml);
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &path).await;
        let got: Vec<&str> = entries.iter().map(|e| e.loc.as_str()).collect();
        assert_eq!(got, vec!["https://e.com/?a=1&b=2AB<", "https://e.com/?x=1&y=<2>", "https://e.com/é's"]);
        assert_eq!(entries[0].place, format!("{path}:2:6"));
        let places: Vec<(&str, &str)> = problems.iter().map(|p| (p.place.as_str(), p.message.as_str())).collect();
        assert_eq!(places.len(), 4, "{problems:#?}");
        assert_eq!(places[0].0, format!("{path}:7:6"));
        assert!(places[0].1.starts_with("unknown entity &nbsp; in <loc>"), "{}", places[0].1);
        assert_eq!(places[1], (format!("{path}:8:6").as_str(), "empty <loc>"));
        assert_eq!(places[2], (format!("{path}:9:6").as_str(), "empty <loc>"));
        assert_eq!(places[3], (format!("{path}:10:1").as_str(), "<url> without <loc>"));
    }

    #[tokio::test]
    async fn extensions_and_namespaces_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<?xml-stylesheet type="text/xsl" href="/sitemap.xsl"?>
<!-- generated -->
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9"
        xmlns:video="http://www.google.com/schemas/sitemap-video/1.1"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>https://e.com/page</loc>
    <xhtml:link rel="alternate" hreflang="de" href="https://e.com/de/page"/>
    <image:image><image:loc>https://e.com/img.png</image:loc></image:image>
    <video:video><video:content_loc>https://e.com/v.mp4</video:content_loc><video:player_loc>https://e.com/p</video:player_loc></video:video>
    <news:news><news:publication><news:name>E</news:name></news:publication><news:publication_date>2024-02-03</news:publication_date></news:news>
    <changefreq>daily</changefreq><priority>0.5</priority>
    <lastmod>2024-02-03T04:05:06+00:00</lastmod>
  </url>
  <sm:url xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9"><sm:loc>https://e.com/prefixed</sm:loc></sm:url>
</urlset>"#;
        let path = write(dir.path(), "s.xml", xml);
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &path).await;
        assert_eq!(problems, vec![]);
        assert_eq!(
            entries,
            vec![
                Entry {
                    loc: "https://e.com/page".into(),
                    lastmod: Some(utc(2024, 2, 3, 4, 5, 6)),
                    place: format!("{path}:10:5"),
                },
                Entry { loc: "https://e.com/prefixed".into(), lastmod: None, place: format!("{path}:18:66") },
            ]
        );
    }

    #[tokio::test]
    async fn index_of_plain_and_gzipped_sitemaps_served() {
        let a = urlset(&[("https://e.com/a1", Some("2024-01-02")), ("https://e.com/a2", None)]);
        let b = urlset(&[("https://e.com/b1", Some("2024-03-04T05:06Z"))]);
        let server = Server::start(|base| {
            HashMap::from([
                (
                    "/sitemap.xml".to_string(),
                    ok(
                        "application/xml",
                        index(&[&format!("{base}/a.xml"), &format!("{base}/b.xml.gz"), &format!("{base}/a.xml#again")]),
                    ),
                ),
                ("/a.xml".to_string(), ok("application/xml", a.as_bytes())),
                ("/b.xml.gz".to_string(), ok("application/gzip", gzip(b.as_bytes()))),
            ])
        });
        let mut reader = Reader::new(client(), 50 * MIB);
        let source = format!("{}/sitemap.xml", server.base);
        let (entries, problems) = read_all(&mut reader, &source).await;
        assert_eq!(problems, vec![]);
        let got: Vec<(&str, Option<DateTime<Utc>>, &str)> =
            entries.iter().map(|e| (e.loc.as_str(), e.lastmod, e.place.as_str())).collect();
        let a_place = |line| format!("{}/a.xml:{line}:5", server.base);
        let b_place = format!("{}/b.xml.gz:4:5", server.base);
        assert_eq!(
            got,
            vec![
                ("https://e.com/a1", Some(utc(2024, 1, 2, 0, 0, 0)), a_place(4).as_str()),
                ("https://e.com/a2", None, a_place(8).as_str()),
                ("https://e.com/b1", Some(utc(2024, 3, 4, 5, 6, 0)), b_place.as_str()),
            ]
        );
        assert_eq!(server.hits("/a.xml"), 1);
        // Read once per Reader: a second read of the same source reads nothing.
        let (entries, problems) = read_all(&mut reader, &source).await;
        assert_eq!((entries.len(), problems.len()), (0, 0));
        assert_eq!(server.hits("/sitemap.xml"), 1);
    }

    #[tokio::test]
    async fn local_index_reads_local_copies_of_its_children() {
        let dir = tempfile::tempdir().unwrap();
        // The index names the live site; its children sit beside it.
        let a = urlset(&[("https://e.com/a1", Some("2024-01-02"))]);
        let b = urlset(&[("https://e.com/b1", Some("2024-03-04")), ("https://e.com/b2", None)]);
        write(dir.path(), "sitemap-a.xml", &a);
        write(dir.path(), "sitemap-b.xml.gz", gzip(b.as_bytes()));
        write(dir.path(), "c.xml", urlset(&[("https://e.com/c1", None)]));
        let root = write(
            dir.path(),
            "sitemap.xml",
            index(&["https://example.invalid/sitemap-a.xml", "https://example.invalid/sitemap-b.xml.gz", "c.xml"]),
        );
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &root).await;
        assert_eq!(problems, vec![]);
        let b_path = dir.path().join("sitemap-b.xml.gz").display().to_string();
        assert_eq!(
            entries.iter().map(|e| (e.loc.as_str(), e.lastmod)).collect::<Vec<_>>(),
            vec![
                ("https://e.com/a1", Some(utc(2024, 1, 2, 0, 0, 0))),
                ("https://e.com/b1", Some(utc(2024, 3, 4, 0, 0, 0))),
                ("https://e.com/b2", None),
                ("https://e.com/c1", None),
            ]
        );
        assert_eq!(entries[2].place, format!("{b_path}:8:5"));
    }

    #[tokio::test]
    async fn gzip_is_found_by_its_magic_bytes() {
        let body = urlset(&[("https://e.com/z", Some("2024-06-07"))]);
        let server = Server::start(|_| {
            HashMap::from([
                ("/sitemap".to_string(), ok("application/octet-stream", gzip(body.as_bytes()))),
                // A .gz served gzipped once more (Content-Encoding: gzip over a .gz file).
                ("/twice.xml.gz".to_string(), ok("application/octet-stream", gzip(&gzip(body.as_bytes())))),
            ])
        });
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &format!("{}/sitemap", server.base)).await;
        assert_eq!(problems, vec![]);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].lastmod, Some(utc(2024, 6, 7, 0, 0, 0)));
        assert_eq!(entries[0].place, format!("{}/sitemap:4:5", server.base));
        let (entries, problems) = read_all(&mut reader, &format!("{}/twice.xml.gz", server.base)).await;
        assert_eq!((locs(&entries), problems), (vec!["https://e.com/z"], vec![]));

        // A local gzip file without a .gz name.
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "sitemap.xml", gzip(body.as_bytes()));
        let (entries, problems) = read_all(&mut reader, &path).await;
        assert_eq!((locs(&entries), problems), (vec!["https://e.com/z"], vec![]));
    }

    #[tokio::test]
    async fn robots_txt_sitemap_lines_are_followed() {
        let server = Server::start(|base| {
            HashMap::from([
                (
                    "/robots.txt".to_string(),
                    ok(
                        "text/plain",
                        format!(
                            "User-agent: *\nDisallow: /private\n  sitemap :  {base}/one.xml\r\nSITEMAP:{base}/two.xml # news\n# Sitemap: {base}/no.xml\n"
                        ),
                    ),
                ),
                ("/one.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/1", None)]))),
                ("/two.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/2", None)]))),
            ])
        });
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &format!("{}/robots.txt", server.base)).await;
        assert_eq!(problems, vec![]);
        assert_eq!(locs(&entries), vec!["https://e.com/1", "https://e.com/2"]);
        assert_eq!(server.hits("/no.xml"), 0);

        // A local robots.txt; its sitemap is read from beside it, a missing one names the robots.txt line.
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "sitemap.xml", urlset(&[("https://e.com/local", None)]));
        let robots = write(
            dir.path(),
            "robots.txt",
            format!("Sitemap: https://example.invalid/sitemap.xml\nSitemap: {}/gone.xml\n", server.base),
        );
        let (entries, problems) = read_all(&mut reader, &robots).await;
        assert_eq!(locs(&entries), vec!["https://e.com/local"]);
        assert_eq!(
            problems,
            vec![Problem {
                place: format!("{}/gone.xml", server.base),
                message: format!("HTTP 404 Not Found (listed at {robots}:2:10)"),
            }]
        );
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let bare = write(&sub, "ROBOTS.TXT", "User-agent: *\n");
        let (_, problems) = read_all(&mut reader, &bare).await;
        assert_eq!(problems, vec![Problem { place: bare, message: "no `Sitemap:` line in it".into() }]);
    }

    #[tokio::test]
    async fn a_cycle_is_reported_with_its_loop() {
        let server = Server::start(|base| {
            HashMap::from([
                (
                    "/index.xml".to_string(),
                    ok("text/xml", index(&[&format!("{base}/index.xml"), &format!("{base}/a.xml")])),
                ),
                ("/a.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/a", None)]))),
            ])
        });
        let mut reader = Reader::new(client(), 50 * MIB);
        let source = format!("{}/index.xml", server.base);
        let (entries, problems) = read_all(&mut reader, &source).await;
        assert_eq!(locs(&entries), vec!["https://e.com/a"]);
        assert_eq!(
            problems,
            vec![Problem {
                place: format!("{source}:4:5"),
                message: format!("sitemap index loop: {source} → {source}; not followed again"),
            }]
        );
        assert_eq!(server.hits("/index.xml"), 1);

        // a.xml → b.xml → a.xml, as local files.
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), "a.xml", index(&["https://e.com/b.xml"]));
        let b = write(dir.path(), "b.xml", index(&["https://e.com/a.xml", "https://e.com/c.xml"]));
        write(dir.path(), "c.xml", urlset(&[("https://e.com/c", None)]));
        let (entries, problems) = read_all(&mut reader, &a).await;
        assert_eq!(locs(&entries), vec!["https://e.com/c"]);
        assert_eq!(
            problems,
            vec![Problem {
                place: format!("{b}:4:5"),
                message: format!("sitemap index loop: {a} → {b} → {a}; not followed again"),
            }]
        );
    }

    #[tokio::test]
    async fn a_missing_and_a_malformed_child_do_not_stop_the_good_one() {
        let bad = "<?xml version=\"1.0\"?>\n<urlset>\n  <url><loc>https://e.com/early</loc></url>\n  <url><loc>https://é.com/x</lo></url>\n</urlset>\n";
        let unclosed = "<urlset>\n<url><loc>https://e.com/u</loc></url>\n<url><loc>https://e.com/v</loc";
        let server = Server::start(|base| {
            HashMap::from([
                (
                    "/index.xml".to_string(),
                    ok(
                        "text/xml",
                        index(&[
                            &format!("{base}/missing.xml"),
                            &format!("{base}/bad.xml"),
                            &format!("{base}/unclosed.xml.gz"),
                            &format!("{base}/good.xml"),
                        ]),
                    ),
                ),
                ("/bad.xml".to_string(), ok("text/xml", bad)),
                ("/unclosed.xml.gz".to_string(), ok("application/gzip", gzip(unclosed.as_bytes()))),
                ("/good.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/good", Some("2024-01-01"))]))),
            ])
        });
        let base = &server.base;
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &format!("{base}/index.xml")).await;
        assert_eq!(locs(&entries), vec!["https://e.com/early", "https://e.com/good", "https://e.com/u"]);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert_eq!(problems[0].place, format!("{base}/missing.xml"));
        assert_eq!(problems[0].message, format!("HTTP 404 Not Found (listed at {base}/index.xml:4:5)"));
        // `</lo>` starts at line 4, column 28 (é is one column).
        assert_eq!(problems[1].place, format!("{base}/bad.xml:4:28"));
        assert!(problems[1].message.starts_with("malformed XML: "), "{}", problems[1].message);
        assert!(problems[1].message.contains("lo"), "{}", problems[1].message);
        // The unclosed `</loc` starts at line 3, column 26.
        assert_eq!(problems[2].place, format!("{base}/unclosed.xml.gz:3:26"));
        assert!(problems[2].message.starts_with("malformed XML: "), "{}", problems[2].message);
    }

    #[tokio::test]
    async fn a_loc_over_the_url_cap_is_a_problem_at_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = Reader::new(client(), 50 * MIB);
        let base = "https://e.com/";
        let at_cap = format!("{base}{}", "b".repeat(MAX_URL_BYTES - base.len()));
        // Entities split the text into several pieces; the count goes on across them (one byte over).
        let over = format!("{base}{}&amp;c", "c".repeat(MAX_URL_BYTES - base.len() - 1));
        let xml = format!(
            "<urlset>\n<url><loc>\n  {at_cap}\n</loc></url>\n<url><loc>{over}</loc></url>\n<url><loc>{base}ok</loc></url>\n</urlset>"
        );
        let path = write(dir.path(), "s.xml", xml);
        let (entries, problems) = read_all(&mut reader, &path).await;
        let lens: Vec<usize> = entries.iter().map(|e| e.loc.len()).collect();
        assert_eq!(lens, [MAX_URL_BYTES, "https://e.com/ok".len()], "the one at the cap is read, whitespace aside");
        assert!(entries[0].loc == at_cap);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].place, format!("{path}:5:6"), "the place of its <loc>");
        assert!(
            problems[0].message.starts_with("<loc> is 8.0 KiB long; a URL is at most 8 KiB"),
            "{}",
            problems[0].message
        );

        // An index child too.
        let long_child = format!("{base}{}", "d".repeat(100_000));
        let path = write(dir.path(), "i.xml", index(&[&long_child]));
        let (entries, problems) = read_all(&mut reader, &path).await;
        assert!(entries.is_empty());
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(problems[0].message.contains("97.7 KiB"), "{}", problems[0].message);
        assert!(problems[0].message.len() < 400, "{}", problems[0].message);
    }

    /// The real fetch client, trusting the test certificate.
    fn fetch_client_trusting_the_test_certificate() -> reqwest::Client {
        let http = crate::config::HttpSettings {
            connect_timeout: std::time::Duration::from_secs(5),
            timeout: std::time::Duration::from_secs(10),
        };
        let root = reqwest::Certificate::from_der(&test_certificate().0).unwrap();
        crate::engines::fetch_client_builder(&http).no_proxy().add_root_certificate(root).build().unwrap()
    }

    #[tokio::test]
    async fn a_redirect_from_https_to_http_is_refused_and_named() {
        let plain = Server::start(|_| {
            HashMap::from([("/ok.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/local", None)])))])
        });
        let plain_base = plain.base.clone();
        let tls = Server::start_tls(|base| {
            HashMap::from([
                ("/down.xml".to_string(), redirect("http://sitemaps.example/sitemap.xml")),
                ("/to-loopback.xml".to_string(), redirect(&format!("{plain_base}/ok.xml"))),
                ("/moved.xml".to_string(), redirect(&format!("{base}/secure.xml"))),
                ("/secure.xml".to_string(), ok("text/xml", urlset(&[("https://e.com/secure", None)]))),
                (
                    "/index.xml".to_string(),
                    ok("text/xml", index(&[&format!("{base}/down.xml"), &format!("{base}/moved.xml")])),
                ),
            ])
        });
        let base = &tls.base;
        let mut reader = Reader::new(fetch_client_trusting_the_test_certificate(), 50 * MIB);

        // https → http on another host: refused, nothing fetched there, and said so.
        let (entries, problems) = read_all(&mut reader, &format!("{base}/down.xml")).await;
        assert!(entries.is_empty());
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert_eq!(problems[0].place, format!("{base}/down.xml"));
        assert_eq!(
            problems[0].message,
            format!(
                "cannot fetch: the redirect from {base}/down.xml to http://sitemaps.example/sitemap.xml was refused: it \
                 leaves https for plain http, where anyone on the way can change what is read"
            )
        );

        // In an index: that child is the problem (with where it was listed), its sibling is read.
        let (entries, problems) = read_all(
            &mut Reader::new(fetch_client_trusting_the_test_certificate(), 50 * MIB),
            &format!("{base}/index.xml"),
        )
        .await;
        assert_eq!(locs(&entries), vec!["https://e.com/secure"]);
        assert_eq!(problems.len(), 1, "{problems:#?}");
        assert!(
            problems[0].message.contains("was refused") && problems[0].message.contains("(listed at "),
            "{}",
            problems[0].message
        );

        // https → https is followed, and https → http on this machine (loopback) too.
        let (entries, problems) = read_all(&mut reader, &format!("{base}/to-loopback.xml")).await;
        assert!(problems.is_empty(), "{problems:#?}");
        assert_eq!(locs(&entries), vec!["https://e.com/local"]);
        assert_eq!(plain.hits("/ok.xml"), 1);
    }

    #[tokio::test]
    async fn malformed_local_files_name_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let mut reader = Reader::new(client(), 50 * MIB);
        let cases: [(&str, &str, &str, &str); 5] = [
            (
                "eof.xml",
                "<urlset>\n  <url>\n    <loc>https://e.com/</loc>\n",
                "4:1",
                "the file ends inside <url> opened at 2:3",
            ),
            (
                "html.xml",
                "<!DOCTYPE html>\n<html><body>hi</body></html>",
                "2:1",
                "not a sitemap: the root element is <html>",
            ),
            ("two.xml", "<urlset></urlset>\n<urlset></urlset>", "2:1", "a second root element"),
            ("stray.xml", "<urlset>\n</url>\n</urlset>", "2:1", "malformed XML: "),
            ("empty.xml", "  \n", "", "empty: no <urlset> or <sitemapindex> in it"),
        ];
        for (name, xml, at, message) in cases {
            let path = write(dir.path(), name, xml);
            let (_, problems) = read_all(&mut reader, &path).await;
            assert_eq!(problems.len(), 1, "{name}: {problems:#?}");
            let place = if at.is_empty() { path.clone() } else { format!("{path}:{at}") };
            assert_eq!(problems[0].place, place, "{name}");
            assert!(problems[0].message.contains(message), "{name}: {}", problems[0].message);
        }
        let missing = dir.path().join("nope.xml").display().to_string();
        let (_, problems) = read_all(&mut reader, &missing).await;
        assert_eq!(problems[0].place, missing);
        assert!(problems[0].message.starts_with("cannot read: "), "{}", problems[0].message);
        let (_, problems) = read_all(&mut reader, "ftp://e.com/sitemap.xml").await;
        assert!(problems[0].message.contains("cannot read ftp: URLs"), "{}", problems[0].message);
    }

    /// 12 URLs of 62 bytes each after a header; the cap falls inside the fourth.
    fn big_sitemap() -> (String, u64) {
        let urls: Vec<String> = (10..22).map(|i| format!("https://e.com/page-{i}")).collect();
        let xml = urlset(&urls.iter().map(|u| (u.as_str(), None)).collect::<Vec<_>>());
        let cap = xml.find("https://e.com/page-13").unwrap() as u64 + 5;
        (xml, cap)
    }

    fn assert_capped(entries: &[Entry], problems: &[Problem], name: &str, cap: u64) {
        assert_eq!(locs(entries), vec!["https://e.com/page-10", "https://e.com/page-11", "https://e.com/page-12"]);
        assert_eq!(
            problems,
            vec![Problem {
                place: name.to_string(),
                message: format!(
                    "larger than the {cap} B cap (sitemap.max_bytes); nothing past the first {cap} B was read"
                ),
            }]
        );
    }

    #[tokio::test]
    async fn a_body_over_the_cap_stops_there() {
        let (xml, cap) = big_sitemap();
        let server = Server::start(|_| {
            HashMap::from([
                ("/big.xml".to_string(), ok("text/xml", xml.as_bytes())),
                ("/big.xml.gz".to_string(), ok("application/gzip", gzip(xml.as_bytes()))),
            ])
        });
        let dir = tempfile::tempdir().unwrap();
        let plain = write(dir.path(), "big.xml", &xml);
        let gz = write(dir.path(), "big.xml.gz", gzip(xml.as_bytes()));
        for source in [format!("{}/big.xml", server.base), format!("{}/big.xml.gz", server.base), plain, gz] {
            let mut reader = Reader::new(client(), cap);
            let (entries, problems) = read_all(&mut reader, &source).await;
            assert_capped(&entries, &problems, &source, cap);
        }
        // Exactly at the cap is within it.
        let mut reader = Reader::new(client(), xml.len() as u64);
        let (entries, problems) = read_all(&mut reader, &format!("{}/big.xml", server.base)).await;
        assert_eq!((entries.len(), problems), (12, vec![]));
        assert_eq!(human_size(50 * MIB), "50 MiB");
        assert_eq!(human_size(512 * 1024), "512 KiB");
    }

    #[tokio::test]
    async fn nesting_deeper_than_three_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let d0 = write(dir.path(), "d0.xml", index(&["https://e.com/d1.xml"]));
        write(dir.path(), "d1.xml", index(&["https://e.com/d2.xml"]));
        write(dir.path(), "d2.xml", index(&["https://e.com/d3.xml", "https://e.com/u3.xml"]));
        let d3 = write(dir.path(), "d3.xml", index(&["https://e.com/d4.xml", "https://e.com/u4.xml"]));
        write(dir.path(), "d4.xml", urlset(&[("https://e.com/deep", None)]));
        write(dir.path(), "u4.xml", urlset(&[("https://e.com/deep2", None)]));
        write(dir.path(), "u3.xml", urlset(&[("https://e.com/u3", None)]));
        let mut reader = Reader::new(client(), 50 * MIB);
        let (entries, problems) = read_all(&mut reader, &d0).await;
        assert_eq!(locs(&entries), vec!["https://e.com/u3"]);
        let p = |n: &str| dir.path().join(n).display().to_string();
        assert_eq!(
            problems,
            vec![Problem {
                place: format!("{d3}:4:5"),
                message: format!(
                    "sitemap indexes nested more than 3 deep ({} → {} → {} → {} → {}): 2 child sitemaps of this index not read",
                    d0,
                    p("d1.xml"),
                    p("d2.xml"),
                    d3,
                    p("d4.xml")
                ),
            }]
        );
    }

    #[test]
    fn parse_lastmod_table() {
        let ms = chrono::Duration::milliseconds;
        let table: &[(&str, Option<DateTime<Utc>>)] = &[
            ("2024", Some(utc(2024, 1, 1, 0, 0, 0))),
            ("2024-02", Some(utc(2024, 2, 1, 0, 0, 0))),
            ("2024-02-29", Some(utc(2024, 2, 29, 0, 0, 0))),
            ("2024-02-29T23:30Z", Some(utc(2024, 2, 29, 23, 30, 0))),
            ("2024-02-29T23:30+01:00", Some(utc(2024, 2, 29, 22, 30, 0))),
            ("2024-02-29T23:30:15-05:00", Some(utc(2024, 3, 1, 4, 30, 15))),
            ("2024-02-29T23:30:15.5Z", Some(utc(2024, 2, 29, 23, 30, 15) + ms(500))),
            (
                "2024-02-29T23:30:15.123456789123Z",
                Some(utc(2024, 2, 29, 23, 30, 15) + chrono::Duration::nanoseconds(123_456_789)),
            ),
            ("  2024-02-29t23:30:15z ", Some(utc(2024, 2, 29, 23, 30, 15))),
            ("2024-02-29 23:30:15+0100", Some(utc(2024, 2, 29, 22, 30, 15))),
            ("2024-02-29T23:30:15+01", Some(utc(2024, 2, 29, 22, 30, 15))),
            ("2024-02-29T23:30:15", Some(utc(2024, 2, 29, 23, 30, 15))),
            ("", None),
            ("yesterday", None),
            ("2023-02-29", None),
            ("2024-13", None),
            ("2024-1-5", None),
            ("24-01-05", None),
            ("+2024", None),
            ("2024-01-05T", None),
            ("2024-01-05T25:00Z", None),
            ("2024-01-05T10Z", None),
            ("2024-01-05T10:00:61Z", None),
            ("2024-01-05T10:00:00.Z", None),
            ("2024-01-05T10:00:00+24:00", None),
            ("2024-01-05T10:00:00+1:00", None),
            ("2024-01T10:00Z", None),
            ("2024-01-05T10:00:00:00Z", None),
            ("2024-01-05-01", None),
            ("2024-01-05T10:+0:00Z", None),
            ("2024-01-05T10:00+é", None),
            ("Mon, 05 Jan 2024 10:00:00 GMT", None),
        ];
        for (input, expected) in table {
            assert_eq!(parse_lastmod(input), *expected, "{input:?}");
        }
    }

    #[test]
    fn the_read_future_is_send() {
        fn is_send<T: Send>(_: &T) {}
        let mut reader = Reader::new(client(), 1);
        let mut each = |_: Entry| {};
        let future = reader.read("x.xml", &mut each);
        is_send(&future);
    }

    #[test]
    fn columns_count_characters_and_follow_text_before_markup() {
        let text = "<a>\nxé<b/>  &amp;<c>\r\n</c></a>";
        let mut xml = quick_xml::Reader::from_reader(Tracked::new(text.as_bytes()).unwrap());
        let mut buf = Vec::new();
        let mut seen = Vec::new();
        loop {
            let pos = xml.buffer_position();
            xml.get_mut().mark(pos);
            let event = xml.read_event_into(&mut buf).unwrap();
            let (line, col) = xml.get_ref().mark_place();
            let name = match &event {
                Event::Eof => break,
                Event::Start(e) | Event::Empty(e) => format!("<{}>", String::from_utf8_lossy(e.name().as_ref())),
                Event::End(e) => format!("</{}>", String::from_utf8_lossy(e.name().as_ref())),
                Event::Text(_) => "text".to_string(),
                Event::GeneralRef(_) => "ref".to_string(),
                _ => "other".to_string(),
            };
            seen.push(format!("{name}@{line}:{col}"));
            buf.clear();
        }
        assert_eq!(
            seen,
            vec![
                "<a>@1:1",
                "text@1:4",
                "<b>@2:3",
                "text@2:7",
                "ref@2:9",
                "<c>@2:14",
                "text@2:17",
                "</c>@3:1",
                "</a>@3:5"
            ]
        );
    }

    #[test]
    fn local_copy_rules() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a b.xml", "x");
        let parent = dir.path().join("index.xml");
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(local_copy(&parent, &url("https://e.com/x/a%20b.xml")), Some(dir.path().join("a b.xml")));
        assert_eq!(local_copy(&parent, &url("https://e.com/x/other.xml")), None);
        assert_eq!(local_copy(&parent, &url("https://e.com/x/")), None);
        assert_eq!(local_copy(&parent, &url("https://e.com/%2e%2e")), None);
        assert_eq!(local_copy(&parent, &url("https://e.com/a%2fb.xml")), None);
        assert_eq!(percent_decode("%zz%41"), Some("%zzA".to_string()));
    }
}
