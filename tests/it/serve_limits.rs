//! `indexq serve`'s connection limits, through the binary and raw sockets:
//! a slowloris client is cut at `[serve] header_timeout` counted from its
//! first byte (an idle keep-alive is not), a slow body at `min_body_rate`,
//! an address over `max_connections_per_address` is refused while another
//! address is served, and `reserved_connections` keep room for `/healthz`,
//! `/readyz` and token holders when every other connection is taken.
#![cfg(unix)]

use crate::serve::{with_tokens, Refusal, Served};
use crate::support::*;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpStream};
use std::time::{Duration, Instant};

const NOW: &str = "2026-12-03T09:00:00Z";

fn addr(served: &Served) -> String {
    served.base.trim_start_matches("http://").to_string()
}

/// Reads until the server closes the connection (or resets it), for at
/// most `limit`: what was read, and when it ended.
fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let started = Instant::now();
    stream.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                panic!("still open after {limit:?} (read so far: {:?})", String::from_utf8_lossy(&got))
            }
            Err(_) => break,
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), started.elapsed())
}

/// An answer read off a raw socket: its status, and its body as a refusal.
fn raw_refusal(answer: &str) -> (u16, Refusal) {
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{answer:?}"));
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no body: {answer:?}"));
    assert!(head.to_ascii_lowercase().contains("content-type: application/json"), "{head}");
    let refusal = serde_json::from_str(body).unwrap_or_else(|e| panic!("not a refusal ({e}): {body}"));
    (status, refusal)
}

