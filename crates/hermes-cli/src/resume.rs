//! The conversation of a resumed session printed back as the REPL showed it (the recap after
//! `--resume`, `--continue` and `/resume`). Which session is resumed, and loading it, is the
//! runtime's business.

use hermes_protocol::Role;
use hermes_runtime::Resumed;
use hermes_tools::output::{first_string_arg, shorten_line};

/// The conversation so far, as the REPL showed it: user lines after `❯`, answers, one line per
/// tool call.
pub fn recap(resumed: &Resumed) -> String {
    let r = &resumed.record;
    let mut out = format!("Resumed session {}", r.id);
    if let Some(t) = &r.title {
        out.push_str(&format!(" · {t}"));
    }
    out.push_str(&format!(
        " · {} messages · last active {}\n",
        r.message_count,
        hermes_store::time::relative_age(r.updated_at, hermes_store::time::now())
    ));
    for m in &resumed.stored {
        match m.message.role {
            Role::User => out.push_str(&format!("\n❯ {}\n", m.message.content)),
            Role::Assistant => {
                let text = m.message.content.trim_end();
                if !text.is_empty() && text != "[interrupted]" {
                    out.push_str(text);
                    out.push('\n');
                }
                for call in &m.message.tool_calls {
                    let args = serde_json::from_str(&call.arguments).unwrap_or_default();
                    out.push_str(&format!("  · {}  {}\n", call.name, first_string_arg(&args)));
                }
                let cut =
                    m.partial || m.finish_reason.as_deref() == Some(hermes_store::INTERRUPTED);
                if cut || text == "[interrupted]" {
                    out.push_str("  · interrupted\n");
                }
            }
            Role::Tool if m.message.content.starts_with("{\"error\"") => out.push_str(&format!(
                "    ✗ {}\n",
                shorten_line(&m.message.content, 100)
            )),
            Role::Tool | Role::System => {}
        }
    }
    out
}
