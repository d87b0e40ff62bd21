//! What a serving plan is asked for: the traffic (users or a request rate, prompt and output
//! lengths, a shared prefix), the service target, and the engine. These are scenario inputs
//! (`Scenario::serving`), saved in scenario files and set from the CLI and the window.

use serde::{Deserialize, Serialize};

/// The serving engine that schedules the requests. `Auto` follows the scenario's runtime, and
/// for the generic runtime picks what people run on that hardware: vLLM on CUDA/ROCm GPUs,
/// llama.cpp's `llama-server` on Apple, Vulkan and CPU machines.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    #[default]
    Auto,
    /// vLLM (V1 engine): PagedAttention KV pool, continuous batching with chunked prefill.
    Vllm,
    /// SGLang: RadixAttention token pool, `--mem-fraction-static`.
    Sglang,
    /// llama.cpp `llama-server`: `--parallel N` slots sharing `-c`, continuous batching.
    LlamaServer,
    /// Hugging Face transformers `generate()`: static batches.
    Transformers,
}

impl Engine {
    pub const ALL: [Engine; 5] = [
        Engine::Auto,
        Engine::Vllm,
        Engine::Sglang,
        Engine::LlamaServer,
        Engine::Transformers,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Engine::Auto => "auto",
            Engine::Vllm => "vllm",
            Engine::Sglang => "sglang",
            Engine::LlamaServer => "llama-server",
            Engine::Transformers => "transformers",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Engine::Auto => "Auto",
            Engine::Vllm => "vLLM",
            Engine::Sglang => "SGLang",
            Engine::LlamaServer => "llama-server",
            Engine::Transformers => "transformers",
        }
    }
    /// Whether the engine batches continuously (a finished sequence's slot is refilled at the
    /// next step) rather than in static batches.
    pub const fn continuous(self) -> bool {
        !matches!(self, Engine::Transformers)
    }
    /// Whether the engine splits the layers over every GPU of the machine (llama.cpp's
    /// `--split-mode layer`, transformers' `device_map="auto"`): one replica, the GPUs' memory
    /// pooled behind one GPU's speed, rather than tensor parallel.
    pub const fn splits_layers(self) -> bool {
        matches!(self, Engine::LlamaServer | Engine::Transformers)
    }
}

/// A named traffic mix: mean prompt and output lengths and the share of the prompt that is a
/// common prefix, each from a published trace or benchmark (`Mix::source`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// Conversations: ShareGPT as the PagedAttention paper samples it.
    Chat,
    /// Retrieval-augmented answers: long retrieved context, short answer.
    Rag,
    /// A coding agent: long, mostly repeated context per step, short tool calls.
    CodingAgent,
    /// Summarising long documents.
    Summarize,
}

/// Lengths of one mix.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MixLengths {
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub prefix_share: f64,
}

impl Mix {
    pub const ALL: [Mix; 4] = [Mix::Chat, Mix::Rag, Mix::CodingAgent, Mix::Summarize];
    pub const fn cli_name(self) -> &'static str {
        match self {
            Mix::Chat => "chat",
            Mix::Rag => "rag",
            Mix::CodingAgent => "coding-agent",
            Mix::Summarize => "summarize",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Mix::Chat => "Chat",
            Mix::Rag => "RAG",
            Mix::CodingAgent => "Coding agent",
            Mix::Summarize => "Summarise",
        }
    }
    pub const fn lengths(self) -> MixLengths {
        match self {
            // ShareGPT: mean input 161.31, output 337.99 tokens (Kwon et al., "Efficient Memory
            // Management for Large Language Model Serving with PagedAttention", SOSP 2023, §6.1).
            Mix::Chat => MixLengths {
                prompt_tokens: 161,
                output_tokens: 338,
                prefix_share: 0.0,
            },
            // The prefill-heavy case of NVIDIA's NIM LLM performance tables (5,000 input / 500
            // output tokens; docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance): retrieved
            // passages plus a question, a paragraph of answer. No shared prefix assumed.
            Mix::Rag => MixLengths {
                prompt_tokens: 5000,
                output_tokens: 500,
                prefix_share: 0.0,
            },
            // SWE-agent style loops: each step resends the whole trajectory (Yang et al.,
            // "SWE-agent", NeurIPS 2024: tens of thousands of tokens per instance over tens of
            // steps); ~16 k-token prompts of which all but the last observation repeat the previous
            // step's prompt, with short tool-call outputs.
            Mix::CodingAgent => MixLengths {
                prompt_tokens: 16_384,
                output_tokens: 400,
                prefix_share: 0.9,
            },
            // Arxiv summarisation as Sarathi-Serve samples it (Agrawal et al., OSDI 2024,
            // Table 3: median 7,059 prompt and 208 output tokens).
            Mix::Summarize => MixLengths {
                prompt_tokens: 7059,
                output_tokens: 208,
                prefix_share: 0.0,
            },
        }
    }
    pub const fn source(self) -> &'static str {
        match self {
            Mix::Chat => "ShareGPT means, Kwon et al. SOSP 2023 §6.1",
            Mix::Rag => "NVIDIA NIM performance tables, 5,000 in / 500 out",
            Mix::CodingAgent => "SWE-agent trajectories (Yang et al. NeurIPS 2024), heuristic",
            Mix::Summarize => "Arxiv-Summarization medians, Sarathi-Serve OSDI 2024 Table 3",
        }
    }
}

