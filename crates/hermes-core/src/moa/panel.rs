//! One run of a panel: every reference model answers the question in parallel (each within its
//! timeout, failures kept as notes rather than ending the run), then the aggregator merges the
//! answers into one; with several rounds, each later round shows the references the previous
//! merged answer to improve on. `raw` skips the merge and returns the answers side by side. The
//! cost cap is checked before every round against the worst case of that round.

use std::time::Duration;

use hermes_llm::ChatRequest;
use hermes_protocol::Message;
use tokio_util::sync::CancellationToken;

use super::cost::{Spend, rough_tokens, worst_case};
use super::presets::{Preset, Slot};
use crate::ModelTarget;

/// The most rounds one call may ask for: past three the panel mostly agrees with the previous
/// merge, and every round bills every model again.
pub const MAX_ROUNDS: u32 = 5;

/// How long the aggregator may take to merge.
const AGGREGATOR_TIMEOUT: Duration = Duration::from_secs(300);

/// The most of one answer carried into the merge (a runaway provider cannot flood it).
const MAX_ANSWER_BYTES: usize = 64 * 1024;

const REFERENCE_FRAME: &str = "You are one of several expert advisors answering the same question independently and in parallel; a synthesis model will merge your answer with the others. Answer the question below directly and completely. You have no tools and see nothing else of the conversation: reason from what the question gives you, and do not ask for access to anything.";

const REFINE_FRAME: &str = "Above is the merged answer of the previous round, written after seeing every advisor's answer including yours. Say what it misses, gets wrong or argues weakly, then give your own best complete answer to the question. Do not just repeat it.";

const FUSION_FRAME: &str = "You merge the answers of several independent advisors to one question into a single answer.\n- Check their claims against each other and settle disagreements on the evidence, preferring the most specific, best-argued claim; say briefly where they disagreed.\n- Keep the strongest reasoning from any advisor.\n- Write in one voice: do not describe the advisors or who said what.\n- The reader has not seen the advisors' answers, so the merged answer must stand on its own.";

const FUSION_LATER_ROUND: &str = "This is a later round: the advisors wrote the answers below after seeing the previous merged answer, which is included too. Write the best merged answer now.";

/// Merge the answers, or return them side by side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    Fused,
    Raw,
}

/// One model of the panel as the session resolved it.
#[derive(Clone)]
pub struct Member {
    pub slot: Slot,
    /// The model to call, or why its provider could not be set up (no key, unknown name).
    pub target: Result<ModelTarget, super::SlotError>,
}

impl Member {
    pub fn label(&self) -> String {
        self.slot.label()
    }
}

/// What one round did.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundSummary {
    pub round: u32,
    pub succeeded: Vec<String>,
    pub failed: Vec<String>,
}

/// The result of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub response: String,
    pub rounds: Vec<RoundSummary>,
    /// `(label, reason)` of the references that failed in the last round run.
    pub failures: Vec<(String, String)>,
    pub spend: Spend,
    /// Set when the cap stopped the run before all the asked rounds.
    pub stopped_by_cap: Option<String>,
    /// Set when the aggregator failed and the answers are returned unmerged.
    pub aggregator_failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PanelError {
    #[error(
        "this call could cost up to ${estimate:.4}, over the cap of ${cap:.4} (moa.max_cost_usd): use fewer rounds or reference models, set reference_max_tokens on the preset, or raise the cap"
    )]
    OverBudget { estimate: f64, cap: f64 },
    #[error("every reference model failed, so there was nothing to merge: {0}")]
    AllFailed(String),
    #[error("the aggregator {label} cannot be used: {reason}")]
    AggregatorUnavailable { label: String, reason: String },
    #[error("interrupted")]
    Interrupted,
}

/// A panel ready to run: its members, the preset's limits and the cap.
pub struct Panel<'a> {
    pub references: Vec<Member>,
    pub aggregator: Member,
    pub preset: &'a Preset,
    pub cap_usd: Option<f64>,
}

