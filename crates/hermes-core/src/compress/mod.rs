//! Context compression: keeps long sessions inside the model's window without losing the task.
//! (1) old tool results become one-line summaries; (2) the first messages and (3) a tail sized
//! by a token budget are protected, never splitting a tool call from its results; (4) the
//! middle is summarised by the auxiliary model into fixed sections behind a "reference only"
//! notice (pruning alone if that fails); (5) orphaned tool pairs are repaired. Two weak passes
//! in a row switch automatic compression off for the session; failures back off 60 s, 300 s,
//! 900 s. The system prompt is never touched, so prompt caches stay warm. After a context
//! overflow ([`Compressor::recover_overflow`]) the window the provider named is remembered for
//! the session and the request is shrunk until it fits ([`overflow`]).

pub mod overflow;
pub mod prune;
pub mod summary;
pub mod tokens;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use hermes_protocol::{Message, Role, ToolSchema};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::{ModelTarget, close_dangling_tool_calls};

/// Windows below this trigger at 75 % (at least); larger ones at the configured 50 %.
const SMALL_WINDOW: u64 = 512_000;
/// A pass saving less than this share is weak; two weak passes in a row stop auto-compression.
const WEAK_SAVING: f64 = 0.10;
/// Cooldowns after failed summaries.
const FAILURE_COOLDOWNS: [Duration; 3] = [
    Duration::from_secs(60),
    Duration::from_secs(300),
    Duration::from_secs(900),
];

/// `compression:` in config.yaml.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct CompressionSettings {
    pub enabled: bool,
    /// Share of the window at which compression starts (0.50; windows under 512K use at least
    /// 0.75).
    pub threshold: f64,
    /// Overrides the catalogue's context window.
    pub context_length: Option<u64>,
    /// Per-model thresholds by substring of the model id: `{gpt-5: 0.8}`.
    pub model_thresholds: std::collections::BTreeMap<String, f64>,
    /// Messages at the start that are never compressed.
    pub protect_first_n: usize,
    /// Keep the session row when compressing (old rows marked inactive) instead of starting a
    /// child session.
    pub in_place: bool,
}

impl Default for CompressionSettings {
    fn default() -> Self {
        CompressionSettings {
            enabled: true,
            threshold: 0.50,
            context_length: None,
            model_thresholds: Default::default(),
            protect_first_n: 3,
            in_place: false,
        }
    }
}

/// What one compression pass did.
#[derive(Debug, Clone)]
pub struct Compressed {
    pub messages: Vec<Message>,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub pruned: usize,
    /// The middle was summarised (false: pruning only).
    pub summarized: bool,
    /// Something the user should hear (summary failed, automatic compression off, ...).
    pub notice: Option<String>,
}

#[derive(Debug, Default)]
struct ThrashState {
    weak_passes: u32,
    auto_disabled: bool,
    failures: usize,
    cooldown_until: Option<Instant>,
}

pub struct Compressor {
    settings: CompressionSettings,
    window: u64,
    /// The window a provider's overflow error named (0: none yet); smaller than `window`.
    learned_window: std::sync::atomic::AtomicU64,
    /// The configured share of the window (the model's own, else the default).
    threshold: f64,
    aux: ModelTarget,
    state: Mutex<ThrashState>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("window", &self.window)
            .field("threshold", &self.threshold)
            .finish_non_exhaustive()
    }
}

impl Compressor {
    /// A compressor for `model`, summarising with `aux`.
    pub fn new(settings: CompressionSettings, model: &str, aux: ModelTarget) -> Compressor {
        let window = settings
            .context_length
            .filter(|&w| w > 0)
            .unwrap_or_else(|| hermes_llm::catalogue::context_window(model));
        let lower = model.to_ascii_lowercase();
        let configured = settings
            .model_thresholds
            .iter()
            .filter(|(k, _)| lower.contains(&k.to_ascii_lowercase()))
            .max_by_key(|(k, _)| k.len())
            .map_or(settings.threshold, |(_, v)| *v);
        Compressor {
            settings,
            window,
            learned_window: std::sync::atomic::AtomicU64::new(0),
            threshold: configured,
            aux,
            state: Mutex::new(ThrashState::default()),
        }
    }

