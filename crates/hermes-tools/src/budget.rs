//! The iteration budget: how many model calls a turn may make, shared (through an `Arc`) with
//! the sub-agents it delegates to, so a delegation cannot multiply the cost of a turn. It
//! reaches tools through [`ToolContext::budget`](crate::ToolContext).

use std::sync::atomic::{AtomicU32, Ordering};

#[derive(Debug)]
pub struct IterationBudget {
    remaining: AtomicU32,
    limit: u32,
}

impl IterationBudget {
    pub fn new(limit: u32) -> Self {
        IterationBudget {
            remaining: AtomicU32::new(limit),
            limit,
        }
    }

    /// Takes one call from the budget; false when none is left.
    pub fn try_consume(&self) -> bool {
        self.remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| r.checked_sub(1))
            .is_ok()
    }

    /// Gives one call back (a call that should not count, such as a code-execution turn).
    pub fn refund(&self) {
        let _ = self
            .remaining
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |r| {
                (r < self.limit).then_some(r + 1)
            });
    }

    pub fn remaining(&self) -> u32 {
        self.remaining.load(Ordering::Acquire)
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn consume_until_empty_and_refund_up_to_the_limit() {
        let b = IterationBudget::new(2);
        assert!(b.try_consume());
        assert!(b.try_consume());
        assert!(!b.try_consume());
        b.refund();
        assert_eq!(b.remaining(), 1);
        b.refund();
        b.refund();
        assert_eq!(b.remaining(), 2);
    }

    #[test]
    fn shared_across_threads_never_overspends() {
        let b = Arc::new(IterationBudget::new(1000));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || (0..500).filter(|_| b.try_consume()).count())
            })
            .collect();
        let used: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(used, 1000);
    }
}