impl Panel<'_> {
    /// Runs `rounds` rounds on `prompt`.
    pub async fn run(
        &self,
        prompt: &str,
        rounds: u32,
        strategy: Strategy,
        cancel: &CancellationToken,
    ) -> Result<Outcome, PanelError> {
        if strategy == Strategy::Fused
            && let Err(reason) = &self.aggregator.target
        {
            return Err(PanelError::AggregatorUnavailable {
                label: self.aggregator.label(),
                reason: reason.to_string(),
            });
        }
        let mut spend = Spend::default();
        let mut summaries = Vec::new();
        let mut merged: Option<String> = None;
        let mut failures = Vec::new();
        let mut stopped_by_cap = None;
        let mut aggregator_failure = None;
        for round in 1..=rounds {
            let estimate = self.round_estimate(prompt, merged.as_deref(), strategy, &mut spend);
            if let Some(cap) = self.cap_usd
                && spend.usd + estimate > cap
            {
                if round == 1 {
                    return Err(PanelError::OverBudget { estimate, cap });
                }
                stopped_by_cap = Some(format!(
                    "stopped after round {} of {rounds}: round {round} could cost up to ${estimate:.4}, over what is left of the ${cap:.4} cap (moa.max_cost_usd)",
                    round - 1
                ));
                break;
            }
            let view = reference_view(prompt, merged.as_deref());
            let answers = self.ask_references(&view, &mut spend, cancel).await?;
            let (good, bad): (Vec<_>, Vec<_>) = answers.into_iter().partition(|a| a.1.is_ok());
            let good: Vec<(String, String)> = good
                .into_iter()
                .filter_map(|(label, r)| r.ok().map(|text| (label, text)))
                .collect();
            failures = bad
                .into_iter()
                .filter_map(|(label, r)| r.err().map(|e| (label, e)))
                .collect();
            summaries.push(RoundSummary {
                round,
                succeeded: good.iter().map(|(l, _)| l.clone()).collect(),
                failed: failures.iter().map(|(l, _)| l.clone()).collect(),
            });
            if good.is_empty() {
                if merged.is_some() {
                    // A paid-for merge from an earlier round is still an answer.
                    break;
                }
                return Err(PanelError::AllFailed(describe_failures(&failures)));
            }
            if strategy == Strategy::Raw {
                merged = Some(side_by_side(&good));
                break;
            }
            match self
                .merge(prompt, &good, merged.as_deref(), &mut spend, cancel)
                .await?
            {
                Ok(text) => merged = Some(text),
                Err(reason) => {
                    aggregator_failure = Some(reason);
                    merged = Some(side_by_side(&good));
                    break;
                }
            }
        }
        let mut response = merged.unwrap_or_default();
        if !failures.is_empty() {
            response.push_str(&format!(
                "\n\n[{} of {} reference models failed: {}]",
                failures.len(),
                self.references.len(),
                describe_failures(&failures)
            ));
        }
        Ok(Outcome {
            response,
            rounds: summaries,
            failures,
            spend,
            stopped_by_cap,
            aggregator_failure,
        })
    }

    /// The worst case of one round in USD (unpriced models noted in `spend`).
    fn round_estimate(
        &self,
        prompt: &str,
        merged: Option<&str>,
        strategy: Strategy,
        spend: &mut Spend,
    ) -> f64 {
        let carried = merged.map_or(0, |_| u64::from(self.preset.max_tokens));
        let reference_in = rough_tokens(REFERENCE_FRAME)
            + rough_tokens(prompt)
            + carried
            + merged.map_or(0, |_| rough_tokens(REFINE_FRAME));
        let reference_out = u64::from(self.preset.reference_limit());
        let mut usd = 0.0;
        let mut usable = 0u64;
        for member in &self.references {
            if member.target.is_err() {
                continue;
            }
            usable += 1;
            match worst_case(&member.slot.model, reference_in, reference_out) {
                Some(x) => usd += x,
                None => spend.note_unpriced(&member.label()),
            }
        }
        if strategy == Strategy::Fused {
            let merge_in = rough_tokens(FUSION_FRAME)
                + rough_tokens(prompt)
                + carried
                + usable * reference_out;
            let slot = &self.aggregator.slot;
            match worst_case(&slot.model, merge_in, u64::from(self.preset.max_tokens)) {
                Some(x) => usd += x,
                None => spend.note_unpriced(&slot.label()),
            }
        }
        usd
    }

    /// Every reference's answer to `view`, in panel order.
    async fn ask_references(
        &self,
        view: &[Message],
        spend: &mut Spend,
        cancel: &CancellationToken,
    ) -> Result<Vec<(String, Result<String, String>)>, PanelError> {
        let timeout = Duration::from_secs(self.preset.reference_timeout_secs);
        let sent: u64 = view.iter().map(|m| rough_tokens(&m.content)).sum();
        let calls = self.references.iter().map(|member| async move {
            let target = match &member.target {
                Ok(t) => t,
                Err(reason) => return (member, Err(reason.to_string())),
            };
            let request = ChatRequest {
                model: &target.model,
                system: "",
                messages: view,
                tools: &[],
                max_tokens: Some(self.preset.reference_limit()),
                temperature: self.preset.reference_temperature,
                reasoning: member.slot.reasoning,
            };
            let answer = ask(target, &request, timeout).await;
            (member, answer)
        });
        let answers = tokio::select! {
            all = futures_util::future::join_all(calls) => all,
            () = cancel.cancelled() => return Err(PanelError::Interrupted),
        };
        Ok(answers
            .into_iter()
            .map(|(member, answer)| {
                let label = member.label();
                let text = answer.map(|(text, usage)| {
                    spend.add(&label, &member.slot.model, usage.as_ref(), sent, &text);
                    text
                });
                (label, text.and_then(non_empty))
            })
            .collect())
    }

    /// The aggregator's merge; the inner `Err` is why it failed (the run goes on without it).
    async fn merge(
        &self,
        prompt: &str,
        answers: &[(String, String)],
        previous: Option<&str>,
        spend: &mut Spend,
        cancel: &CancellationToken,
    ) -> Result<Result<String, String>, PanelError> {
        let Ok(target) = &self.aggregator.target else {
            return Ok(Err("not set up".into()));
        };
        let text = fusion_prompt(prompt, answers, previous);
        let messages = [Message::user(text.clone())];
        let request = ChatRequest {
            model: &target.model,
            system: "",
            messages: &messages,
            tools: &[],
            max_tokens: Some(self.preset.max_tokens),
            temperature: self.preset.aggregator_temperature,
            reasoning: self.aggregator.slot.reasoning,
        };
        let answer = tokio::select! {
            a = ask(target, &request, AGGREGATOR_TIMEOUT) => a,
            () = cancel.cancelled() => return Err(PanelError::Interrupted),
        };
        let label = self.aggregator.label();
        Ok(answer
            .map(|(text, usage)| {
                spend.add(
                    &label,
                    &self.aggregator.slot.model,
                    usage.as_ref(),
                    rough_tokens(&text),
                    &text,
                );
                text
            })
            .and_then(non_empty)
            .map_err(|e| format!("the aggregator {label} failed: {e}")))
    }
}

