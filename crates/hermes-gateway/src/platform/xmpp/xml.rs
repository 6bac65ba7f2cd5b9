//! A small incremental XML reader for XMPP streams: bytes go in as they arrive ([`XmlReader::feed`]),
//! complete top-level elements come out as trees ([`XmlReader::next`]). XMPP's restricted XML
//! (RFC 6120 §11) is all it accepts: no DTD (so no entity definitions, the "billion laughs"
//! and external-entity tricks cannot start), no comments or processing instructions inside the
//! stream, only the five predefined entities and character references. Every stanza is capped
//! in bytes ([`MAX_STANZA`]) and nesting depth, so a hostile server cannot make it buffer
//! without end. Names are kept as written (`stream:features`); namespaces are read from
//! `xmlns` attributes by the caller, which is all a client needs.

/// Largest stanza accepted, in bytes (Prosody's own limit for authenticated clients is
/// 256 KiB).
pub(crate) const MAX_STANZA: usize = 512 * 1024;
/// Deepest nesting inside one stanza.
const MAX_DEPTH: usize = 64;
/// Most attributes on one element.
const MAX_ATTRS: usize = 64;

/// Why the stream cannot be read further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum XmlError {
    #[error("a stanza is larger than {MAX_STANZA} bytes")]
    TooLarge,
    #[error("elements nest deeper than {MAX_DEPTH}")]
    TooDeep,
    #[error("malformed XML: {0}")]
    Malformed(String),
    #[error("XML feature not allowed in XMPP: {0}")]
    Forbidden(&'static str),
}

fn malformed(what: impl Into<String>) -> XmlError {
    XmlError::Malformed(what.into())
}

/// One element with its attributes, child elements and text (the concatenated text directly
/// inside it, which is what XMPP payloads carry).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Element {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Element>,
    pub text: String,
}

impl Element {
    /// The name without its prefix (`stream:features` → `features`).
    pub fn local_name(&self) -> &str {
        self.name.rsplit(':').next().unwrap_or(&self.name)
    }

    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first child with this local name (and namespace, when given).
    pub fn child(&self, name: &str, ns: Option<&str>) -> Option<&Element> {
        self.children
            .iter()
            .find(|c| c.local_name() == name && ns.is_none_or(|ns| c.attr("xmlns") == Some(ns)))
    }
}

/// What the reader produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// `<stream:stream ...>` with its attributes.
    StreamStart(Element),
    /// A complete top-level element (a stanza, features, a SASL or TLS answer).
    Stanza(Element),
    /// `</stream:stream>`.
    StreamEnd,
}

/// The incremental reader of one stream (a new one after every stream restart).
#[derive(Debug, Default)]
pub(crate) struct XmlReader {
    buf: Vec<u8>,
    /// Bytes already consumed from `buf` (compacted on the next feed).
    pos: usize,
    /// Inside `<stream:stream>`.
    in_stream: bool,
    /// The open elements of the stanza being read.
    stack: Vec<Element>,
    /// Bytes of the current stanza already consumed.
    stanza_bytes: usize,
}

/// A token of the markup.
enum Token {
    Start(Element, bool),
    End(String),
    Text(String),
    /// The XML declaration, or whitespace between stanzas.
    Skip,
}

impl XmlReader {
    pub fn new() -> XmlReader {
        XmlReader::default()
    }

