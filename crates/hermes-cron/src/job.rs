//! One job as `jobs.json` holds it: a JSON object read through typed accessors and changed
//! field by field, so every field this build does not know (`origin`, `provider_snapshot`,
//! `context_from`, a newer Python's additions, ...) is written back untouched. Readers are
//! lenient like Python's `_normalize_job_record`: a null or missing name, prompt, state or
//! display is derived rather than fatal.

use serde_json::{Map, Value, json};

use crate::schedule::Schedule;

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub fields: Map<String, Value>,
}

/// What `hermes cron add` and the `cronjob` tool's `create` ask for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewJob {
    pub prompt: String,
    pub schedule: String,
    pub name: Option<String>,
    /// Runs before the job completes; `None` or `<= 0` is forever (once for one-shots).
    pub repeat: Option<i64>,
    /// `local` (the default), `origin` or `platform:chat_id`.
    pub deliver: Option<String>,
    pub skills: Vec<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    /// The chat the job was created from (the Python Hermes's `origin` object), where
    /// `deliver: origin` sends; without `deliver`, a job with an origin delivers there.
    pub origin: Option<Value>,
}

/// What `hermes cron edit` and the tool's `update` may change; `None` leaves a field alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobEdit {
    pub schedule: Option<String>,
    pub prompt: Option<String>,
    pub name: Option<String>,
    pub deliver: Option<String>,
    pub repeat: Option<i64>,
    pub skills: Option<Vec<String>>,
}

impl JobEdit {
    pub fn is_empty(&self) -> bool {
        *self == JobEdit::default()
    }
}

impl Job {
    pub fn from_value(value: Value) -> Option<Job> {
        match value {
            Value::Object(fields) => Some(Job { fields }),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.get(key)
    }

    pub fn set(&mut self, key: &str, value: Value) {
        self.fields.insert(key.to_string(), value);
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.fields
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    }

    pub fn id(&self) -> &str {
        self.fields.get("id").and_then(Value::as_str).unwrap_or("")
    }

    pub fn prompt(&self) -> String {
        match self.fields.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }

    /// The name, else the start of the prompt, the first skill or the id.
    pub fn name(&self) -> String {
        if let Some(name) = self.text("name") {
            return name.trim().to_string();
        }
        let prompt = self.prompt();
        let source = if !prompt.trim().is_empty() {
            prompt
        } else if let Some(skill) = self.skills().into_iter().next() {
            skill
        } else {
            self.id().to_string()
        };
        let label: String = source.chars().take(50).collect();
        match label.trim() {
            "" => "cron job".to_string(),
            l => l.to_string(),
        }
    }

    /// `skills` (ordered, without duplicates), else the legacy single `skill`.
    pub fn skills(&self) -> Vec<String> {
        let raw: Vec<String> = match self.fields.get("skills") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .collect(),
            Some(Value::String(s)) => vec![s.clone()],
            _ => self.text("skill").map(str::to_string).into_iter().collect(),
        };
        normalize_skills(raw)
    }

    pub fn schedule(&self) -> Option<Schedule> {
        self.fields.get("schedule").and_then(Schedule::from_value)
    }

    pub fn schedule_display(&self) -> String {
        if let Some(d) = self.text("schedule_display") {
            return d.trim().to_string();
        }
        match self.fields.get("schedule") {
            Some(Value::Object(s)) => ["display", "value", "expr", "run_at"]
                .iter()
                .find_map(|k| s.get(*k).and_then(Value::as_str).filter(|v| !v.is_empty()))
                .unwrap_or("?")
                .to_string(),
            Some(Value::String(s)) => s.clone(),
            _ => "?".to_string(),
        }
    }

