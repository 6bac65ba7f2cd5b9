//! The output of a background job: the last [`CAPACITY`] bytes, trimmed at line boundaries,
//! with absolute byte offsets (for "new output since the last poll") and absolute line numbers
//! (for paging the log) that stay valid while old output is dropped.

/// Bytes of output kept per job.
pub(crate) const CAPACITY: usize = 256 * 1024;

#[derive(Debug, Default)]
pub(crate) struct OutputBuffer {
    bytes: Vec<u8>,
    /// Absolute offset of `bytes[0]` in everything the job ever printed.
    start: u64,
    /// Complete lines dropped from the front.
    dropped_lines: u64,
}

impl OutputBuffer {
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > CAPACITY + CAPACITY / 4 {
            let mut cut = self.bytes.len() - CAPACITY;
            // Keep whole lines: drop through the end of the line the cut falls in.
            if let Some(nl) = self.bytes[cut..].iter().position(|b| *b == b'\n') {
                cut += nl + 1;
            }
            let dropped = &self.bytes[..cut];
            self.dropped_lines += dropped.iter().filter(|b| **b == b'\n').count() as u64;
            self.bytes.drain(..cut);
            self.start += cut as u64;
        }
    }

    /// Absolute offset just past the last byte.
    pub(crate) fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Output from absolute offset `from` (clamped to what is kept), and how many bytes before
    /// it were already dropped.
    pub(crate) fn since(&self, from: u64) -> (String, u64) {
        let skipped = self.start.saturating_sub(from);
        let begin = from.saturating_sub(self.start).min(self.bytes.len() as u64) as usize;
        (
            String::from_utf8_lossy(&self.bytes[begin..]).into_owned(),
            skipped,
        )
    }

    /// The kept lines and the absolute (1-based) number of the first one.
    pub(crate) fn lines(&self) -> (Vec<String>, u64) {
        let text = String::from_utf8_lossy(&self.bytes);
        let lines = text.lines().map(str::to_string).collect();
        (lines, self.dropped_lines + 1)
    }

    /// The last `max` characters.
    pub(crate) fn tail(&self, max: usize) -> String {
        let (text, _) = self.since(self.end().saturating_sub(max as u64 * 4));
        let count = text.chars().count();
        text.chars().skip(count.saturating_sub(max)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_line_numbers_survive_trimming() {
        let mut b = OutputBuffer::default();
        b.push(b"one\ntwo\n");
        assert_eq!(b.since(4), ("two\n".to_string(), 0));
        let (lines, first) = b.lines();
        assert_eq!(
            (lines, first),
            (vec!["one".to_string(), "two".to_string()], 1)
        );
        for i in 0..100_000u32 {
            b.push(format!("line {i}\n").as_bytes());
        }
        assert!(b.bytes.len() <= CAPACITY + CAPACITY / 4);
        let (lines, first) = b.lines();
        assert_eq!(lines.last().unwrap(), "line 99999");
        // Line numbers are absolute: "one" was line 1, "line 0" line 3.
        assert_eq!(lines[0], format!("line {}", first - 3));
        let (_, skipped) = b.since(0);
        assert_eq!(skipped, b.start);
        assert_eq!(b.tail(11), "line 99999\n");
    }
}
