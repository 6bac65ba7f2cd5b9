//! A route's prompt template filled from the payload, as the Python Hermes does: `{a.b.c}`
//! reads nested fields, `{event_type}` the event, `{__raw__}` the whole payload as indented
//! JSON (first 4000 characters); objects and lists become indented JSON (first 2000
//! characters); a missing field stays as written. No template: a default prompt with the
//! payload.

use serde_json::Value;

fn cut(s: String, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s,
    }
}

fn pretty(v: &Value, max: usize) -> String {
    cut(serde_json::to_string_pretty(v).unwrap_or_default(), max)
}

fn resolve(key: &str, payload: &Value, event_type: &str) -> String {
    match key {
        "__raw__" => return pretty(payload, 4000),
        "event_type" => return event_type.to_string(),
        _ => {}
    }
    let mut value = payload;
    for part in key.split('.') {
        match value.get(part) {
            Some(v) if value.is_object() => value = v,
            _ => return format!("{{{key}}}"),
        }
    }
    match value {
        Value::Object(_) | Value::Array(_) => pretty(value, 2000),
        Value::String(s) => s.clone(),
        Value::Null => "None".to_string(),
        Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        other => other.to_string(),
    }
}

/// Fills `template` with values from `payload`.
pub fn render(template: &str, payload: &Value, event_type: &str, route: &str) -> String {
    if template.is_empty() {
        return format!(
            "Webhook event '{event_type}' on route '{route}':\n\n```json\n{}\n```",
            pretty(payload, 4000)
        );
    }
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}');
        let key = close.map(|c| &after[..c]);
        match key {
            Some(k)
                if !k.is_empty()
                    && k.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') =>
            {
                out.push_str(&resolve(k, payload, event_type));
                rest = &after[k.len() + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_events_and_missing_keys() {
        let p = json!({"pull_request": {"title": "Fix it", "number": 7, "draft": false}, "labels": ["a"]});
        assert_eq!(
            render(
                "PR #{pull_request.number}: {pull_request.title} ({event_type}) {missing.x} {pull_request.draft}",
                &p,
                "opened",
                "gh"
            ),
            "PR #7: Fix it (opened) {missing.x} False"
        );
        assert_eq!(render("{labels}", &p, "", ""), "[\n  \"a\"\n]");
        assert_eq!(
            render("json {not a key} {", &p, "", ""),
            "json {not a key} {"
        );
    }

    #[test]
    fn default_prompt_and_raw() {
        let p = json!({"x": 1});
        assert_eq!(
            render("", &p, "push", "ci"),
            "Webhook event 'push' on route 'ci':\n\n```json\n{\n  \"x\": 1\n}\n```"
        );
        let big = json!({"s": "y".repeat(10_000)});
        assert_eq!(render("{__raw__}", &big, "", "").chars().count(), 4000);
    }
}