    /// The context window: the configured or catalogued one, or the smaller one a provider
    /// named in an overflow error this session.
    pub fn window(&self) -> u64 {
        match self
            .learned_window
            .load(std::sync::atomic::Ordering::Acquire)
        {
            0 => self.window,
            learned => learned.min(self.window),
        }
    }

    /// Learns the window from an overflow error's text when it names one smaller than the
    /// window in use; returns it then.
    pub fn learn_window(&self, error_text: &str) -> Option<u64> {
        let named = hermes_llm::error::context_limit(error_text)?;
        if named >= self.window() {
            return None;
        }
        self.learned_window
            .store(named, std::sync::atomic::Ordering::Release);
        Some(named)
    }

    /// After the provider refused a request as too long (`error_text` is its message): learn
    /// the window it named, run the overflow pass, then cut the largest tool results (and,
    /// if that is not enough, other messages) until the request fits the window with room
    /// for the answer, the full texts kept under `spill_dir`. `None` when nothing could be
    /// made smaller.
    pub async fn recover_overflow(
        &self,
        error_text: &str,
        system: &str,
        tools: &[ToolSchema],
        messages: &[Message],
        spill_dir: Option<&std::path::Path>,
        cancel: &CancellationToken,
    ) -> Option<Compressed> {
        let learned = self.learn_window(error_text);
        let before = overflow::request_tokens(system, tools, messages);
        // The saving counts once, cuts included.
        let mut out = self
            .overflow_pass(system, tools, messages, cancel, false)
            .await;
        let target = overflow::prompt_budget(self.window());
        let cuts = overflow::cut_to_fit(system, tools, &mut out.messages, target, spill_dir);
        let after = overflow::request_tokens(system, tools, &out.messages);
        let mut notes: Vec<String> = out.notice.take().into_iter().collect();
        notes.extend(self.record_saving(before, after));
        if let Some(w) = learned {
            notes.push(format!(
                "the provider's context window is {} tokens; using that for the rest of the session",
                hermes_llm::util::thousands(w)
            ));
        }
        if cuts.messages > 0 {
            let kept = match cuts.spilled.first().and_then(|p| p.parent()) {
                Some(dir) => format!("; the full texts are in {}", dir.display()),
                None => String::new(),
            };
            notes.push(format!(
                "cut {} large message{} to fit{kept}",
                cuts.messages,
                if cuts.messages == 1 { "" } else { "s" }
            ));
        }
        if after > target {
            notes.push(format!(
                "the request is still ~{after} tokens, over the ~{target} the window allows"
            ));
        }
        out.notice = (!notes.is_empty()).then(|| notes.join("; "));
        out.tokens_before = before;
        out.tokens_after = after;
        (after < before).then_some(out)
    }

    pub fn settings(&self) -> &CompressionSettings {
        &self.settings
    }

    /// Prompt tokens at which automatic compression starts.
    pub fn threshold_tokens(&self) -> u64 {
        let window = self.window();
        let share = if window < SMALL_WINDOW {
            self.threshold.max(0.75)
        } else {
            self.threshold
        }
        .clamp(0.05, 0.98);
        (window as f64 * share) as u64
    }

    /// Whether automatic compression should run for a prompt of this size now.
    pub fn should_compress(&self, prompt_tokens: u64) -> bool {
        if !self.settings.enabled || prompt_tokens < self.threshold_tokens() {
            return false;
        }
        let Ok(st) = self.state.lock() else {
            return false;
        };
        !st.auto_disabled && st.cooldown_until.is_none_or(|t| Instant::now() >= t)
    }

