//! One reply, token by token: the prompt is formatted and tokenised, the part of it already in
//! the KV cache (same prefix as the previous request) is skipped, the rest is evaluated in
//! batches, then tokens are sampled (constrained by the tool-call grammar when tools are
//! offered) until an end-of-turn token, the output limit or the context end. Text streams out
//! as it is decoded; a caller that stopped listening stops generation at the next token.

use hermes_llm::LlmError;
use hermes_protocol::{FinishReason, StreamEvent, Usage};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::engine::{Job, Sampling};
use super::template::Template;
use crate::reply::ReplyStream;

/// Prompt tokens evaluated per decode call; cancellation is checked between batches.
const PROMPT_BATCH: usize = 512;

pub(crate) struct Session<'m> {
    model: &'m LlamaModel,
    context: LlamaContext<'m>,
    template: Template,
    /// The tokens whose keys and values are in the context's cache, in order.
    cached: Vec<LlamaToken>,
}

impl<'m> Session<'m> {
    pub(crate) fn new(
        model: &'m LlamaModel,
        context: LlamaContext<'m>,
        template: Template,
    ) -> Self {
        Session {
            model,
            context,
            template,
            cached: Vec::new(),
        }
    }

    /// Answers `job` on its channel; an error is returned for the caller to send.
    pub(crate) fn run(&mut self, job: &Job) -> Result<(), LlmError> {
        let prompt = self
            .template
            .render(self.model, &job.turns)
            .map_err(LlmError::Config)?;
        let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        let n_ctx = self.context.n_ctx() as usize;
        if tokens.is_empty() {
            return Err(LlmError::Config("the prompt is empty".into()));
        }
        if tokens.len() >= n_ctx {
            // Worded so the agent classifies it as a context overflow.
            return Err(LlmError::InStream(format!(
                "the prompt is {} tokens, which exceeds the context window of {n_ctx} tokens \
                 (model.context_length)",
                tokens.len()
            )));
        }
        let reused = match self.evaluate_prompt(&tokens, job)? {
            Some(reused) => reused,
            None => return Ok(()), // the caller went away
        };
        let room = n_ctx - tokens.len();
        let limit = (job.max_tokens as usize).min(room);
        // Running out of context ends the reply like the output limit does (`Length`).
        let Some(produced) = self.sample_reply(job, limit, tokens.len())? else {
            return Ok(());
        };
        let usage = Usage {
            input_tokens: tokens.len() as u64,
            output_tokens: produced as u64,
            cache_read_tokens: reused as u64,
            ..Usage::default()
        };
        let _ = job.events.send(Ok(StreamEvent::Usage(usage)));
        Ok(())
    }

    /// Brings the cache to `tokens`, keeping the common prefix. Returns how many tokens were
    /// reused, or `None` when the caller stopped listening.
    fn evaluate_prompt(
        &mut self,
        tokens: &[LlamaToken],
        job: &Job,
    ) -> Result<Option<usize>, LlmError> {
        // At least the last prompt token is evaluated again: its logits start the reply.
        let mut reused = self
            .cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count()
            .min(tokens.len() - 1);
        let kept = u32::try_from(reused).unwrap_or(0);
        if self.context.kv_cache_seq_rm(0, Some(kept), None).is_err() {
            self.context.clear_kv_cache();
            reused = 0;
        }
        self.cached.truncate(reused);
        let mut batch = LlamaBatch::new(PROMPT_BATCH, 1);
        let rest = &tokens[reused..];
        for (chunk_index, chunk) in rest.chunks(PROMPT_BATCH).enumerate() {
            if job.events.is_closed() {
                return Ok(None);
            }
            batch.clear();
            let start = reused + chunk_index * PROMPT_BATCH;
            for (i, token) in chunk.iter().enumerate() {
                let pos = start + i;
                let last = pos == tokens.len() - 1;
                batch
                    .add(*token, position(pos), &[0], last)
                    .map_err(|e| LlmError::Config(format!("prompt batch: {e}")))?;
            }
            self.decode(&mut batch)?;
            self.cached.extend_from_slice(chunk);
        }
        Ok(Some(reused))
    }

