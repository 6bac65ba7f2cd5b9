//! The IRC line protocol (RFC 1459/2812 with IRCv3 message tags): a parser of one line into
//! prefix, command and parameters; a bounded line reader (a line longer than the limit is
//! dropped, never buffered without end); the splitting of an answer into `PRIVMSG` lines that
//! stay under the 512-byte limit as other clients receive them (the server prepends our
//! `nick!user@host`); the SASL PLAIN payload; and the token bucket of flood control.

use std::time::{Duration, Instant};

use base64::Engine;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Longest line accepted from the server: 512 bytes plus 8191 of IRCv3 tags.
pub(crate) const MAX_LINE: usize = 8192 + 512;
/// The protocol's limit on one line, CR LF included.
pub(crate) const LINE_LIMIT: usize = 512;
/// Room kept for the `:nick!user@host ` prefix the server adds when relaying our lines.
const RELAY_PREFIX_ALLOWANCE: usize = 100;

/// One parsed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Message {
    pub prefix: Option<String>,
    /// Upper-cased command or three-digit numeric.
    pub command: String,
    pub params: Vec<String>,
}

impl Message {
    /// The nick of the prefix (`nick!user@host` → `nick`).
    pub fn nick(&self) -> Option<&str> {
        let p = self.prefix.as_deref()?;
        Some(p.split(['!', '@']).next().unwrap_or(p))
    }

    pub fn param(&self, i: usize) -> Option<&str> {
        self.params.get(i).map(String::as_str)
    }
}

/// Parses one line (without CR LF); `None` for an empty or command-less line.
pub(crate) fn parse(line: &str) -> Option<Message> {
    let mut rest = line.trim_end_matches(['\r', '\n']);
    if let Some(tagged) = rest.strip_prefix('@') {
        rest = tagged.split_once(' ').map_or("", |(_, r)| r);
    }
    rest = rest.trim_start_matches(' ');
    let mut prefix = None;
    if let Some(p) = rest.strip_prefix(':') {
        let (p, r) = p.split_once(' ').unwrap_or((p, ""));
        prefix = Some(p.to_string());
        rest = r.trim_start_matches(' ');
    }
    let (head, trailing) = match rest.find(" :") {
        Some(i) => (&rest[..i], Some(&rest[i + 2..])),
        None => (rest, None),
    };
    let mut words = head.split(' ').filter(|w| !w.is_empty());
    let command = words.next()?.to_ascii_uppercase();
    let mut params: Vec<String> = words.map(str::to_string).collect();
    if let Some(t) = trailing {
        params.push(t.to_string());
    }
    Some(Message {
        prefix,
        command,
        params,
    })
}

/// Reads CR LF (or LF) terminated lines from a stream, each at most [`MAX_LINE`] bytes.
pub(crate) struct LineReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Skipping the rest of an over-long line.
    discarding: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(inner: R) -> LineReader<R> {
        LineReader {
            inner,
            buf: Vec::with_capacity(1024),
            discarding: false,
        }
    }

    /// The next line (lossy UTF-8, without its end); `None` at end of stream.
    pub async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                if self.discarding {
                    self.discarding = false;
                    continue;
                }
                let text = String::from_utf8_lossy(&line);
                return Ok(Some(text.trim_end_matches(['\r', '\n']).to_string()));
            }
            if self.buf.len() > MAX_LINE {
                self.buf.clear();
                self.discarding = true;
            }
            let mut chunk = [0u8; 4096];
            let n = self.inner.read(&mut chunk).await?;
            if n == 0 {
                return Ok(None);
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

/// Text made safe for one protocol line: no CR, LF or NUL (they would end the line and let a
/// message inject commands), no CTCP marker (`\x01`).
pub(crate) fn clean(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\r' | '\n' => ' ',
            c => c,
        })
        .filter(|c| *c != '\0' && *c != '\u{1}')
        .collect()
}

/// Markdown as plain IRC text (see [`crate::platform::markdown::render_text`]).
pub(crate) fn strip_markdown(text: &str) -> String {
    crate::platform::markdown::render_text(text)
}

/// The body bytes one `PRIVMSG target :` line can carry.
pub(crate) fn body_limit(target: &str, nick: &str, max_len: usize) -> usize {
    let overhead = "PRIVMSG  :\r\n".len() + target.len() + nick.len() + RELAY_PREFIX_ALLOWANCE;
    LINE_LIMIT.saturating_sub(overhead).min(max_len).max(32)
}

/// Cuts `text` into lines of at most `limit` bytes: one per paragraph line, long ones cut at
/// the last space (or at a character boundary when a word is longer than the line).
pub(crate) fn split_lines(text: &str, limit: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for paragraph in text.split('\n') {
        let mut rest = clean(paragraph).trim().to_string();
        while !rest.is_empty() {
            if rest.len() <= limit {
                lines.push(rest);
                break;
            }
            let mut cut = limit;
            while !rest.is_char_boundary(cut) {
                cut -= 1;
            }
            if let Some(space) = rest[..cut].rfind(' ')
                && space > cut / 3
            {
                cut = space;
            }
            let head = rest[..cut].trim_end().to_string();
            let tail = rest[cut..].trim_start().to_string();
            lines.push(head);
            rest = tail;
        }
    }
    lines
}

