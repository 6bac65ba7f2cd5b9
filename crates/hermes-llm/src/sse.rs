//! A Server-Sent Events parser that accepts bytes in arbitrary pieces (a network read may end
//! anywhere, even inside a UTF-8 sequence) and yields complete events. Follows the SSE spec:
//! `\n`, `\r\n` or `\r` line ends, `data:` lines joined with `\n`, `:` comments, dispatch on a
//! blank line. One event (its lines, its `data` and `event` fields together) is bounded: an
//! event that grows past the cap is refused with [`SseError::EventTooLarge`] instead of being
//! buffered, so a server sending endless `data:` lines costs at most the cap in memory.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when present.
    pub event: Option<String>,
    pub data: String,
}

/// The default bound on one event, when the caller sets none.
pub const DEFAULT_MAX_EVENT: usize = 8 * 1024 * 1024;

/// Why the bytes cannot be read as events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// One event (lines not yet dispatched included) grew past the cap.
    #[error("one stream event exceeded {limit} bytes")]
    EventTooLarge { limit: usize },
}

#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    /// A `\r` ended the last line; a `\n` right after it belongs to the same line end.
    after_cr: bool,
    data: Option<String>,
    event: Option<String>,
    max_event: usize,
    /// Set once the cap was crossed: the parser refuses everything after.
    failed: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::with_max_event(DEFAULT_MAX_EVENT)
    }
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// A parser refusing events larger than `max_event` bytes.
    pub fn with_max_event(max_event: usize) -> Self {
        SseParser {
            line: Vec::new(),
            after_cr: false,
            data: None,
            event: None,
            max_event: max_event.max(1),
            failed: false,
        }
    }

    /// Bytes of the event being built (its dispatched-to-be fields and the current line).
    fn pending(&self) -> usize {
        self.line.len()
            + self.data.as_ref().map_or(0, String::len)
            + self.event.as_ref().map_or(0, String::len)
    }

    /// Feeds bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let too_large = SseError::EventTooLarge {
            limit: self.max_event,
        };
        if self.failed {
            return Err(too_large);
        }
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => {
                    if self.pending() >= self.max_event {
                        // Drop what was kept: nothing of this event will be used.
                        self.failed = true;
                        self.line = Vec::new();
                        self.data = None;
                        self.event = None;
                        return Err(too_large);
                    }
                    self.line.push(b);
                }
            }
        }
        Ok(out)
    }

    /// The stream ended: an event still being built (no blank line after it) is returned,
    /// which servers that forget the final blank line rely on.
    pub fn finish(&mut self) -> Option<SseEvent> {
        if self.failed {
            return None;
        }
        let mut out = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut out);
        }
        self.dispatch(&mut out);
        out.pop()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        let text = String::from_utf8_lossy(&line);
        if text.starts_with(':') {
            return;
        }
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            out.push(SseEvent { event, data });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(p.push(c).unwrap());
        }
        out.extend(p.finish());
        out
    }

    #[test]
    fn events_split_anywhere_reassemble() {
        let text =
            "data: {\"a\":1}\n\n: keepalive\n\nevent: x\ndata: l1\ndata: l2\n\ndata: [DONE]\n\n";
        let whole = all(&[text.as_bytes()]);
        for cut in 0..text.len() {
            let (a, b) = text.as_bytes().split_at(cut);
            assert_eq!(all(&[a, b]), whole, "cut at {cut}");
        }
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[1].event.as_deref(), Some("x"));
        assert_eq!(whole[1].data, "l1\nl2");
        assert_eq!(whole[2].data, "[DONE]");
    }

    #[test]
    fn crlf_and_cr_line_ends() {
        assert_eq!(all(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]).len(), 3);
    }

    #[test]
    fn utf8_split_inside_a_character() {
        let text = "data: héllo\n\n".as_bytes();
        let out = all(&[&text[..8], &text[8..]]);
        assert_eq!(out[0].data, "héllo");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let out = all(&[b"data: a\xffb\n\n"]);
        assert_eq!(out[0].data, "a\u{fffd}b");
    }

    #[test]
    fn an_event_of_endless_data_lines_is_cut_at_the_cap() {
        let mut p = SseParser::with_max_event(1_000);
        let line = b"data: 0123456789012345678901234567890123456789\n";
        let mut result = Ok(Vec::new());
        for _ in 0..1_000 {
            result = p.push(line);
            if result.is_err() {
                break;
            }
        }
        assert_eq!(result, Err(SseError::EventTooLarge { limit: 1_000 }));
        assert!(p.pending() == 0, "nothing of the refused event is kept");
        assert!(
            p.push(b"\n\ndata: x\n\n").is_err(),
            "refuses everything after"
        );
        assert_eq!(p.finish(), None);
        // Events under the cap pass, however many there are.
        let mut p = SseParser::with_max_event(100);
        for _ in 0..1_000 {
            assert_eq!(p.push(b"data: small\n\n").unwrap().len(), 1);
        }
    }

    #[test]
    fn missing_final_blank_line_still_yields() {
        assert_eq!(all(&[b"data: last"])[0].data, "last");
    }
}