    /// Samples up to `limit` tokens, streaming text and the finish event. Returns the count of
    /// tokens produced, or `None` when the caller stopped listening.
    fn sample_reply(
        &mut self,
        job: &Job,
        limit: usize,
        prompt_len: usize,
    ) -> Result<Option<usize>, LlmError> {
        let mut chain = sampler_chain(job.sampling);
        let mut grammar = match &job.grammar {
            Some(g) => Some(LlamaSampler::grammar(self.model, g, "root").map_err(|e| {
                LlmError::Config(format!("llama.cpp rejected the tool-call grammar: {e}"))
            })?),
            None => None,
        };
        let mut reply = job.grammar.as_ref().map(|_| ReplyStream::new());
        let mut text = Utf8Pieces::default();
        let mut batch = LlamaBatch::new(1, 1);
        let vocab = self.model.vocab();
        let mut produced = 0;
        let mut logits_at = -1; // the last evaluated position
        let finish = loop {
            if produced >= limit {
                break FinishReason::Length;
            }
            if job.events.is_closed() {
                return Ok(None);
            }
            let token = pick(&self.context, logits_at, &mut chain, grammar.as_mut());
            if vocab.is_eog(token) || vocab.is_control(token) {
                break FinishReason::Stop;
            }
            let piece = text.push(&vocab.token_to_piece(token, false, None));
            if !piece.is_empty() {
                send_text(job, reply.as_mut(), &piece);
            }
            batch.clear();
            batch
                .add(token, position(prompt_len + produced), &[0], true)
                .map_err(|e| LlmError::Config(format!("token batch: {e}")))?;
            self.decode(&mut batch)?;
            self.cached.push(token);
            produced += 1;
            logits_at = 0;
        };
        let rest = text.finish();
        if !rest.is_empty() {
            send_text(job, reply.as_mut(), &rest);
        }
        let closing = match reply.as_mut() {
            Some(r) => r.finish(finish),
            None => vec![StreamEvent::Finish(finish)],
        };
        for event in closing {
            let _ = job.events.send(Ok(event));
        }
        Ok(Some(produced))
    }

    fn decode(&mut self, batch: &mut LlamaBatch) -> Result<(), LlmError> {
        self.context.decode(batch).map_err(|e| {
            // The cache may hold part of the batch: forget it so the next request starts clean.
            self.cached.clear();
            self.context.clear_kv_cache();
            LlmError::Config(format!("llama.cpp failed to evaluate the prompt: {e}"))
        })
    }
}

fn position(pos: usize) -> i32 {
    i32::try_from(pos).unwrap_or(i32::MAX)
}

fn send_text(job: &Job, reply: Option<&mut ReplyStream>, text: &str) {
    let events = match reply {
        Some(r) => r.push(text),
        None => vec![StreamEvent::TextDelta(text.to_string())],
    };
    for event in events {
        let _ = job.events.send(Ok(event));
    }
}

/// Min-p 0.05, top-k 40, top-p, temperature, then a seeded draw; greedy at temperature 0.
fn sampler_chain(sampling: Sampling) -> LlamaSampler {
    if sampling.temperature <= 0.0 {
        return LlamaSampler::greedy();
    }
    let seed = sampling.seed.unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        nanos ^ std::process::id()
    });
    // min-p first: it keeps the same tokens in either order (it is relative to the most
    // likely one, which top-k keeps), but it is one linear pass, so top-k then sorts a handful
    // of survivors instead of the whole vocabulary (262k entries for Gemma) at every token.
    LlamaSampler::chain_simple([
        LlamaSampler::min_p(0.05, 1),
        LlamaSampler::top_k(40),
        LlamaSampler::top_p(sampling.top_p, 1),
        LlamaSampler::temp(sampling.temperature),
        LlamaSampler::dist(seed),
    ])
}

/// Samples the next token. With a grammar, the unconstrained choice is checked first (cheap:
/// one candidate) and only when the grammar rejects it is the whole vocabulary filtered and
/// the choice made again, the way llama.cpp's own tools do it.
fn pick(
    context: &LlamaContext<'_>,
    logits_at: i32,
    chain: &mut LlamaSampler,
    grammar: Option<&mut LlamaSampler>,
) -> LlamaToken {
    let token = chain.sample(context, logits_at);
    let Some(grammar) = grammar else {
        return token;
    };
    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    grammar.apply(&mut single);
    let allowed = single.data.first().is_some_and(|d| d.logit().is_finite());
    let token = if allowed {
        token
    } else {
        let mut all = context.token_data_array_ith(logits_at);
        grammar.apply(&mut all);
        chain.apply(&mut all);
        all.selected_token().unwrap_or(token)
    };
    grammar.accept(token);
    token
}

/// Token pieces to UTF-8 text: a character split across tokens is held until it is whole.
#[derive(Default)]
struct Utf8Pieces {
    pending: Vec<u8>,
}

impl Utf8Pieces {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        match std::str::from_utf8(&self.pending) {
            Ok(s) => {
                let out = s.to_string();
                self.pending.clear();
                out
            }
            Err(e) if e.error_len().is_none() => {
                // An incomplete character at the end: emit what is complete.
                let valid = e.valid_up_to();
                let out = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                self.pending.drain(..valid);
                out
            }
            Err(_) => {
                let out = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                out
            }
        }
    }

    fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_split_across_tokens_are_held_until_whole() {
        let mut pieces = Utf8Pieces::default();
        let snowman = "☃".as_bytes();
        assert_eq!(pieces.push(b"a"), "a");
        assert_eq!(pieces.push(&snowman[..1]), "");
        assert_eq!(pieces.push(&snowman[1..]), "☃");
        assert_eq!(pieces.push(&[0xff, b'b']), "\u{fffd}b");
        assert_eq!(pieces.push(&snowman[..2]), "");
        assert_eq!(pieces.finish(), "\u{fffd}");
    }
}
