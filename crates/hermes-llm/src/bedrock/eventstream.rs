//! The AWS event-stream binary framing used by Bedrock's streaming APIs: each message is a
//! prelude (total length, headers length, CRC32), typed headers, a payload and a CRC32 of the
//! whole message. Bytes arrive in arbitrary pieces; complete, checksum-verified messages come
//! out.

/// One decoded message: its string headers and payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Messages larger than this are refused (Bedrock's are a few KB).
const MAX_MESSAGE: usize = 16 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
}

impl FrameDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the messages they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Frame>, String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            if self.buf.len() < 12 {
                return Ok(out);
            }
            let total = be32(&self.buf[0..4]) as usize;
            let headers_len = be32(&self.buf[4..8]) as usize;
            if crc32(&self.buf[0..8]) != be32(&self.buf[8..12]) {
                return Err("event stream prelude checksum mismatch".into());
            }
            if total < 16 + headers_len || total > MAX_MESSAGE {
                return Err(format!("event stream message of impossible length {total}"));
            }
            if self.buf.len() < total {
                return Ok(out);
            }
            let message: Vec<u8> = self.buf.drain(..total).collect();
            if crc32(&message[..total - 4]) != be32(&message[total - 4..]) {
                return Err("event stream message checksum mismatch".into());
            }
            let headers = parse_headers(&message[12..12 + headers_len])?;
            out.push(Frame {
                headers,
                payload: message[12 + headers_len..total - 4].to_vec(),
            });
        }
    }

    /// Bytes of an incomplete message still buffered.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Header values: only strings (type 7) matter; other types are skipped by their sizes.
fn parse_headers(mut b: &[u8]) -> Result<Vec<(String, String)>, String> {
    let bad = || "malformed event stream header".to_string();
    let mut out = Vec::new();
    while !b.is_empty() {
        let name_len = *b.first().ok_or_else(bad)? as usize;
        let name = b.get(1..1 + name_len).ok_or_else(bad)?;
        let name = String::from_utf8_lossy(name).into_owned();
        b = &b[1 + name_len..];
        let kind = *b.first().ok_or_else(bad)?;
        b = &b[1..];
        let fixed = match kind {
            0 | 1 => 0,
            2 => 1,
            3 => 2,
            4 => 4,
            5 | 8 => 8,
            9 => 16,
            6 | 7 => {
                let len =
                    u16::from_be_bytes([*b.first().ok_or_else(bad)?, *b.get(1).ok_or_else(bad)?])
                        as usize;
                let value = b.get(2..2 + len).ok_or_else(bad)?;
                if kind == 7 {
                    out.push((name, String::from_utf8_lossy(value).into_owned()));
                }
                b = &b[2 + len..];
                continue;
            }
            _ => return Err(bad()),
        };
        b = b.get(fixed..).ok_or_else(bad)?;
    }
    Ok(out)
}

/// CRC-32 (IEEE 802.3), as the event stream uses.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A contentBlockDelta message produced independently (Python: struct + zlib.crc32).
    const RECORDED: &str = "0000009e00000057fe1b824f0b3a6576656e742d74797065070011636f6e74656e74426c6f636b44656c74610d3a636f6e74656e742d747970650700106170706c69636174696f6e2f6a736f6e0d3a6d6573736167652d747970650700056576656e747b22636f6e74656e74426c6f636b496e646578223a302c2264656c7461223a7b2274657874223a224869227d2c2270223a22616263227d9343f010";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn crc_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn a_recorded_frame_decodes_whole_and_in_pieces() {
        let bytes = hex(RECORDED);
        let whole = FrameDecoder::new().push(&bytes).unwrap();
        assert_eq!(whole.len(), 1);
        assert_eq!(whole[0].header(":event-type"), Some("contentBlockDelta"));
        assert_eq!(whole[0].header(":message-type"), Some("event"));
        assert_eq!(
            whole[0].payload,
            br#"{"contentBlockIndex":0,"delta":{"text":"Hi"},"p":"abc"}"#
        );
        for cut in 1..bytes.len() {
            let mut d = FrameDecoder::new();
            let mut got = d.push(&bytes[..cut]).unwrap();
            got.extend(d.push(&bytes[cut..]).unwrap());
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn corruption_is_detected_not_trusted() {
        let mut bytes = hex(RECORDED);
        let n = bytes.len();
        bytes[n - 10] ^= 0xFF;
        assert!(
            FrameDecoder::new()
                .push(&bytes)
                .unwrap_err()
                .contains("checksum")
        );
        let mut bytes = hex(RECORDED);
        bytes[2] ^= 0x01;
        assert!(FrameDecoder::new().push(&bytes).is_err());
    }
}
