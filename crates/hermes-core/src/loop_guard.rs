//! The loop guard: a model that repeats the same tool call (same name, same arguments after
//! normalisation) while it keeps failing, or keeps returning the same result, is stopped
//! before it burns the whole iteration budget. Per turn and per call: the result of the
//! `note_after`-th repeat (3) carries a firm note that the call will not run again; later
//! repeats are answered with that note instead of running; the `stop_after`-th (5) ends the
//! turn with a clear reason. Any other outcome (a success with a new result) resets the count.
//! Applies to every provider, local or remote. `process` (polling a background job) and
//! `clarify` (asking the user) legitimately repeat and are left alone.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use hermes_protocol::{Message, ToolCall};
use serde::Deserialize;
use serde_json::Value;

use crate::executor::{Action, PlannedCall};

/// Tools whose identical calls are expected to repeat.
const EXEMPT: [&str; 2] = ["process", "clarify"];

/// `agent.loop_guard` in config.yaml.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct LoopGuardSettings {
    pub enabled: bool,
    /// Repeats after which the call is not run again (its last result carries the note).
    pub note_after: u32,
    /// Repeats at which the turn ends.
    pub stop_after: u32,
}

impl Default for LoopGuardSettings {
    fn default() -> Self {
        LoopGuardSettings {
            enabled: true,
            note_after: 3,
            stop_after: 5,
        }
    }
}

impl LoopGuardSettings {
    /// `agent.loop_guard` of a config document (defaults for anything missing or unusable;
    /// `stop_after` is kept above `note_after`).
    pub fn from_config(raw: &Value) -> LoopGuardSettings {
        let mut s = raw
            .pointer("/agent/loop_guard")
            .and_then(|v| LoopGuardSettings::deserialize(v).ok())
            .unwrap_or_default();
        s.note_after = s.note_after.max(1);
        s.stop_after = s.stop_after.max(s.note_after + 1);
        s
    }
}

/// What happened to one call signature, in a row.
#[derive(Debug, Clone, Copy)]
struct Streak {
    /// Fingerprint of the last result.
    outcome: u64,
    failed: bool,
    /// Repeats so far, runs and refusals alike.
    repeats: u32,
}

/// The guard of one turn.
#[derive(Debug)]
pub(crate) struct LoopGuard {
    settings: LoopGuardSettings,
    streaks: HashMap<u64, Streak>,
}

impl LoopGuard {
    pub(crate) fn new(settings: LoopGuardSettings) -> LoopGuard {
        LoopGuard {
            settings,
            streaks: HashMap::new(),
        }
    }

    /// Looks at the calls about to run: a call repeated past `note_after` is answered with the
    /// note instead; at `stop_after` every call of the response is refused and the reason to
    /// end the turn is returned.
    pub(crate) fn review(&mut self, planned: &mut [PlannedCall]) -> Option<String> {
        if !self.settings.enabled {
            return None;
        }
        let mut stop = None;
        for p in planned.iter_mut() {
            let Some(key) = signature(p) else {
                continue;
            };
            let Some(streak) = self.streaks.get_mut(&key) else {
                continue;
            };
            if streak.repeats < self.settings.note_after {
                continue;
            }
            streak.repeats += 1;
            if streak.repeats >= self.settings.stop_after {
                stop = Some(format!(
                    "stopped: the model called {} with the same arguments {} times in a row and it kept {} (loop guard)",
                    p.call.name,
                    streak.repeats,
                    if streak.failed {
                        "failing"
                    } else {
                        "returning the same result"
                    }
                ));
            } else {
                p.action = Action::Reject(refusal(&p.call, *streak));
            }
        }
        if let Some(reason) = &stop {
            for p in planned.iter_mut() {
                p.action = Action::Reject(format!("not run: {reason}"));
            }
        }
        stop
    }