/// `AUTHENTICATE` payloads for SASL PLAIN (base64 of `authzid \0 authcid \0 password`, in
/// 400-byte pieces; a piece of exactly 400 bytes is followed by `+`).
pub(crate) fn sasl_plain(user: &str, password: &str) -> Vec<String> {
    let raw = format!("{user}\0{user}\0{password}");
    let encoded = base64::engine::general_purpose::STANDARD.encode(raw);
    let mut pieces: Vec<String> = encoded
        .as_bytes()
        .chunks(400)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    if pieces.last().is_none_or(|p| p.len() == 400) {
        pieces.push("+".into());
    }
    pieces
}

/// Flood control: `burst` lines at once, then one line per `interval`.
#[derive(Debug)]
pub(crate) struct TokenBucket {
    capacity: f64,
    tokens: f64,
    interval: Duration,
    last: Instant,
}

impl TokenBucket {
    pub fn new(burst: u32, interval: Duration) -> TokenBucket {
        TokenBucket {
            capacity: f64::from(burst.max(1)),
            tokens: f64::from(burst.max(1)),
            interval: interval.max(Duration::from_millis(1)),
            last: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let gained = now.duration_since(self.last).as_secs_f64() / self.interval.as_secs_f64();
        self.tokens = (self.tokens + gained).min(self.capacity);
        self.last = now;
    }

    /// How long to wait before the next line may go (zero: now); takes the token.
    pub fn take(&mut self, now: Instant) -> Duration {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return Duration::ZERO;
        }
        let missing = 1.0 - self.tokens;
        self.tokens -= 1.0;
        self.interval.mul_f64(missing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_with_tags_prefix_and_trailing() {
        let m = parse("@time=2024 :ann!a@host PRIVMSG #hermes :hermes-bot: hi there").unwrap();
        assert_eq!(m.nick(), Some("ann"));
        assert_eq!(m.command, "PRIVMSG");
        assert_eq!(m.params, vec!["#hermes", "hermes-bot: hi there"]);
        let m = parse("PING :irc.example").unwrap();
        assert_eq!(
            (m.prefix.as_deref(), m.command.as_str(), m.param(0)),
            (None, "PING", Some("irc.example"))
        );
        let m = parse(":srv 001 bot :Welcome").unwrap();
        assert_eq!(m.params, vec!["bot", "Welcome"]);
        assert_eq!(parse(""), None);
        assert_eq!(parse(":only-prefix"), None);
        let m = parse(":a!b@c PRIVMSG bot ::)").unwrap();
        assert_eq!(m.param(1), Some(":)"));
    }

    #[tokio::test]
    async fn over_long_lines_are_dropped_not_buffered() {
        let mut data = b"PING :a\r\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', MAX_LINE * 3));
        data.extend_from_slice(b"\r\nPING :b\n");
        let mut r = LineReader::new(&data[..]);
        assert_eq!(r.next_line().await.unwrap().as_deref(), Some("PING :a"));
        assert_eq!(r.next_line().await.unwrap().as_deref(), Some("PING :b"));
        assert_eq!(r.next_line().await.unwrap(), None);
    }

    #[test]
    fn answers_split_under_the_limit_without_injection() {
        let text = format!("{}\n\nsecond\rPRIVMSG x :evil\0", "word ".repeat(100));
        let limit = body_limit("#hermes", "hermes-bot", 450);
        let lines = split_lines(&text, limit);
        assert!(lines.len() >= 2);
        for l in &lines {
            assert!(l.len() <= limit && !l.contains(['\r', '\n', '\0']), "{l:?}");
            assert!(
                LINE_LIMIT >= format!(":hermes-bot!~h@127.0.0.1 PRIVMSG #hermes :{l}\r\n").len()
            );
        }
        assert_eq!(lines.last().unwrap(), "second PRIVMSG x :evil");
        let words: usize = lines.iter().map(|l| l.matches("word").count()).sum();
        assert_eq!(words, 100);
        // A word longer than a line is cut at a character boundary.
        let long = "é".repeat(300);
        let parts = split_lines(&long, 101);
        assert!(parts.iter().all(|p| p.len() <= 101));
        assert_eq!(parts.concat(), long);
    }

    #[test]
    fn markdown_is_stripped_for_irc() {
        assert_eq!(
            strip_markdown(
                "**Bold** and *it* `code` [site](https://x.org)\n```rust\nlet a = 1;\n```"
            ),
            "Bold and it code site (https://x.org)\nlet a = 1;"
        );
    }

    #[test]
    fn sasl_plain_payload() {
        assert_eq!(sasl_plain("bot", "pw"), vec!["Ym90AGJvdABwdw=="]);
        let long = sasl_plain("u", &"p".repeat(1000));
        assert!(long.iter().all(|p| p.len() <= 400));
    }

    #[test]
    fn the_bucket_allows_a_burst_then_paces() {
        let start = Instant::now();
        let mut b = TokenBucket::new(2, Duration::from_millis(500));
        assert_eq!(b.take(start), Duration::ZERO);
        assert_eq!(b.take(start), Duration::ZERO);
        let wait = b.take(start);
        assert!(
            wait > Duration::from_millis(450) && wait <= Duration::from_millis(500),
            "{wait:?}"
        );
        // A second waiting line queues behind the first.
        assert!(b.take(start) > Duration::from_millis(950));
        // After a long pause the burst is back (capped).
        let later = start + Duration::from_secs(10);
        assert_eq!(b.take(later), Duration::ZERO);
        assert_eq!(b.take(later), Duration::ZERO);
        assert!(b.take(later) > Duration::ZERO);
    }
}