    /// Where the answer goes: `local`, `origin`, `platform:chat_id`, or several joined by `,`.
    pub fn deliver(&self) -> String {
        match self.fields.get("deliver") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            _ => "local".to_string(),
        }
    }

    /// `(times, completed)`: `times` is `None` for forever.
    pub fn repeat(&self) -> (Option<u64>, u64) {
        let Some(Value::Object(r)) = self.fields.get("repeat") else {
            return (None, 0);
        };
        let times = r.get("times").and_then(Value::as_i64).filter(|t| *t > 0);
        let completed = r.get("completed").and_then(Value::as_u64).unwrap_or(0);
        (times.and_then(|t| u64::try_from(t).ok()), completed)
    }

    /// `forever`, `once`, `3 times`, `1/3`: as the Python tool shows it.
    pub fn repeat_display(&self) -> String {
        match self.repeat() {
            (None, _) => "forever".into(),
            (Some(1), 0) => "once".into(),
            (Some(t), 0) => format!("{t} times"),
            (Some(t), c) => format!("{c}/{t}"),
        }
    }

    pub fn enabled(&self) -> bool {
        self.fields
            .get("enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true)
    }

    /// `scheduled`, `paused`, `completed`, `running`, `error`; derived when missing.
    pub fn state(&self) -> String {
        match self.text("state") {
            Some(s) => s.trim().to_string(),
            None if self.enabled() => "scheduled".into(),
            None => "paused".into(),
        }
    }

    pub fn next_run_at(&self) -> Option<&str> {
        self.text("next_run_at")
    }

    pub fn last_run_at(&self) -> Option<&str> {
        self.text("last_run_at")
    }

    pub fn last_status(&self) -> Option<&str> {
        self.text("last_status")
    }

    pub fn last_error(&self) -> Option<&str> {
        self.text("last_error")
    }

    pub fn last_delivery_error(&self) -> Option<&str> {
        self.text("last_delivery_error")
    }

    /// A text field such as `model`, `provider`, `base_url`, `workdir`, `script`.
    pub fn optional(&self, key: &str) -> Option<&str> {
        self.text(key).map(str::trim)
    }

    /// `enabled_toolsets`, when the job restricts its tools.
    pub fn enabled_toolsets(&self) -> Option<Vec<String>> {
        let items = self.fields.get("enabled_toolsets")?.as_array()?;
        let names: Vec<String> = items
            .iter()
            .filter_map(Value::as_str)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        (!names.is_empty()).then_some(names)
    }

    /// A job whose work is a script (`script`, `no_agent`): the Python Hermes runs those.
    pub fn has_script(&self) -> bool {
        self.text("script").is_some()
            || self
                .fields
                .get("no_agent")
                .and_then(Value::as_bool)
                .unwrap_or(false)
    }

    /// Sets `skills` and the legacy `skill` (its first) together, as Python does.
    pub fn set_skills(&mut self, skills: Vec<String>) {
        let skills = normalize_skills(skills);
        self.set(
            "skill",
            skills.first().map(|s| json!(s)).unwrap_or(Value::Null),
        );
        self.set("skills", json!(skills));
    }

    /// Sets how many runs the job has before it completes (`<= 0`: forever), keeping the count
    /// so far.
    pub fn set_repeat_times(&mut self, times: Option<i64>) {
        let completed = self.repeat().1;
        let times = times.filter(|t| *t > 0);
        self.set("repeat", json!({"times": times, "completed": completed}));
    }
}

/// Trimmed, without empties and duplicates, in order.
pub fn normalize_skills(raw: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in raw {
        let s = s.trim().to_string();
        if !s.is_empty() && !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn job(v: Value) -> Job {
        Job::from_value(v).unwrap()
    }

    #[test]
    fn lenient_like_python_for_hand_edited_records() {
        let j = job(
            json!({"id": "abc", "prompt": null, "name": null, "skill": "blog",
                           "schedule": {"kind": "cron", "expr": "0 9 * * *"}, "enabled": false,
                           "deliver": null, "repeat": null}),
        );
        assert_eq!(j.name(), "blog");
        assert_eq!(j.prompt(), "");
        assert_eq!(j.skills(), vec!["blog"]);
        assert_eq!(j.state(), "paused");
        assert_eq!(j.schedule_display(), "0 9 * * *");
        assert_eq!(j.deliver(), "local");
        assert_eq!(j.repeat(), (None, 0));
        assert_eq!(j.repeat_display(), "forever");
        let j = job(
            json!({"id": "x1", "prompt": "Summarise the news of the day in five short bullet points please",
                           "deliver": ["origin", "telegram:1"], "repeat": {"times": 3, "completed": 1}}),
        );
        assert_eq!(
            j.name(),
            "Summarise the news of the day in five short bullet"
        );
        assert_eq!(j.deliver(), "origin,telegram:1");
        assert_eq!(j.repeat_display(), "1/3");
        assert_eq!(j.state(), "scheduled");
    }

    #[test]
    fn skills_and_repeat_setters_keep_python_shape() {
        let mut j = job(json!({"id": "a", "repeat": {"times": 2, "completed": 1}}));
        j.set_skills(vec![" a ".into(), "b".into(), "a".into(), "".into()]);
        assert_eq!(j.get("skills"), Some(&json!(["a", "b"])));
        assert_eq!(j.get("skill"), Some(&json!("a")));
        j.set_skills(vec![]);
        assert_eq!(j.get("skill"), Some(&Value::Null));
        j.set_repeat_times(Some(0));
        assert_eq!(
            j.get("repeat"),
            Some(&json!({"times": null, "completed": 1}))
        );
    }
}
