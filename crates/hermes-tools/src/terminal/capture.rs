//! Bounded capture of command output: keeps the first half of the budget and a rolling window
//! of the last half, so a command printing gigabytes costs a fixed amount of memory while the
//! model still sees how it started and how it ended.

use std::collections::VecDeque;

pub(crate) struct BoundedCapture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    dropped: usize,
}

impl BoundedCapture {
    pub(crate) fn new(budget: usize) -> Self {
        BoundedCapture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap: budget / 2,
            tail_cap: budget - budget / 2,
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.len() >= self.tail_cap {
            self.dropped += self.tail.len() + bytes.len() - self.tail_cap;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..overflow);
        self.dropped += overflow;
        self.tail.extend(bytes);
    }

    /// The captured text (invalid UTF-8 replaced), with a marker where bytes were dropped.
    pub(crate) fn into_string(self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            text.push_str(&format!(
                "\n... [{} bytes of output dropped] ...\n",
                self.dropped
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = Vec::with_capacity(a.len() + b.len());
        tail.extend_from_slice(a);
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = BoundedCapture::new(100);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.into_string(), "hello world");
    }

    #[test]
    fn large_output_keeps_head_and_tail_in_bounded_memory() {
        let mut c = BoundedCapture::new(10);
        for i in 0..1000u32 {
            c.push(format!("{:03}", i % 1000).as_bytes());
        }
        assert!(c.head.len() <= 5 && c.tail.len() <= 5);
        let s = c.into_string();
        assert!(s.starts_with("00000"), "{s}");
        assert!(s.ends_with("98999"), "{s}");
        assert!(s.contains("bytes of output dropped"));
    }
}
