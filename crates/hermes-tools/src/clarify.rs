//! The `clarify` tool: asks the user a question, optionally with up to 4 choices (the frontend
//! adds an "other" answer), through the session's [`crate::Interaction`]. Without a user (`-z`,
//! cron, API) it tells the model to decide for itself.

use serde_json::{Value, json};

use crate::{Tool, ToolContext, ToolError, ToolResult};

const MAX_CHOICES: usize = 4;

pub struct ClarifyTool;

/// A choice as text; models sometimes send `{"label": ...}` objects instead of strings.
fn choice_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.trim().to_string(),
        Value::Object(map) => ["label", "description", "text", "title"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl Tool for ClarifyTool {
    fn name(&self) -> &str {
        "clarify"
    }
    fn toolset(&self) -> &str {
        "clarify"
    }
    fn description(&self) -> &str {
        "Ask the user a question when a decision is theirs to make or the task is ambiguous. Put options in choices (up to 4; the user may also answer freely), never in the question text. Not for approving commands (the terminal asks itself); for low-stakes choices, decide yourself."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "choices": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_CHOICES}
            },
            "required": ["question"]
        })
    }
    async fn call(&self, args: Value, ctx: &ToolContext) -> ToolResult {
        let question = args
            .get("question")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| ToolError::new("`question` is required"))?;
        let choices: Vec<String> = match args.get("choices") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(choice_text)
                .filter(|c| !c.is_empty())
                .take(MAX_CHOICES)
                .collect(),
            Some(_) => return Err(ToolError::new("`choices` must be a list of strings")),
        };
        if !ctx.interaction.is_interactive() {
            return Err(ToolError::new(
                "no user is available to answer in this mode (one-shot run): make a reasonable assumption, say which one in your answer, and continue",
            ));
        }
        let answer = tokio::select! {
            a = ctx.interaction.clarify(question, &choices) => a,
            () = ctx.cancel.cancelled() => None,
        };
        match answer
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
        {
            Some(answer) => Ok(json!({ "question": question, "user_response": answer })),
            None => Err(ToolError::new(
                "the user did not answer; continue with your best judgement or stop and say what you need",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interaction::{ApprovalAnswer, ApprovalRequest, Interaction};
    use std::sync::{Arc, Mutex};

    struct Scripted(Mutex<Vec<(String, Vec<String>)>>, Option<&'static str>);

    #[async_trait::async_trait]
    impl Interaction for Scripted {
        fn is_interactive(&self) -> bool {
            true
        }
        async fn clarify(&self, q: &str, choices: &[String]) -> Option<String> {
            self.0
                .lock()
                .unwrap()
                .push((q.to_string(), choices.to_vec()));
            self.1.map(str::to_string)
        }
        async fn approve(&self, _: &ApprovalRequest) -> ApprovalAnswer {
            ApprovalAnswer::Deny
        }
    }

    #[tokio::test]
    async fn asks_the_frontend_with_at_most_four_choices() {
        let asked = Arc::new(Scripted(Mutex::new(Vec::new()), Some("staging")));
        let mut ctx = ToolContext::new(std::env::temp_dir());
        ctx.interaction = asked.clone();
        let out = ClarifyTool
            .call(
                json!({"question": " Where? ", "choices": ["staging", {"label": "prod"}, "a", "b", "c"]}),
                &ctx,
            )
            .await
            .unwrap();
        assert_eq!(
            out,
            json!({"question": "Where?", "user_response": "staging"})
        );
        let seen = asked.0.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![(
                "Where?".to_string(),
                vec!["staging".into(), "prod".into(), "a".into(), "b".into()]
            )]
        );
        ctx.interaction = Arc::new(Scripted(Mutex::new(Vec::new()), None));
        let e = ClarifyTool
            .call(json!({"question": "x"}), &ctx)
            .await
            .unwrap_err();
        assert!(e.0.contains("did not answer"));
    }

    #[tokio::test]
    async fn without_a_user_the_model_is_told_to_decide() {
        let ctx = ToolContext::new(std::env::temp_dir());
        let e = ClarifyTool
            .call(json!({"question": "x?"}), &ctx)
            .await
            .unwrap_err();
        assert!(e.0.contains("no user is available"), "{e}");
        let e = ClarifyTool.call(json!({}), &ctx).await.unwrap_err();
        assert!(e.0.contains("question"));
    }
}