    /// Adds bytes read from the connection.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), XmlError> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        if self.stanza_bytes + self.buf.len() + bytes.len() > MAX_STANZA {
            return Err(XmlError::TooLarge);
        }
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    /// The next complete event; `Ok(None)` when more bytes are needed.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Event>, XmlError> {
        loop {
            let start = self.pos;
            let Some(token) = self.token()? else {
                return Ok(None);
            };
            if !self.stack.is_empty() {
                self.stanza_bytes += self.pos - start;
            }
            match token {
                Token::Skip => {}
                Token::Text(text) => match self.stack.last_mut() {
                    Some(top) => {
                        top.text.push_str(&text);
                    }
                    None if text.trim().is_empty() => {}
                    None => return Err(malformed("text outside any element")),
                },
                Token::Start(el, empty) => {
                    if !self.in_stream {
                        if el.local_name() != "stream" || empty {
                            return Err(malformed(format!(
                                "expected <stream:stream>, got <{}>",
                                el.name
                            )));
                        }
                        self.in_stream = true;
                        return Ok(Some(Event::StreamStart(el)));
                    }
                    if self.stack.is_empty() {
                        self.stanza_bytes = self.pos - start;
                    }
                    if empty {
                        if let Some(done) = self.close(el)? {
                            return Ok(Some(Event::Stanza(done)));
                        }
                    } else {
                        if self.stack.len() >= MAX_DEPTH {
                            return Err(XmlError::TooDeep);
                        }
                        self.stack.push(el);
                    }
                }
                Token::End(name) => match self.stack.pop() {
                    None if self.in_stream && name.rsplit(':').next() == Some("stream") => {
                        self.in_stream = false;
                        return Ok(Some(Event::StreamEnd));
                    }
                    None => return Err(malformed(format!("unexpected </{name}>"))),
                    Some(el) if el.name != name => {
                        return Err(malformed(format!("</{name}> closes <{}>", el.name)));
                    }
                    Some(el) => {
                        if let Some(done) = self.close(el)? {
                            return Ok(Some(Event::Stanza(done)));
                        }
                    }
                },
            }
        }
    }

    /// Attaches a finished element to its parent; returns it when it was top-level.
    fn close(&mut self, el: Element) -> Result<Option<Element>, XmlError> {
        match self.stack.last_mut() {
            Some(parent) => {
                parent.children.push(el);
                Ok(None)
            }
            None => {
                self.stanza_bytes = 0;
                Ok(Some(el))
            }
        }
    }

    /// Reads one token at `pos`; `None` when it is not complete yet.
    fn token(&mut self) -> Result<Option<Token>, XmlError> {
        let rest = &self.buf[self.pos..];
        if rest.is_empty() {
            return Ok(None);
        }
        if rest[0] != b'<' {
            // Whitespace between stanzas (keepalives) is dropped as it comes, so it never
            // piles up in the buffer.
            if self.stack.is_empty() {
                let ws = rest.iter().take_while(|b| b.is_ascii_whitespace()).count();
                if ws > 0 {
                    self.pos += ws;
                    return Ok(Some(Token::Skip));
                }
            }
            let Some(end) = rest.iter().position(|&b| b == b'<') else {
                return Ok(None);
            };
            let text = std::str::from_utf8(&rest[..end]).map_err(|_| malformed("invalid UTF-8"))?;
            let text = unescape(text)?;
            self.pos += end;
            return Ok(Some(Token::Text(text)));
        }
        if rest.len() < 2 {
            return Ok(None);
        }
        match rest[1] {
            b'?' => {
                if self.in_stream {
                    return Err(XmlError::Forbidden("processing instructions"));
                }
                let Some(end) = find(rest, b"?>") else {
                    return Ok(None);
                };
                self.pos += end + 2;
                Ok(Some(Token::Skip))
            }
            b'!' => {
                // `<!DOCTYPE`, `<!--`, `<![CDATA[`: the first could define entities, and
                // RFC 6120 forbids all three.
                if rest.starts_with(b"<!-") {
                    Err(XmlError::Forbidden("comments"))
                } else if rest.starts_with(b"<![") {
                    Err(XmlError::Forbidden("CDATA sections"))
                } else {
                    Err(XmlError::Forbidden("DTDs"))
                }
            }
            b'/' => {
                let Some(end) = rest.iter().position(|&b| b == b'>') else {
                    return Ok(None);
                };
                let name = std::str::from_utf8(&rest[2..end])
                    .map_err(|_| malformed("invalid UTF-8"))?
                    .trim()
                    .to_string();
                check_name(&name)?;
                self.pos += end + 1;
                Ok(Some(Token::End(name)))
            }
            _ => {
                let Some(end) = tag_end(rest) else {
                    return Ok(None);
                };
                let inner =
                    std::str::from_utf8(&rest[1..end]).map_err(|_| malformed("invalid UTF-8"))?;
                let (inner, empty) = match inner.strip_suffix('/') {
                    Some(i) => (i, true),
                    None => (inner, false),
                };
                let el = parse_tag(inner)?;
                self.pos += end + 1;
                Ok(Some(Token::Start(el, empty)))
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The index of the `>` ending a start tag (quotes respected).
fn tag_end(bytes: &[u8]) -> Option<usize> {
    let mut quote = None;
    for (i, &b) in bytes.iter().enumerate().skip(1) {
        match (quote, b) {
            (None, b'"' | b'\'') => quote = Some(b),
            (Some(q), _) if b == q => quote = None,
            (None, b'>') => return Some(i),
            _ => {}
        }
    }
    None
}

fn check_name(name: &str) -> Result<(), XmlError> {
    let ok = !name.is_empty()
        && name.chars().all(|c| {
            c.is_alphanumeric() || matches!(c, ':' | '_' | '-' | '.') || (c as u32) > 0x7f
        })
        && !name.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(malformed(format!("bad name {name:?}")))
    }
}

/// `name a='1' b="2"` into an element.
fn parse_tag(inner: &str) -> Result<Element, XmlError> {
    let inner = inner.trim_end();
    let name_end = inner
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(inner.len());
    let name = &inner[..name_end];
    check_name(name)?;
    let mut el = Element {
        name: name.to_string(),
        ..Element::default()
    };
    let mut rest = inner[name_end..].trim_start();
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| malformed(format!("attribute without value in <{name}>")))?;
        let key = rest[..eq].trim();
        check_name(key)?;
        let after = rest[eq + 1..].trim_start();
        let quote = after
            .chars()
            .next()
            .filter(|c| *c == '"' || *c == '\'')
            .ok_or_else(|| malformed(format!("unquoted attribute in <{name}>")))?;
        let close = after[1..]
            .find(quote)
            .ok_or_else(|| malformed(format!("unterminated attribute in <{name}>")))?;
        let value = &after[1..1 + close];
        if value.contains('<') {
            return Err(malformed("< in an attribute value"));
        }
        if el.attrs.iter().any(|(k, _)| k == key) {
            return Err(malformed(format!("duplicate attribute {key}")));
        }
        if el.attrs.len() >= MAX_ATTRS {
            return Err(malformed(format!("too many attributes in <{name}>")));
        }
        el.attrs.push((key.to_string(), unescape(value)?));
        let next = &after[close + 2..];
        if !next.is_empty() && !next.starts_with(|c: char| c.is_ascii_whitespace()) {
            return Err(malformed(format!("attributes run together in <{name}>")));
        }
        rest = next.trim_start();
    }
    Ok(el)
}

