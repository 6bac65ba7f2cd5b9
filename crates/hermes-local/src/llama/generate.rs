//! One reply, token by token: the request is formatted ([`Template::prepare`]) and tokenised;
//! the part of the prompt already in the KV cache (same prefix as the previous request) is
//! skipped; on a fresh context the shared prefix (system prompt and tools) is loaded from the
//! home's KV store when it was saved before, or evaluated and saved; the rest is evaluated in
//! batches, then tokens are sampled (constrained by the tool-call grammar when tools are
//! offered) until an end-of-turn token, the output limit or the context end. Text streams out
//! as it is decoded; a caller that stopped listening stops generation at the next token.

use std::path::Path;

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
use super::template::{Reply, Template};
use crate::kv_store::{self, KvStore, ModelIdentity};
use crate::settings::LocalSettings;

/// Prompt tokens evaluated per decode call; cancellation is checked between batches.
const PROMPT_BATCH: usize = 512;

pub(crate) struct Session<'m> {
    model: &'m LlamaModel,
    context: LlamaContext<'m>,
    template: Template,
    /// The tokens whose keys and values are in the context's cache, in order.
    cached: Vec<LlamaToken>,
    /// The saved prefixes, with what keys them besides the tokens.
    store: Option<PrefixStore>,
}

struct PrefixStore {
    store: KvStore,
    model: ModelIdentity,
    /// The runtime settings that shape a saved state.
    engine: String,
}

impl<'m> Session<'m> {
    pub(crate) fn new(
        model: &'m LlamaModel,
        context: LlamaContext<'m>,
        template: Template,
        settings: &LocalSettings,
    ) -> Self {
        let store = settings.kv_cache_dir.as_ref().and_then(|dir| {
            Some(PrefixStore {
                store: KvStore::new(dir),
                model: ModelIdentity::of(&settings.model_path)?,
                engine: format!("llama-cpp-2 0.1.160; n_ctx={}; swa_full", context.n_ctx()),
            })
        });
        Session {
            model,
            context,
            template,
            cached: Vec::new(),
            store,
        }
    }

