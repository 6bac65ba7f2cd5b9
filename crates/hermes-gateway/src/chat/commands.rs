//! Slash commands in chats (the Python Hermes's gateway set): `/new` and `/reset` start a new
//! conversation, `/stop` interrupts the running turn, `/model [name]` shows or switches the
//! model, `/usage`, `/title [name]`, `/compress [focus]`, `/skills` and `/<skill> [request]`,
//! `/approve [session|always]` and `/deny` answer a pending approval, `/status`, `/kanban ...`
//! (the task board), `/help`.
//! `/cmd@botname` is the same command. An unknown `/word` is said to the agent as it is.

use hermes_llm::Overrides;
use hermes_runtime::Compression;
use hermes_tools::ApprovalAnswer;
use tokio_util::sync::CancellationToken;

use super::worker::Worker;

/// A command typed in a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    New,
    Stop,
    Model(String),
    Usage,
    Title(String),
    Compress(String),
    Skills,
    Approve(ApprovalAnswer),
    Deny,
    Status,
    Help,
    /// `/kanban ...`: the board (list, show, comment, unblock, ...).
    Kanban(String),
    /// `/<word> [request]`: a skill, if one has that command name (else the text goes to the
    /// agent).
    Other {
        word: String,
        rest: String,
    },
}

/// The command in `text`, when it is one.
pub fn parse(text: &str) -> Option<Command> {
    let text = text.trim();
    let rest = text.strip_prefix('/')?;
    if rest.starts_with('/') || rest.is_empty() {
        return None;
    }
    let (head, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    // `/cmd@botname`.
    let word = head.split('@').next().unwrap_or(head).to_ascii_lowercase();
    Some(match word.as_str() {
        "new" | "reset" => Command::New,
        "stop" => Command::Stop,
        "model" => Command::Model(args.to_string()),
        "usage" => Command::Usage,
        "title" => Command::Title(args.to_string()),
        "compress" => Command::Compress(args.to_string()),
        "skills" => Command::Skills,
        "approve" | "yes" => Command::Approve(match args.to_ascii_lowercase().as_str() {
            "session" => ApprovalAnswer::Session,
            "always" => ApprovalAnswer::Always,
            _ => ApprovalAnswer::Once,
        }),
        "deny" | "no" => Command::Deny,
        "status" => Command::Status,
        "help" | "start" => Command::Help,
        "kanban" => Command::Kanban(args.to_string()),
        _ => Command::Other {
            word,
            rest: args.to_string(),
        },
    })
}

const HELP: &str = "Commands:
/new — start a new conversation (also /reset)
/stop — stop what I'm doing
/model [name] — show or switch the model
/usage — tokens and cost so far
/title [name] — show or set this conversation's title
/compress [focus] — shrink a long conversation
/skills — what I know how to do; /<skill> [request] runs one
/approve [session|always], /deny — answer an approval request
/status — what I'm running on
/kanban — the task board: list, show ID, unblock ID [answer], ...
A message sent while I work interrupts me, and I answer it next.";

impl Worker {
    /// Runs `command` between turns; `Some(text)` is a message to run as a turn (a skill).
    pub(super) async fn command(&mut self, command: Command) -> Option<String> {
        match command {
            Command::Help => self.say(HELP).await,
            Command::New => {
                let id = match self.session().await {
                    Ok(session) => session.new_conversation(),
                    Err(e) => return self.fail(&e).await,
                };
                self.shared.routes.set(&self.key, &id, None);
                self.totals = Default::default();
                self.last = None;
                self.say("✨ Started a new conversation.").await;
            }
            Command::Stop => self.say("Nothing is running.").await,
            Command::Approve(_) | Command::Deny => {
                self.say("Nothing is waiting for approval.").await;
            }
            Command::Model(name) => {
                let session = match self.session().await {
                    Ok(s) => s,
                    Err(e) => return self.fail(&e).await,
                };
                let text = if name.trim().is_empty() {
                    format!(
                        "Model: {} via {}. /model NAME switches.",
                        session.agent().model(),
                        session.provider().provider
                    )
                } else {
                    let choice = Overrides {
                        model: Some(name.trim().to_string()),
                        ..session.spec().model.clone()
                    };
                    match session.switch_model(choice) {
                        Ok(()) => format!(
                            "Now using {} via {}; the conversation continues.",
                            session.agent().model(),
                            session.provider().provider
                        ),
                        Err(e) => format!("Not switched: {e}"),
                    }
                };
                self.say(&text).await;
            }
            Command::Usage => {
                let t = &self.totals;
                let cost = t
                    .cost_usd
                    .map_or("cost unknown".to_string(), |c| format!("${c:.4}"));
                let last = self.last.as_ref().map_or("none yet".to_string(), |r| {
                    format!(
                        "{} calls · {} in · {} out",
                        r.api_calls, r.usage.input_tokens, r.usage.output_tokens
                    )
                });
                self.say(&format!(
                    "Last turn: {last}\nThis conversation: {} turns · {} calls · {} in · {} out · {cost}",
                    t.turns, t.api_calls, t.usage.input_tokens, t.usage.output_tokens
                ))
                .await;
            }
            Command::Title(title) => {
                let line = match self.session().await {
                    Ok(s) => s.recorder().title_command(&title),
                    Err(e) => return self.fail(&e).await,
                };
                self.say(&line).await;
            }
            Command::Compress(focus) => {
                let focus = Some(focus.trim().to_string()).filter(|f| !f.is_empty());
                let outcome = match self.session().await {
                    Ok(s) => {
                        s.compress(focus.as_deref(), &CancellationToken::new())
                            .await
                    }
                    Err(e) => return self.fail(&e).await,
                };
                let text = match outcome {
                    Compression::Off => "Compression is off (compression.enabled: false).".into(),
                    Compression::Interrupted => "Compression was interrupted.".into(),
                    Compression::Unchanged(_) => "Nothing to compress yet.".into(),
                    Compression::Done(out) => format!(
                        "Compressed the conversation: ~{} → ~{} tokens.",
                        out.tokens_before, out.tokens_after
                    ),
                };
                if let Some(session) = &self.session {
                    let id = session.session_id();
                    self.shared.routes.set(&self.key, &id, None);
                }
                self.say(&text).await;
            }
            Command::Skills => {
                let list = match self.session().await {
                    Ok(s) => {
                        let loaded = s.skills().load();
                        loaded
                            .active()
                            .map(|sk| format!("• {} — {}", sk.name, sk.description))
                            .collect::<Vec<_>>()
                    }
                    Err(e) => return self.fail(&e).await,
                };
                if list.is_empty() {
                    self.say("No skills yet.").await;
                } else {
                    self.say(&format!("Skills:\n{}", list.join("\n"))).await;
                }
            }
            Command::Status => {
                let text = match self.session().await {
                    Ok(s) => format!(
                        "Model {} via {} · session {} · {} messages · working in {}",
                        s.agent().model(),
                        s.provider().provider,
                        s.session_id(),
                        s.history().len(),
                        s.spec().cwd.display()
                    ),
                    Err(e) => return self.fail(&e).await,
                };
                self.say(&text).await;
            }
            Command::Kanban(args) => {
                let root = hermes_kanban::kanban_root(self.shared.runtime.home().root());
                let author = self.key.clone();
                let text = tokio::task::spawn_blocking(move || {
                    hermes_kanban::chat::run(&root, &args, &author)
                })
                .await
                .unwrap_or_else(|e| format!("⚠️ {e}"));
                self.say(&text).await;
            }
            Command::Other { word, rest } => {
                let skills = match self.session().await {
                    Ok(s) => (s.skills().clone(), s.session_id()),
                    Err(e) => return self.fail(&e).await,
                };
                let (library, session_id) = skills;
                let original = if rest.is_empty() {
                    format!("/{word}")
                } else {
                    format!("/{word} {rest}")
                };
                let Some(skill) = hermes_core::skills::invoke::find_command(&library, &word) else {
                    return Some(original);
                };
                return match hermes_core::skills::invoke::message(
                    &library,
                    &skill,
                    &rest,
                    &session_id,
                ) {
                    Ok(message) => {
                        self.say(&format!("⚡ Running skill {}", skill.name)).await;
                        Some(message)
                    }
                    Err(notice) => {
                        self.say(&notice.to_string()).await;
                        None
                    }
                };
            }
        }
        None
    }

    async fn fail(&self, error: &str) -> Option<String> {
        self.say(&format!("⚠️ {error}")).await;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("/new"), Some(Command::New));
        assert_eq!(parse("/reset@hermes_bot"), Some(Command::New));
        assert_eq!(parse("/model gpt-5"), Some(Command::Model("gpt-5".into())));
        assert_eq!(
            parse("/approve always"),
            Some(Command::Approve(ApprovalAnswer::Always))
        );
        assert_eq!(
            parse("/approve"),
            Some(Command::Approve(ApprovalAnswer::Once))
        );
        assert_eq!(parse("hello"), None);
        assert_eq!(parse("//not a command"), None);
        assert_eq!(
            parse("/deploy now"),
            Some(Command::Other {
                word: "deploy".into(),
                rest: "now".into()
            })
        );
    }
}
