//! The iteration refund of a code-execution turn: the Python Hermes gives back the iteration of
//! a model call whose tool calls were all `execute_code` (a script's many tool calls cost one
//! model call, so they should not eat the turn's budget). The tool cannot see its sibling
//! calls, so it refunds at most once per model call of the turn: after a refund it remembers
//! the budget's remaining count, and a second `execute_code` of the same batch (the count
//! unchanged since) does not refund again. This module is the one place that reads the turn
//! budget (the one the turn loop puts in the call's `ToolContext`).

use std::sync::{Arc, Mutex, Weak};

use hermes_tools::ToolContext;

use crate::IterationBudget;

#[derive(Default)]
pub(super) struct Refunder {
    /// The budget refunded last and its remaining count right after.
    last: Mutex<Option<(Weak<IterationBudget>, u32)>>,
}

impl Refunder {
    /// Gives one iteration back to the running turn, once per model call.
    pub(super) fn refund(&self, ctx: &ToolContext) {
        if let Some(budget) = &ctx.budget {
            self.refund_to(budget);
        }
    }

    fn refund_to(&self, budget: &Arc<IterationBudget>) {
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        if let Some((seen, remaining)) = last.as_ref()
            && seen.upgrade().is_some_and(|b| Arc::ptr_eq(&b, budget))
            && *remaining == budget.remaining()
        {
            return;
        }
        budget.refund();
        *last = Some((Arc::downgrade(budget), budget.remaining()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_model_call() {
        let r = Refunder::default();
        let b = Arc::new(IterationBudget::new(5));
        assert!(b.try_consume());
        assert!(b.try_consume());
        r.refund_to(&b);
        assert_eq!(b.remaining(), 4);
        // A second execute_code of the same batch: no second refund.
        r.refund_to(&b);
        assert_eq!(b.remaining(), 4);
        // The next model call consumed one: refunded again.
        assert!(b.try_consume());
        r.refund_to(&b);
        assert_eq!(b.remaining(), 4);
        // Another turn's budget is another budget.
        let other = Arc::new(IterationBudget::new(5));
        assert!(other.try_consume());
        r.refund_to(&other);
        assert_eq!(other.remaining(), 5);
    }

    #[test]
    fn refunds_the_budget_of_the_calls_context() {
        let ctx = ToolContext::new(std::env::temp_dir());
        // Outside a turn there is no budget: nothing to refund.
        Refunder::default().refund(&ctx);
        let b = Arc::new(IterationBudget::new(5));
        assert!(b.try_consume());
        let turn = ctx.for_turn(tokio_util::sync::CancellationToken::new(), Some(b.clone()));
        Refunder::default().refund(&turn);
        assert_eq!(b.remaining(), 5);
    }
}
