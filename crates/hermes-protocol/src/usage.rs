//! Token usage as reported by providers, normalised: `input_tokens` counts every prompt token
//! including cached ones, and the cache figures say how many of them were read from or written
//! to the provider's prompt cache.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_field_by_field() {
        let mut a = Usage {
            input_tokens: 10,
            output_tokens: 2,
            ..Usage::default()
        };
        a += Usage {
            input_tokens: 5,
            output_tokens: 1,
            cache_read_tokens: 3,
            cache_write_tokens: 0,
            reasoning_tokens: 1,
        };
        assert_eq!(a.input_tokens, 15);
        assert_eq!(a.output_tokens, 3);
        assert_eq!(a.cache_read_tokens, 3);
        assert_eq!(a.total(), 18);
    }
}