/// Resolves the predefined entities and character references; anything else is an error
/// (there is no DTD to define more).
pub(crate) fn unescape(s: &str) -> Result<String, XmlError> {
    if !s.contains('&') {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after
            .find(';')
            .filter(|&e| e <= 10)
            .ok_or_else(|| malformed("unterminated entity"))?;
        let entity = &after[..end];
        let c = match entity {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = if let Some(hex) = entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                {
                    u32::from_str_radix(hex, 16).ok()
                } else if let Some(dec) = entity.strip_prefix('#') {
                    dec.parse::<u32>().ok()
                } else {
                    return Err(malformed(format!("unknown entity &{entity};")));
                };
                code.and_then(char::from_u32)
                    .filter(|c| is_xml_char(*c))
                    .ok_or_else(|| malformed(format!("bad character reference &{entity};")))?
            }
        };
        out.push(c);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Characters XML 1.0 allows.
fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || (c >= ' ' && c != '\u{FFFE}' && c != '\u{FFFF}')
}

/// Text or an attribute value, escaped; characters XML cannot carry are dropped.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if is_xml_char(c) => out.push(c),
            _ => {}
        }
    }
    out
}

/// Serialises an element (for tests and logs).
#[cfg(test)]
pub(crate) fn render(el: &Element) -> String {
    use std::fmt::Write as _;
    let mut out = format!("<{}", el.name);
    for (k, v) in &el.attrs {
        let _ = write!(out, " {k}='{}'", escape(v));
    }
    out.push('>');
    out.push_str(&escape(&el.text));
    for c in &el.children {
        out.push_str(&render(c));
    }
    let _ = write!(out, "</{}>", el.name);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' id='s1' from='localhost' version='1.0'>";

    fn read_all(input: &str) -> Result<Vec<Event>, XmlError> {
        let mut r = XmlReader::new();
        r.feed(input.as_bytes())?;
        let mut out = Vec::new();
        while let Some(e) = r.next()? {
            out.push(e);
        }
        Ok(out)
    }

    #[test]
    fn a_stream_in_pieces_gives_its_stanzas() {
        let input = format!(
            "{HEADER}<stream:features><starttls xmlns='urn:ietf:params:xml:ns:xmpp-tls'><required/></starttls></stream:features>\n \
             <message from='a@x/r' type=\"chat\"><body>1 &lt; 2 &amp;&#x20;&#65;</body></message></stream:stream>"
        );
        // One byte at a time: every split point must work.
        let mut r = XmlReader::new();
        let mut events = Vec::new();
        for b in input.as_bytes() {
            r.feed(std::slice::from_ref(b)).unwrap();
            while let Some(e) = r.next().unwrap() {
                events.push(e);
            }
        }
        assert_eq!(events, read_all(&input).unwrap());
        assert_eq!(events.len(), 4);
        let Event::StreamStart(s) = &events[0] else {
            panic!()
        };
        assert_eq!(s.attr("id"), Some("s1"));
        let Event::Stanza(f) = &events[1] else {
            panic!()
        };
        assert_eq!(f.local_name(), "features");
        let tls = f
            .child("starttls", Some("urn:ietf:params:xml:ns:xmpp-tls"))
            .unwrap();
        assert!(tls.child("required", None).is_some());
        let Event::Stanza(m) = &events[2] else {
            panic!()
        };
        assert_eq!(m.attr("type"), Some("chat"));
        assert_eq!(m.child("body", None).unwrap().text, "1 < 2 & A");
        assert_eq!(events[3], Event::StreamEnd);
    }

    #[test]
    fn entity_tricks_are_refused() {
        for bad in [
            "<!DOCTYPE x [<!ENTITY a 'aaaa'>]><stream:stream>",
            "<stream:stream><message><body>&a;</body></message>",
            "<stream:stream><message><body>&#0;</body></message>",
            "<stream:stream><message><body>&#xD800;</body></message>",
            "<stream:stream><message><!-- c --></message>",
            "<stream:stream><message><![CDATA[x]]></message>",
            "<stream:stream><?pi x?>",
            "<stream:stream><message><body>&amp</body></message>",
        ] {
            assert!(read_all(bad).is_err(), "{bad}");
        }
        // No double unescaping.
        let ok = read_all("<stream:stream><m a='&amp;lt;'>&amp;gt;</m>").unwrap();
        let Event::Stanza(m) = &ok[1] else { panic!() };
        assert_eq!(m.attr("a"), Some("&lt;"));
        assert_eq!(m.text, "&gt;");
    }

    #[test]
    fn malformed_input_is_an_error_not_a_panic() {
        for bad in [
            "<message>",
            "<stream:stream></message>",
            "<stream:stream><a></b>",
            "<stream:stream><a x=1/>",
            "<stream:stream><a x='1'y='2'/>",
            "<stream:stream><a x='1' x='2'/>",
            "<stream:stream><1a/>",
            "<stream:stream>text",
            "<stream:stream><a x='<'/>",
            "<stream:stream><a>\u{0}</a>\u{ff}<",
        ] {
            let _ = read_all(bad);
        }
        assert!(read_all("<stream:stream></message>").is_err());
        assert!(read_all("<stream:stream><a></b>").is_err());
        assert!(read_all("<message/>").is_err());
        let mut r = XmlReader::new();
        r.feed(b"<stream:stream><a>\xff\xfe</a>").unwrap();
        r.next().unwrap();
        assert!(r.next().is_err());
    }

    #[test]
    fn oversized_and_deep_stanzas_are_refused() {
        let mut r = XmlReader::new();
        r.feed(b"<stream:stream><message><body>").unwrap();
        assert!(matches!(r.next(), Ok(Some(Event::StreamStart(_)))));
        let chunk = vec![b'a'; 64 * 1024];
        let mut failed = false;
        for _ in 0..16 {
            match r.feed(&chunk).and_then(|()| r.next().map(|_| ())) {
                Ok(()) => {}
                Err(e) => {
                    assert_eq!(e, XmlError::TooLarge);
                    failed = true;
                    break;
                }
            }
        }
        assert!(failed, "a 1 MiB stanza was buffered");

        let deep = format!("<stream:stream>{}", "<a>".repeat(100));
        assert_eq!(read_all(&deep), Err(XmlError::TooDeep));

        // Whitespace keepalives between stanzas never accumulate.
        let mut r = XmlReader::new();
        r.feed(b"<stream:stream>").unwrap();
        r.next().unwrap();
        for _ in 0..(MAX_STANZA / 1024 + 10) {
            r.feed(&[b' '; 1024]).unwrap();
            assert_eq!(r.next().unwrap(), None);
        }
    }

    #[test]
    fn escape_round_trips() {
        let s = "a<b>&\"c'\u{1}d";
        assert_eq!(escape(s), "a&lt;b&gt;&amp;&quot;c&apos;d");
        assert_eq!(unescape(&escape(s)).unwrap(), "a<b>&\"c'd");
        let el = Element {
            name: "x".into(),
            attrs: vec![("k".into(), "v'".into())],
            children: vec![],
            text: "t&".into(),
        };
        let Event::Stanza(back) =
            read_all(&format!("<stream:stream>{}", render(&el))).unwrap()[1].clone()
        else {
            panic!()
        };
        assert_eq!(back, el);
    }
}
