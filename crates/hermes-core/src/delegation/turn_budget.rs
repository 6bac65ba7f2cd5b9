//! The iteration budget of the turn whose tools are running, for the tools that draw on it
//! (`delegate_task`: every model call of a sub-agent also counts against its parent's turn).
//! The turn loop scopes its tool execution with [`scope`]; a tool reads it with [`current`].
//! The executor runs tools on the turn's own task, so the scope reaches every call.

use std::future::Future;
use std::sync::Arc;

use crate::IterationBudget;

tokio::task_local! {
    static TURN_BUDGET: Arc<IterationBudget>;
}

/// Runs `f` (a turn's tool calls) with `budget` as the current turn budget.
pub(crate) async fn scope<F: Future>(budget: Arc<IterationBudget>, f: F) -> F::Output {
    TURN_BUDGET.scope(budget, f).await
}

/// The budget of the turn running this tool call; `None` outside a turn.
pub(crate) fn current() -> Option<Arc<IterationBudget>> {
    TURN_BUDGET.try_with(Arc::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn visible_inside_the_scope_only() {
        assert!(current().is_none());
        let budget = Arc::new(IterationBudget::new(5));
        let seen = scope(budget.clone(), async { current().map(|b| b.limit()) }).await;
        assert_eq!(seen, Some(5));
        assert!(current().is_none());
    }
}