    /// Records the result of a call; the result comes back with the note when this run made
    /// the repeat that stops the call.
    pub(crate) fn observe(&mut self, planned: &[PlannedCall], mut result: Message) -> Message {
        if !self.settings.enabled {
            return result;
        }
        let Some(p) = planned
            .iter()
            .find(|p| Some(p.call.id.as_str()) == result.tool_call_id.as_deref())
        else {
            return result;
        };
        // Refusals of the guard itself were counted by `review`.
        if matches!(&p.action, Action::Reject(m) if m.starts_with(GUARD_MARK) || m.starts_with("not run: stopped"))
        {
            return result;
        }
        let Some(key) = signature(p) else {
            return result;
        };
        let failed = is_failure(&p.call.name, &result.content);
        let outcome = fingerprint(&result.content);
        let streak = self.streaks.entry(key).or_insert(Streak {
            outcome,
            failed,
            repeats: 0,
        });
        let repeated =
            streak.repeats > 0 && ((failed && streak.failed) || outcome == streak.outcome);
        *streak = Streak {
            outcome,
            failed,
            repeats: if repeated { streak.repeats + 1 } else { 1 },
        };
        if streak.repeats == self.settings.note_after {
            result.content.push_str("\n\n");
            result.content.push_str(&note(&p.call, *streak));
        }
        result
    }
}

/// How refusals of the guard begin (so they are not counted as new failures).
const GUARD_MARK: &str = "[loop guard]";

fn note(call: &ToolCall, streak: Streak) -> String {
    format!(
        "{GUARD_MARK} {} with these exact arguments has now {} {} times in a row. It will not be run again in this turn: repeating it cannot help. Read the result above, then change the arguments, use a different tool, or tell the user what blocks you.",
        call.name,
        if streak.failed {
            "failed"
        } else {
            "returned the same result"
        },
        streak.repeats
    )
}

fn refusal(call: &ToolCall, streak: Streak) -> String {
    format!(
        "{GUARD_MARK} not run: {} with these exact arguments already {} {} times in a row. Do not call it again with the same arguments; change the approach or explain the blocker to the user. Repeating it once more ends the turn.",
        call.name,
        if streak.failed {
            "failed"
        } else {
            "returned the same result"
        },
        streak.repeats - 1
    )
}

/// Name and normalised arguments (keys sorted, whitespace gone) of a call, hashed; `None` for
/// exempt tools.
fn signature(p: &PlannedCall) -> Option<u64> {
    if EXEMPT.contains(&p.call.name.as_str()) {
        return None;
    }
    let args = match &p.action {
        Action::Run { args, .. } => canonical(args),
        Action::Reject(_) => serde_json::from_str::<Value>(&p.call.arguments)
            .map(|v| canonical(&v))
            .unwrap_or_else(|_| p.call.arguments.trim().to_string()),
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.call.name.hash(&mut h);
    args.hash(&mut h);
    Some(h.finish())
}

/// JSON text with object keys sorted at every level, whatever order the value keeps them in.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            format!(
                "[{}]",
                items.iter().map(canonical).collect::<Vec<_>>().join(",")
            )
        }
        other => other.to_string(),
    }
}

/// A result fingerprint that ignores JSON formatting.
fn fingerprint(content: &str) -> u64 {
    let canonical = serde_json::from_str::<Value>(content)
        .map(|v| canonical(&v))
        .unwrap_or_else(|_| content.to_string());
    let mut h = std::collections::hash_map::DefaultHasher::new();
    canonical.hash(&mut h);
    h.finish()
}