    /// The protected tail's token budget: 2.5 % of the window, clamped to 10K-25K, never
    /// above 20 % of the window.
    pub fn tail_budget(&self) -> u64 {
        let w = self.window();
        ((w as f64 * 0.025) as u64).clamp(10_000, 25_000).min(w / 5)
    }

    /// Compresses `messages` (the conversation without the system prompt). `focus` steers the
    /// summary (`/compress focus`). Automatic passes feed the anti-thrashing bookkeeping.
    pub async fn compress(
        &self,
        system: &str,
        tools: &[ToolSchema],
        messages: &[Message],
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Compressed {
        self.compress_with_tail(
            system,
            tools,
            messages,
            focus,
            cancel,
            self.tail_budget(),
            true,
        )
        .await
    }

    /// After the provider said the prompt does not fit: the protected tail is at most a quarter
    /// of the conversation, whatever the window claims.
    pub async fn compress_overflow(
        &self,
        system: &str,
        tools: &[ToolSchema],
        messages: &[Message],
        cancel: &CancellationToken,
    ) -> Compressed {
        self.overflow_pass(system, tools, messages, cancel, true)
            .await
    }

    /// The overflow pass; `record`: count its saving for anti-thrashing.
    async fn overflow_pass(
        &self,
        system: &str,
        tools: &[ToolSchema],
        messages: &[Message],
        cancel: &CancellationToken,
        record: bool,
    ) -> Compressed {
        let total: u64 = messages.iter().map(tokens::rough_message).sum();
        let budget = self.tail_budget().min(total / 4);
        self.compress_with_tail(system, tools, messages, None, cancel, budget, record)
            .await
    }

    // The arguments are the pass's inputs; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    async fn compress_with_tail(
        &self,
        system: &str,
        tools: &[ToolSchema],
        messages: &[Message],
        focus: Option<&str>,
        cancel: &CancellationToken,
        tail_budget: u64,
        record: bool,
    ) -> Compressed {
        let tokens_before = tokens::rough_request(system, tools, messages);
        let mut working = messages.to_vec();
        let head_end = protect_head(&working, self.settings.protect_first_n);
        let tail_start = protect_tail(&working, head_end, tail_budget);
        let pruned = prune::prune_tool_results(&mut working, head_end..tail_start);

        let mut notice = None;
        let mut summarized = false;
        if tail_start > head_end {
            let middle = &working[head_end..tail_start];
            // The transcript may use up to a third of the window (in characters: tokens * 3).
            let max_chars = (self.window() as usize / 3).saturating_mul(3).max(20_000);
            match summary::generate(&self.aux, middle, focus, max_chars, cancel).await {
                Ok(text) => {
                    let mut out = working[..head_end].to_vec();
                    let role_after = working.get(tail_start).map(|m| m.role);
                    let summary_msg = if role_after == Some(Role::User) {
                        Message::assistant(format!("{}\n\n{text}", summary::SUMMARY_NOTICE))
                    } else {
                        Message::user(format!("{}\n\n{text}", summary::SUMMARY_NOTICE))
                    };
                    out.push(summary_msg);
                    out.extend_from_slice(&working[tail_start..]);
                    working = out;
                    summarized = true;
                    self.record_success();
                }
                Err(reason) => {
                    let cooldown = self.record_failure();
                    notice = Some(format!(
                        "could not summarize the conversation ({reason}); old tool output was pruned instead; next attempt in {}s",
                        cooldown.as_secs()
                    ));
                }
            }
        }
        merge_adjacent(&mut working);
        close_dangling_tool_calls(&mut working);
        let tokens_after = tokens::rough_request(system, tools, &working);
        if let Some(off) = record
            .then(|| self.record_saving(tokens_before, tokens_after))
            .flatten()
        {
            notice = Some(match notice {
                Some(n) => format!("{n}; {off}"),
                None => off,
            });
        }
        Compressed {
            messages: working,
            tokens_before,
            tokens_after,
            pruned,
            summarized,
            notice,
        }
    }

