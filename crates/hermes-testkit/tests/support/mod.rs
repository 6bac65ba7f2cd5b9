//! A deliberately dumb, byte-level HTTP/1.1 client for specifying the mock
//! server's wire behaviour (no reqwest: we need to see exact chunks and EOFs).

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

pub struct Conn {
    reader: BufReader<TcpStream>,
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Payload of each HTTP chunk, in order (chunked responses only).
    pub chunks: Vec<String>,
    /// Body fully framed: terminating `0\r\n\r\n` seen, or Content-Length satisfied.
    pub complete: bool,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("utf-8 body")
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("json body")
    }

    /// `data:` payloads of the SSE events in the body.
    pub fn sse_data(&self) -> Vec<String> {
        self.text()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| e.strip_prefix("data: ").expect("data: event").to_owned())
            .collect()
    }

    /// SSE payloads parsed as JSON, `[DONE]` excluded.
    pub fn sse_json(&self) -> Vec<Value> {
        self.sse_data()
            .iter()
            .filter(|d| d.as_str() != "[DONE]")
            .map(|d| serde_json::from_str(d).expect("json event"))
            .collect()
    }
}

impl Conn {
    pub fn connect(port: u16) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        Conn {
            reader: BufReader::new(stream),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).expect("write");
    }

    /// Sends a request with Host and Content-Length headers added.
    pub fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut out = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (n, v) in headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(body);
        self.send_raw(&bytes);
    }

    /// Reads whatever bytes arrive next (raw: chunk framing included).
    pub fn read_raw(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.reader.read(buf)
    }

    pub fn post_json(&mut self, path: &str, body: &Value) {
        let body = body.to_string();
        self.send(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        );
    }

    fn line(&mut self) -> io::Result<Option<String>> {
        let mut buf = Vec::new();
        let n = self.reader.read_until(b'\n', &mut buf)?;
        if n == 0 || !buf.ends_with(b"\n") {
            return Ok(None);
        }
        let s = String::from_utf8(buf).expect("utf-8 line");
        Ok(Some(s.trim_end_matches(['\r', '\n']).to_owned()))
    }

    /// Reads one response; `Err(UnexpectedEof)` if the server closed before a status line.
    pub fn read_response(&mut self) -> io::Result<Response> {
        let status_line = self
            .line()?
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no status line"))?;
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status code");
        let mut headers = Vec::new();
        loop {
            let l = self.line()?.expect("eof in headers");
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').expect("header colon");
            headers.push((n.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let mut resp = Response {
            status,
            headers,
            body: Vec::new(),
            chunks: Vec::new(),
            complete: false,
        };
        if resp.header("transfer-encoding") == Some("chunked") {
            while let Some(size_line) = self.line()? {
                let size = usize::from_str_radix(size_line.trim(), 16).expect("chunk size");
                if size == 0 {
                    resp.complete = self.line()?.as_deref() == Some("");
                    break;
                }
                let mut data = vec![0; size + 2];
                if self.reader.read_exact(&mut data).is_err() {
                    break;
                }
                assert_eq!(&data[size..], b"\r\n", "chunk must end with CRLF");
                data.truncate(size);
                resp.chunks
                    .push(String::from_utf8(data.clone()).expect("utf-8 chunk"));
                resp.body.extend_from_slice(&data);
            }
        } else if let Some(len) = resp.header("content-length") {
            let len: usize = len.parse().expect("content-length");
            let mut data = Vec::new();
            (&mut self.reader).take(len as u64).read_to_end(&mut data)?;
            resp.complete = data.len() == len;
            resp.body = data;
        } else {
            self.reader.read_to_end(&mut resp.body)?;
            resp.complete = true;
        }
        Ok(resp)
    }

    /// Reads whatever remains until EOF; `Ok(0 bytes)` means an orderly close.
    pub fn read_rest(&mut self) -> io::Result<Vec<u8>> {
        let mut rest = Vec::new();
        self.reader.read_to_end(&mut rest)?;
        Ok(rest)
    }
}

/// One request on a fresh connection.
pub fn post_chat(port: u16, body: &Value) -> Response {
    let mut conn = Conn::connect(port);
    conn.post_json("/v1/chat/completions", body);
    conn.read_response().expect("response")
}