/// One whole request and its answer on a keep-alive connection.
fn get_on(stream: &mut TcpStream, path: &str) -> String {
    write!(stream, "GET {path} HTTP/1.1\r\nHost: indexq\r\n\r\n").unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    // /healthz's body is a small JSON document: the answer is whole once it ends with `}`.
    while !got.ends_with(b"}") {
        let n = stream.read(&mut buf).expect("an answer within 5 s");
        assert!(n > 0, "closed before answering: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

#[test]
fn headers_dribbled_are_cut_at_header_timeout_from_their_first_byte() {
    let mut sb = Sandbox::new();
    sb.extra.push_str("\n[serve]\nheader_timeout = \"2s\"\nidle_timeout = \"30s\"\n");
    sb.write_config();
    let served = Served::start(&sb, &[]);

    // A keep-alive connection silent for longer than header_timeout between
    // two requests stays open: the deadline starts at a request's first byte.
    let mut kept = TcpStream::connect(addr(&served)).unwrap();
    assert!(get_on(&mut kept, "/healthz").starts_with("HTTP/1.1 200"));
    std::thread::sleep(Duration::from_millis(2600));
    assert!(get_on(&mut kept, "/healthz").starts_with("HTTP/1.1 200"), "an idle keep-alive is not cut");

    // A client dribbling its headers, a byte every 200 ms (far inside
    // idle_timeout): closed about 2 s after its first byte.
    let mut slow = TcpStream::connect(addr(&served)).unwrap();
    let mut writer = slow.try_clone().unwrap();
    let dribble = std::thread::spawn(move || {
        for b in b"GET /healthz HTTP/1.1\r\nHost: indexq\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if writer.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    });
    let (answer, after) = read_to_close(&mut slow, Duration::from_secs(10));
    assert!(!answer.starts_with("HTTP/1.1 2"), "{answer}");
    assert!(after >= Duration::from_millis(1500) && after < Duration::from_secs(4), "closed after {after:?}");
    dribble.join().unwrap();

    assert_eq!(served.get("/healthz").status(), 200, "still up");
    served.stop().code(0);
}

#[test]
fn a_body_slower_than_min_body_rate_gets_408_and_is_closed() {
    let mut sb = Sandbox::new();
    sb.extra.push_str("\n[serve]\nheader_timeout = \"1s\"\nmin_body_rate = 100\n");
    sb.write_config();
    let served = Served::start(&sb, &[]);
    let mut slow = TcpStream::connect(addr(&served)).unwrap();
    let mut writer = slow.try_clone().unwrap();
    writer
        .write_all(
            b"POST /v1/urls HTTP/1.1\r\nHost: indexq\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n",
        )
        .unwrap();
    // 10 bytes every 500 ms: 20 bytes a second, a fifth of the rate.
    let started = Instant::now();
    let dribble = std::thread::spawn(move || {
        for _ in 0..40 {
            if writer.write_all(b"https://ex").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    let (answer, _) = read_to_close(&mut slow, Duration::from_secs(10));
    let after = started.elapsed();
    let (status, refusal) = raw_refusal(&answer);
    assert_eq!(status, 408, "{answer}");
    assert_eq!(refusal.error, "body_too_slow");
    assert!(refusal.message.contains("100 bytes a second ([serve] min_body_rate)"), "{}", refusal.message);
    assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
    assert!(after >= Duration::from_millis(900) && after < Duration::from_secs(4), "cut after {after:?}");
    dribble.join().unwrap();

    // A body at a good pace is taken.
    let body = format!("{}/a\n", sb.site.url());
    assert_eq!(served.post("/v1/urls", Some("text/plain"), body).status(), 202);
    served.stop().code(0);
}

#[test]
fn an_address_over_its_cap_is_refused_while_another_address_is_served() {
    let mut sb = Sandbox::new();
    sb.extra.push_str("\n[serve]\nmax_connections_per_address = 2\n");
    sb.write_config();
    let served = Served::start(&sb, &[]);
    let held: Vec<_> = (0..2).map(|_| TcpStream::connect(addr(&served)).unwrap()).collect();
    // Let serve accept both before the third.
    std::thread::sleep(Duration::from_millis(200));

    let mut third = TcpStream::connect(addr(&served)).unwrap();
    let (answer, _) = read_to_close(&mut third, Duration::from_secs(5));
    let (status, refusal) = raw_refusal(&answer);
    assert_eq!(status, 503, "{answer}");
    assert_eq!(refusal.error, "too_many_connections");
    assert_eq!(refusal.retry_after, Some(1));
    assert!(answer.to_ascii_lowercase().contains("\r\nretry-after: 1\r\n"), "{answer}");
    assert!(refusal.message.contains("max_connections_per_address"), "{}", refusal.message);

    // Another loopback address is served, /healthz included.
    let other = reqwest::blocking::Client::builder()
        .local_address(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)))
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    assert_eq!(other.get(format!("{}/healthz", served.base)).send().unwrap().status(), 200);
    assert_eq!(other.get(format!("{}/readyz", served.base)).send().unwrap().status(), 200);

    // Once one of the address's connections closes, it is served again.
    drop(held);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(served.get("/healthz").status(), 200);
    served.stop().code(0);
}

#[test]
fn reserved_connections_serve_health_checks_and_tokens_when_the_rest_are_taken() {
    let mut sb = with_tokens();
    sb.extra.push_str("\n[serve]\nmax_connections = 4\nreserved_connections = 2\n");
    sb.write_config();
    let run = sb.indexq(&["serve", "--listen", "127.0.0.1:0"]).now(NOW).env("GHOST_TOKEN", GHOST_TOKEN);
    let served = Served::start_run(run);
    // Every ordinary connection taken by clients that send nothing.
    let held: Vec<_> = (0..4).map(|_| TcpStream::connect(addr(&served)).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let fresh = || reqwest::blocking::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let url = |path: &str| format!("{}{path}", served.base);

    // Anonymous, or with a token that is not one: 503, not 401, and closed.
    for token in [None, Some("not-a-token")] {
        let mut request = fresh().get(url("/v1/queue"));
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        let response = request.send().unwrap();
        assert_eq!(response.headers()["connection"], "close");
        let (status, refusal, retry) = crate::serve::refusal(response);
        assert_eq!((status, refusal.error.as_str(), retry.as_deref()), (503, "too_many_connections", Some("1")));
        assert!(refusal.message.contains("[serve] max_connections"), "{}", refusal.message);
    }
    // A health check and a token holder are served, each on a reserve slot.
    let health = fresh();
    assert_eq!(health.get(url("/healthz")).send().unwrap().status(), 200);
    assert_eq!(health.get(url("/readyz")).send().unwrap().status(), 200);
    let holder = fresh();
    let queue = holder.get(url("/v1/queue")).bearer_auth(GHOST_TOKEN).send().unwrap();
    assert_eq!(queue.status(), 200, "{:?}", queue.text());
    drop(held);
    served.stop().code(0);
}

#[test]
fn the_connection_limits_are_checked_with_their_key_and_line() {
    for (setting, key, says) in [
        ("header_timeout = \"0\"", "serve.header_timeout", "close every connection"),
        ("min_body_rate = 0", "serve.min_body_rate", "must be at least 1"),
        ("max_connections_per_address = 0", "serve.max_connections_per_address", "must be at least 1"),
    ] {
        let mut sb = Sandbox::new();
        sb.extra.push_str(&format!("\n[serve]\n{setting}\n"));
        sb.write_config();
        let done = sb.indexq(&["serve", "--listen", "127.0.0.1:0"]).now(NOW).output().code(2);
        assert!(done.stderr.contains(&format!("`{key}`")), "{setting}: {}", done.stderr);
        assert!(done.stderr.contains(says), "{setting}: {}", done.stderr);
        assert!(done.stderr.contains("indexq.toml:"), "{setting}: the file and line: {}", done.stderr);
    }
}