/// One answer and its usage, within `timeout`.
async fn ask(
    target: &ModelTarget,
    request: &ChatRequest<'_>,
    timeout: Duration,
) -> Result<(String, Option<hermes_protocol::Usage>), String> {
    match tokio::time::timeout(
        timeout,
        hermes_llm::complete(target.provider.as_ref(), request),
    )
    .await
    {
        Ok(Ok(reply)) => {
            let text = hermes_llm::think::strip_think(&reply.text)
                .trim()
                .to_string();
            Ok((cap_bytes(text), reply.usage))
        }
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {} s", timeout.as_secs())),
    }
}

fn non_empty(text: String) -> Result<String, String> {
    if text.trim().is_empty() {
        Err("the answer was empty".into())
    } else {
        Ok(text)
    }
}

fn cap_bytes(mut text: String) -> String {
    if text.len() > MAX_ANSWER_BYTES {
        let mut cut = MAX_ANSWER_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[... answer cut]");
    }
    text
}

/// What every reference is sent: the question, and in later rounds the previous merge.
pub fn reference_view(prompt: &str, merged: Option<&str>) -> Vec<Message> {
    let mut view = vec![Message::user(format!(
        "{REFERENCE_FRAME}\n\n<question>\n{prompt}\n</question>"
    ))];
    if let Some(merged) = merged {
        view.push(Message::assistant(merged.to_string()));
        view.push(Message::user(REFINE_FRAME.to_string()));
    }
    view
}

/// The aggregator's request text. Advisor answers are untrusted text: a closing tag inside
/// one is defused so it cannot end its block early.
pub fn fusion_prompt(prompt: &str, answers: &[(String, String)], previous: Option<&str>) -> String {
    let mut out = String::from(FUSION_FRAME);
    if let Some(previous) = previous {
        out.push_str("\n\n");
        out.push_str(FUSION_LATER_ROUND);
        out.push_str(&format!(
            "\n\n<previous_merged_answer>\n{}\n</previous_merged_answer>",
            defuse(previous)
        ));
    }
    out.push_str(&format!("\n\n<question>\n{prompt}\n</question>"));
    for (i, (label, text)) in answers.iter().enumerate() {
        out.push_str(&format!(
            "\n\n<answer n=\"{}\" model=\"{label}\">\n{}\n</answer>",
            i + 1,
            defuse(text)
        ));
    }
    out
}

fn defuse(text: &str) -> String {
    text.replace("</answer", "<\\/answer")
        .replace("</previous_merged_answer", "<\\/previous_merged_answer")
}

/// The answers labelled by model, for `raw` and when the merge failed.
fn side_by_side(answers: &[(String, String)]) -> String {
    answers
        .iter()
        .map(|(label, text)| format!("### {label}\n{text}"))
        .collect::<Vec<_>>()
        .join("\n\n---\n\n")
}

fn describe_failures(failures: &[(String, String)]) -> String {
    failures
        .iter()
        .map(|(label, reason)| format!("{label} ({reason})"))
        .collect::<Vec<_>>()
        .join("; ")
}