/// Whether a tool result reports a failure: an `error`, or a command's non-zero exit.
fn is_failure(tool: &str, content: &str) -> bool {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(content) else {
        return false;
    };
    if map.get("error").is_some_and(|e| !e.is_null()) {
        return true;
    }
    tool == "terminal"
        && map
            .get("exit_code")
            .and_then(Value::as_i64)
            .is_some_and(|c| c != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A call of a built-in tool about to run.
    fn planned(id: &str, name: &str, args: Value) -> PlannedCall {
        let registry = hermes_tools::Registry::builtin();
        let tool = registry.get(name).cloned().unwrap();
        PlannedCall {
            call: ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args.to_string(),
            },
            action: Action::Run { tool, args },
        }
    }

    /// One round of `read_file`: review, then `content` as the result of a call that ran (the
    /// refusal text for one that did not).
    fn round(
        guard: &mut LoopGuard,
        id: &str,
        args: Value,
        content: &str,
    ) -> (Option<String>, Option<String>) {
        let mut p = vec![planned(id, "read_file", args)];
        let stop = guard.review(&mut p);
        let refused = match &p[0].action {
            Action::Reject(m) => Some(m.clone()),
            Action::Run { .. } => None,
        };
        let content = refused.clone().unwrap_or_else(|| content.to_string());
        let out = guard.observe(&p, Message::tool_result(id, "read_file", content));
        (stop, Some(out.content))
    }

    const ERR: &str = r#"{"error": "x is a directory"}"#;

    #[test]
    fn a_failing_call_gets_the_note_on_the_third_is_refused_then_stops_the_turn() {
        let mut g = LoopGuard::new(LoopGuardSettings::default());
        let args = json!({"path": ".", "limit": 5});
        assert_eq!(
            round(&mut g, "1", args.clone(), ERR),
            (None, Some(ERR.into()))
        );
        assert_eq!(
            round(&mut g, "2", args.clone(), ERR).1.as_deref(),
            Some(ERR)
        );
        let third = round(&mut g, "3", args.clone(), ERR).1.unwrap();
        assert!(
            third.starts_with(ERR) && third.contains("will not be run again"),
            "{third}"
        );
        // Same call with keys in another order: the same signature.
        let (stop, fourth) = round(&mut g, "4", json!({"limit": 5, "path": "."}), ERR);
        assert_eq!(stop, None);
        assert!(fourth.unwrap().starts_with("[loop guard] not run"));
        let (stop, _) = round(&mut g, "5", args, ERR);
        let reason = stop.unwrap();
        assert!(
            reason.contains("read_file") && reason.contains("5 times"),
            "{reason}"
        );
    }

    #[test]
    fn the_same_successful_result_counts_and_a_change_resets() {
        let mut g = LoopGuard::new(LoopGuardSettings::default());
        let args = json!({"path": "a"});
        round(&mut g, "1", args.clone(), r#"{"content": "1|a"}"#);
        round(&mut g, "2", args.clone(), r#"{"content":"1|a"}"#);
        let (_, third) = round(&mut g, "3", args.clone(), r#"{"content": "1|a"}"#);
        assert!(third.unwrap().contains("returned the same result 3 times"));

        let mut g = LoopGuard::new(LoopGuardSettings::default());
        for (i, content) in ["1|a", "1|b", "1|c", "1|d", "1|e", "1|f"]
            .iter()
            .enumerate()
        {
            let body = json!({"content": content}).to_string();
            let (stop, out) = round(&mut g, &i.to_string(), args.clone(), &body);
            assert_eq!(
                (stop, out),
                (None, Some(body)),
                "a file that changes is read again"
            );
        }
    }

    #[test]
    fn different_arguments_and_exempt_tools_are_not_repeats() {
        let mut g = LoopGuard::new(LoopGuardSettings::default());
        for i in 0..6 {
            let (stop, out) = round(&mut g, &i.to_string(), json!({"path": i}), ERR);
            assert_eq!((stop, out.as_deref()), (None, Some(ERR)));
        }
        let mut g = LoopGuard::new(LoopGuardSettings::default());
        for i in 0..6 {
            let mut p = vec![planned(
                &i.to_string(),
                "process",
                json!({"action": "poll", "id": "p1"}),
            )];
            assert_eq!(g.review(&mut p), None);
            let out = g.observe(
                &p,
                Message::tool_result(i.to_string(), "process", "{\"status\":\"running\"}"),
            );
            assert!(!out.content.contains("loop guard"));
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        assert_eq!(
            canonical(&json!({"b": [{"y": 1, "x": 2}], "a": "s"})),
            r#"{"a":"s","b":[{"x":2,"y":1}]}"#
        );
    }

    #[test]
    fn terminal_exit_codes_are_failures_and_settings_are_read() {
        assert!(is_failure("terminal", r#"{"output": "", "exit_code": 2}"#));
        assert!(!is_failure(
            "terminal",
            r#"{"output": "ok", "exit_code": 0}"#
        ));
        assert!(!is_failure("read_file", "plain text"));
        let s = LoopGuardSettings::from_config(
            &json!({"agent": {"loop_guard": {"note_after": 2, "stop_after": 1}}}),
        );
        assert_eq!((s.enabled, s.note_after, s.stop_after), (true, 2, 3));
        let s =
            LoopGuardSettings::from_config(&json!({"agent": {"loop_guard": {"enabled": false}}}));
        assert!(!s.enabled);
        let mut g = LoopGuard::new(s);
        for i in 0..6 {
            assert_eq!(round(&mut g, &i.to_string(), json!({}), ERR).0, None);
        }
    }
}