    /// Answers `job` on its channel; an error is returned for the caller to send.
    pub(crate) fn run(&mut self, job: &Job) -> Result<(), LlmError> {
        let mut prepared = self
            .template
            .prepare(
                self.model,
                &job.system,
                &job.messages,
                &job.tools,
                job.require_tool_call,
            )
            .map_err(LlmError::Config)?;
        let vocab = self.model.vocab();
        let add_special = !prepared.has_bos;
        let tokens = vocab.tokenize(prepared.prompt.as_bytes(), add_special, true);
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
        // The shared prefix, in tokens: as far as its own tokens agree with the prompt's (the
        // boundary may tokenise differently), and never the last prompt token.
        let prefix_len = prepared.prefix.as_deref().map_or(0, |prefix| {
            vocab
                .tokenize(prefix.as_bytes(), add_special, true)
                .iter()
                .zip(&tokens)
                .take_while(|(a, b)| a == b)
                .count()
                .min(tokens.len() - 1)
        });
        let reused = match self.evaluate_prompt(&tokens, prefix_len, job)? {
            Some(reused) => reused,
            None => return Ok(()), // the caller went away
        };
        let room = n_ctx - tokens.len();
        let limit = (job.max_tokens as usize).min(room);
        // Running out of context ends the reply like the output limit does (`Length`).
        let Some(produced) = self.sample_reply(job, &mut prepared, limit, tokens.len())? else {
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

    /// Brings the cache to `tokens`: keeps the common prefix with the previous request, else
    /// loads the saved `prefix_len` shared tokens (or evaluates and saves them), then
    /// evaluates the rest. Returns how many tokens were not evaluated again, or `None` when
    /// the caller stopped listening.
    fn evaluate_prompt(
        &mut self,
        tokens: &[LlamaToken],
        prefix_len: usize,
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
        let mut save_as = None;
        if reused < prefix_len && prefix_len >= kv_store::MIN_TOKENS {
            let prefix = &tokens[..prefix_len];
            let found = self.store.as_ref().map(|store| {
                let ids: Vec<i32> = prefix.iter().map(|t| t.0).collect();
                let key = KvStore::key(&store.model, &store.engine, &ids);
                let path = store.store.lookup(&key);
                (key, path)
            });
            match found {
                Some((key, Some(path))) => {
                    if self.load_prefix(&path, prefix) {
                        reused = prefix_len;
                    } else {
                        // Unusable (damaged, another llama.cpp's): replaced by a fresh one.
                        if let Some(store) = &self.store {
                            store.store.discard(&key);
                        }
                        reused = 0;
                        save_as = Some(key);
                    }
                }
                Some((key, None)) => save_as = Some(key),
                None => {}
            }
        }
        let kept = u32::try_from(reused).unwrap_or(0);
        if self.context.kv_cache_seq_rm(0, Some(kept), None).is_err() {
            self.context.clear_kv_cache();
            reused = 0;
        }
        self.cached.truncate(reused);
        let mut start = reused;
        if let Some(key) = save_as {
            if !self.evaluate(tokens, start, prefix_len, job)? {
                return Ok(None);
            }
            self.save_prefix(&key, &tokens[..prefix_len]);
            start = prefix_len;
        }
        if !self.evaluate(tokens, start, tokens.len(), job)? {
            return Ok(None);
        }
        Ok(Some(reused))
    }

    /// Evaluates `tokens[from..to]` in batches (logits only for the prompt's last token);
    /// `false` when the caller stopped listening.
    fn evaluate(
        &mut self,
        tokens: &[LlamaToken],
        from: usize,
        to: usize,
        job: &Job,
    ) -> Result<bool, LlmError> {
        let mut batch = LlamaBatch::new(PROMPT_BATCH, 1);
        for (chunk_index, chunk) in tokens[from..to].chunks(PROMPT_BATCH).enumerate() {
            if job.events.is_closed() {
                return Ok(false);
            }
            batch.clear();
            let start = from + chunk_index * PROMPT_BATCH;
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
        Ok(true)
    }

    /// Loads a saved prefix into the (emptied) cache; `false`, with the cache empty again,
    /// when the file is unusable or holds other tokens.
    fn load_prefix(&mut self, path: &Path, prefix: &[LlamaToken]) -> bool {
        self.context.clear_kv_cache();
        self.cached.clear();
        match self.context.state_seq_load_file(path, 0, prefix.len()) {
            Ok((loaded, _)) if loaded == prefix => {
                self.cached = loaded;
                true
            }
            _ => {
                self.context.clear_kv_cache();
                false
            }
        }
    }

    /// Saves the cache, which holds exactly `prefix`, under `key` (best effort: a full disk
    /// only costs the next start its speed).
    fn save_prefix(&self, key: &str, prefix: &[LlamaToken]) {
        let Some(store) = &self.store else { return };
        let Ok(temp) = store.store.temp_path(key) else {
            return;
        };
        let saved = self.context.state_seq_save_file(&temp, 0, prefix).is_ok()
            && store.store.commit(&temp, key).is_ok();
        if !saved {
            let _ = std::fs::remove_file(&temp);
        }
    }

    /// Samples up to `limit` tokens, streaming text and the finish event. Returns the count of
    /// tokens produced, or `None` when the caller stopped listening.
    fn sample_reply(
        &mut self,
        job: &Job,
        prepared: &mut super::template::Prepared,
        limit: usize,
        prompt_len: usize,
    ) -> Result<Option<usize>, LlmError> {
        let mut chain = sampler_chain(job.sampling);
        let mut grammar = match &prepared.grammar {
            Some(g) => Some(LlamaSampler::grammar(self.model, g, "root").map_err(|e| {
                LlmError::Config(format!("llama.cpp rejected the tool-call grammar: {e}"))
            })?),
            None => None,
        };
        let reply = &mut prepared.reply;
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
            if vocab.is_eog(token) {
                break FinishReason::Stop;
            }
            let bytes = if vocab.is_control(token) {
                // A control token ends the reply, unless it is the one that opens calls.
                let special = vocab.token_to_piece(token, true, None);
                match prepared.call_marker {
                    Some(marker) if special == marker.as_bytes() => special,
                    _ => break FinishReason::Stop,
                }
            } else {
                vocab.token_to_piece(token, false, None)
            };
            tracing::trace!(
                target: "hermes_local::tokens",
                token = token.0,
                piece = %String::from_utf8_lossy(&bytes),
                "sampled"
            );
            let piece = text.push(&bytes);
            if !piece.is_empty() {
                send_text(job, reply, &piece);
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
            send_text(job, reply, &rest);
        }
        let closing = match reply {
            Reply::Prompted(r) => r.finish(finish),
            Reply::Native(r) => r.finish(finish),
            Reply::Plain => vec![StreamEvent::Finish(finish)],
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

fn send_text(job: &Job, reply: &mut Reply, text: &str) {
    let events = match reply {
        Reply::Prompted(r) => r.push(text),
        Reply::Native(r) => r.push(text),
        Reply::Plain => vec![StreamEvent::TextDelta(text.to_string())],
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
