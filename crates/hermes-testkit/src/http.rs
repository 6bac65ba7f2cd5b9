//! Minimal byte-exact HTTP/1.1 wire handling for the mock server: parsing a
//! request (request line, case-insensitive headers, Content-Length or chunked
//! body) and writing responses, chunked-stream heads and individual chunks.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAX_LINE: u64 = 64 * 1024;
const MAX_HEADERS: usize = 256;
const MAX_BODY: usize = 256 * 1024 * 1024;

/// One parsed request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// Request target as sent, query included.
    pub target: String,
    pub http10: bool,
    /// Lower-cased names, trimmed values.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_in(&self.headers, name)
    }

    /// Target without the query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// Whether the connection must be closed after answering.
    pub fn wants_close(&self) -> bool {
        match self.header("connection").map(str::to_ascii_lowercase) {
            Some(v) if v.contains("close") => true,
            Some(v) if v.contains("keep-alive") => false,
            _ => self.http10,
        }
    }
}

/// Case-insensitive header lookup in a lower-cased header list.
pub(crate) fn header_in<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_owned())
}

/// Reads one CRLF/LF-terminated line without its terminator; `None` on clean EOF.
async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R) -> io::Result<Option<Vec<u8>>> {
    let mut buf = Vec::new();
    let n = (&mut *r).take(MAX_LINE).read_until(b'\n', &mut buf).await?;
    if n == 0 {
        return Ok(None);
    }
    if !buf.ends_with(b"\n") {
        return Err(if n as u64 >= MAX_LINE {
            invalid("line too long")
        } else {
            io::Error::new(io::ErrorKind::UnexpectedEof, "eof inside a line")
        });
    }
    buf.pop();
    if buf.ends_with(b"\r") {
        buf.pop();
    }
    Ok(Some(buf))
}

/// Reads the next request; `Ok(None)` when the peer closed between requests.
pub(crate) async fn read_request<R: AsyncBufRead + Unpin>(
    r: &mut R,
) -> io::Result<Option<Request>> {
    let line = loop {
        match read_line(r).await? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break String::from_utf8_lossy(&l).into_owned(),
        }
    };
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("malformed request line"));
    };
    let mut headers = Vec::new();
    loop {
        let Some(l) = read_line(r).await? else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "eof in headers",
            ));
        };
        if l.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(invalid("too many headers"));
        }
        let l = String::from_utf8_lossy(&l).into_owned();
        let Some((name, value)) = l.split_once(':') else {
            return Err(invalid("malformed header line"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let chunked = header_in(&headers, "transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked_body(r).await?
    } else if let Some(len) = header_in(&headers, "content-length") {
        let len: usize = len.parse().map_err(|_| invalid("bad content-length"))?;
        if len > MAX_BODY {
            return Err(invalid("body too large"));
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).await?;
        body
    } else {
        Vec::new()
    };
    Ok(Some(Request {
        method: method.to_owned(),
        target: target.to_owned(),
        http10: version.eq_ignore_ascii_case("HTTP/1.0"),
        headers,
        body,
    }))
}

async fn read_chunked_body<R: AsyncBufRead + Unpin>(r: &mut R) -> io::Result<Vec<u8>> {
    let eof = || io::Error::new(io::ErrorKind::UnexpectedEof, "eof in chunked body");
    let mut body = Vec::new();
    loop {
        let line = read_line(r).await?.ok_or_else(eof)?;
        let line = String::from_utf8_lossy(&line).into_owned();
        let size_hex = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16).map_err(|_| invalid("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            while !read_line(r).await?.ok_or_else(eof)?.is_empty() {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            return Err(invalid("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..]).await?;
        if !read_line(r).await?.ok_or_else(eof)?.is_empty() {
            return Err(invalid("missing CRLF after chunk"));
        }
    }
}

pub(crate) fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn connection_value(close: bool) -> &'static str {
    if close { "close" } else { "keep-alive" }
}

/// Writes a complete Content-Length framed response in one write.
pub(crate) async fn write_response<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    close: bool,
) -> io::Result<()> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status));
    for (name, value) in headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: {}\r\n\r\n",
        body.len(),
        connection_value(close)
    ));
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    w.write_all(&bytes).await?;
    w.flush().await
}

/// Writes the head of a 200 chunked `text/event-stream` response.
pub(crate) async fn write_sse_head<W: AsyncWrite + Unpin>(
    w: &mut W,
    close: bool,
) -> io::Result<()> {
    let headers = [
        ("Content-Type".to_owned(), "text/event-stream".to_owned()),
        ("Cache-Control".to_owned(), "no-cache".to_owned()),
    ];
    write_chunked_head(w, &headers, close).await
}

/// Writes the head of a 200 chunked response with these headers.
pub(crate) async fn write_chunked_head<W: AsyncWrite + Unpin>(
    w: &mut W,
    headers: &[(String, String)],
    close: bool,
) -> io::Result<()> {
    let mut head = "HTTP/1.1 200 OK\r\n".to_owned();
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!(
        "Transfer-Encoding: chunked\r\nConnection: {}\r\n\r\n",
        connection_value(close)
    ));
    w.write_all(head.as_bytes()).await?;
    w.flush().await
}

/// Writes `data` as one HTTP chunk (never a zero-length one) and flushes.
pub(crate) async fn write_chunk<W: AsyncWrite + Unpin>(w: &mut W, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let mut bytes = format!("{:X}\r\n", data.len()).into_bytes();
    bytes.extend_from_slice(data);
    bytes.extend_from_slice(b"\r\n");
    w.write_all(&bytes).await?;
    w.flush().await
}

/// Writes the terminating zero-length chunk.
pub(crate) async fn write_last_chunk<W: AsyncWrite + Unpin>(w: &mut W) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n").await?;
    w.flush().await
}