    /// Steps 1-3 and 5 alone (no model call, no bookkeeping): old tool output pruned outside
    /// the protected head and tail, tool pairs repaired. What a failed summary falls back to.
    pub fn prune_pass(
        &self,
        system: &str,
        tools: &[ToolSchema],
        messages: &[Message],
    ) -> Compressed {
        let tokens_before = tokens::rough_request(system, tools, messages);
        let mut working = messages.to_vec();
        let head_end = protect_head(&working, self.settings.protect_first_n);
        let tail_start = protect_tail(&working, head_end, self.tail_budget());
        let pruned = prune::prune_tool_results(&mut working, head_end..tail_start);
        close_dangling_tool_calls(&mut working);
        let tokens_after = tokens::rough_request(system, tools, &working);
        Compressed {
            messages: working,
            tokens_before,
            tokens_after,
            pruned,
            summarized: false,
            notice: None,
        }
    }

    fn record_success(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.failures = 0;
            st.cooldown_until = None;
        }
    }

    fn record_failure(&self) -> Duration {
        let Ok(mut st) = self.state.lock() else {
            return FAILURE_COOLDOWNS[0];
        };
        let d = FAILURE_COOLDOWNS[st.failures.min(FAILURE_COOLDOWNS.len() - 1)];
        st.failures += 1;
        st.cooldown_until = Some(Instant::now() + d);
        d
    }

    /// Counts weak passes; returns the one-time notice when automatic compression turns off.
    fn record_saving(&self, before: u64, after: u64) -> Option<String> {
        let saving = if before == 0 {
            0.0
        } else {
            1.0 - after as f64 / before as f64
        };
        let mut st = self.state.lock().ok()?;
        if saving >= WEAK_SAVING {
            st.weak_passes = 0;
            return None;
        }
        st.weak_passes += 1;
        if st.weak_passes >= 2 && !st.auto_disabled {
            st.auto_disabled = true;
            return Some(
                "compression saved under 10% twice in a row, so automatic compression is off for this session; start a new session (/new) to continue comfortably".into(),
            );
        }
        None
    }

    /// Automatic compression was switched off by two weak passes.
    pub fn auto_disabled(&self) -> bool {
        self.state.lock().map(|s| s.auto_disabled).unwrap_or(true)
    }
}

/// End of the protected head: the first `n` messages, extended so that tool results of calls
/// in the head stay with them.
fn protect_head(messages: &[Message], n: usize) -> usize {
    let mut end = n.min(messages.len());
    while end < messages.len() && messages[end].role == Role::Tool {
        end += 1;
    }
    end
}

/// Start of the protected tail: as many messages from the end as fit `budget` tokens (at least
/// the last one), moved back so it never starts with a tool result (its call stays with it).
fn protect_tail(messages: &[Message], head_end: usize, budget: u64) -> usize {
    let mut start = messages.len();
    let mut used = 0;
    while start > head_end {
        let cost = tokens::rough_message(&messages[start - 1]);
        if used + cost > budget && start < messages.len() {
            break;
        }
        used += cost;
        start -= 1;
    }
    while start > head_end && start < messages.len() && messages[start].role == Role::Tool {
        start -= 1;
    }
    start.max(head_end)
}

/// Merges neighbouring user (or plain assistant) messages so roles alternate.
fn merge_adjacent(messages: &mut Vec<Message>) {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for m in messages.drain(..) {
        match out.last_mut() {
            Some(prev)
                if prev.role == m.role
                    && matches!(m.role, Role::User | Role::Assistant)
                    && prev.tool_calls.is_empty()
                    && m.tool_calls.is_empty() =>
            {
                prev.content.push_str("\n\n");
                prev.content.push_str(&m.content);
            }
            _ => out.push(m),
        }
    }
    *messages = out;
}

#[cfg(test)]
mod tests;