/// How much traffic: requests in flight (a closed loop of users who send the next request when
/// the last one finished, as `vllm bench serve --max-concurrency`), or an open-loop request rate
/// (Poisson arrivals, as `--request-rate`).
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Load {
    Users(u64),
    RequestsPerSecond(f64),
}

/// The service-level target a load must meet.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Target {
    /// Time to first token at the 95th percentile, seconds.
    pub ttft_p95_s: f64,
    /// Decode speed each user sees, tokens/s (1 ÷ time per output token).
    pub min_tokens_per_s: f64,
}

impl Default for Target {
    /// TTFT p95 ≤ 2 s and ≥ 20 tok/s per user: faster than people read (≈ 4–5 words/s,
    /// Brysbaert 2019, "How many words do we read per minute?", J. Memory and Language 109) with
    /// room to skim, and a first token within the 2 s people tolerate before a response feels
    /// slow (Nielsen, "Response Times: The 3 Important Limits", 1993). Documented in
    /// docs/serving.md.
    fn default() -> Self {
        Target {
            ttft_p95_s: 2.0,
            min_tokens_per_s: 20.0,
        }
    }
}

/// Bounds of the serving inputs.
pub mod limits {
    pub const MAX_USERS: u64 = 1_000_000;
    pub const MAX_RATE: f64 = 1.0e5;
    pub const MAX_OUTPUT: u64 = 1_000_000;
    pub const MAX_TTFT_S: f64 = 3600.0;
    pub const MAX_TOKENS_PER_S: f64 = 10_000.0;
}

/// The serving inputs of a scenario. The prompt length is the scenario's `prompt_tokens` and the
/// longest request its `context`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServingInputs {
    /// The asked load; `None`: plan for the largest load that meets the target.
    pub load: Option<Load>,
    /// The mix the lengths came from (`None`: typed by the user).
    pub mix: Option<Mix>,
    /// Mean generated tokens per request.
    pub output_tokens: u64,
    /// Share of each prompt that is a prefix common to many requests (system prompt, template,
    /// an agent's trajectory), 0–1. Served from the prefix cache when the engine has one.
    pub prefix_share: f64,
    pub target: Target,
    pub engine: Engine,
    /// Engine settings the user fixes (vLLM `--max-num-seqs`, SGLang `--max-running-requests`,
    /// llama-server `--parallel`); `None`: the engine's default.
    pub max_num_seqs: Option<u64>,
    /// vLLM `--max-num-batched-tokens` / SGLang `--chunked-prefill-size`; `None`: the default.
    pub max_num_batched_tokens: Option<u64>,
    /// Prefix caching on or off; `None`: the engine's default (on for vLLM V1 and SGLang).
    pub prefix_caching: Option<bool>,
    /// GPUs per replica (`-tp`); `None`: the plan picks the size that holds the most users.
    pub tensor_parallel: Option<u64>,
    /// SGLang `--mem-fraction-static`; `None`: SGLang's default for the tensor-parallel size.
    pub mem_fraction_static: Option<f64>,
}

impl Default for ServingInputs {
    fn default() -> Self {
        ServingInputs {
            load: None,
            mix: None,
            output_tokens: 256,
            prefix_share: 0.0,
            target: Target::default(),
            engine: Engine::Auto,
            max_num_seqs: None,
            max_num_batched_tokens: None,
            prefix_caching: None,
            tensor_parallel: None,
            mem_fraction_static: None,
        }
    }
}

impl ServingInputs {
    /// Every number within its bounds (NaN and negatives replaced by the defaults).
    pub fn clamped(&self) -> ServingInputs {
        use limits::*;
        let mut s = self.clone();
        let def = Target::default();
        s.load = match s.load {
            Some(Load::Users(n)) => Some(Load::Users(n.clamp(1, MAX_USERS))),
            Some(Load::RequestsPerSecond(r)) if r.is_finite() && r > 0.0 => {
                Some(Load::RequestsPerSecond(r.min(MAX_RATE)))
            }
            Some(Load::RequestsPerSecond(_)) => None,
            None => None,
        };
        s.output_tokens = s.output_tokens.clamp(1, MAX_OUTPUT);
        s.prefix_share = if s.prefix_share.is_finite() {
            s.prefix_share.clamp(0.0, 0.99)
        } else {
            0.0
        };
        s.target.ttft_p95_s = finite_in(s.target.ttft_p95_s, 0.01, MAX_TTFT_S, def.ttft_p95_s);
        s.target.min_tokens_per_s = finite_in(
            s.target.min_tokens_per_s,
            0.0,
            MAX_TOKENS_PER_S,
            def.min_tokens_per_s,
        );
        s.max_num_seqs = s.max_num_seqs.map(|n| n.clamp(1, 1 << 16));
        s.max_num_batched_tokens = s.max_num_batched_tokens.map(|n| n.clamp(16, 1 << 22));
        s.tensor_parallel = s.tensor_parallel.map(|n| n.clamp(1, 1 << 16));
        s.mem_fraction_static = s
            .mem_fraction_static
            .filter(|f| f.is_finite())
            .map(|f| f.clamp(0.05, 1.0));
        s
    }
    /// Apply a named mix: its lengths and prefix share (the prompt goes to the scenario).
    pub fn apply_mix(&mut self, mix: Mix) -> u64 {
        let l = mix.lengths();
        self.mix = Some(mix);
        self.output_tokens = l.output_tokens;
        self.prefix_share = l.prefix_share;
        l.prompt_tokens
    }
}

fn finite_in(x: f64, lo: f64, hi: f64, default: f64) -> f64 {
    if x.is_finite() {
        x.clamp(lo, hi)
    } else {
        default
    }
}
