//! A runtime's own command line — `llama-server -m model.gguf -ngl 40 -c 32768 -fa on -ctk q8_0
//! --n-cpu-moe 20` or `vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 …` —
//! read into the scenario settings it means ([`LaunchLine`]); the command line's `--command` and
//! the window's "Paste a llama.cpp or vLLM command" both use it. A flag the reader does not know
//! is an error naming it; flags that change nothing headroom sizes (ports, sampling, logging) are
//! accepted and left out. Pure text: which file or repository the model names is the caller's.
//!
//! llama.cpp's flags are those of `common/arg.cpp` (`llama-server`, `llama-cli`, `llama-bench`);
//! vLLM's those of `vllm serve` (`vllm/engine/arg_utils.py` `EngineArgs`); mlx-lm's those of
//! `mlx_lm.server` and `mlx_lm.generate` (`crate::core::mlx::launch_line`).

use crate::core::precision::{KvPrecision, KvTypes, WeightPrecision};
use crate::core::scenario::parse::{
    parse_context, parse_fraction, parse_gpu_layers, parse_sched, parse_threads, parse_tp,
    parse_ubatch,
};
use crate::core::scenario::{LaunchInputs, Runtime, Scenario};

/// What a runtime's command line sets; `None` where it says nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LaunchLine {
    pub runtime: Option<Runtime>,
    /// llama.cpp `-m FILE`.
    pub gguf: Option<String>,
    /// llama.cpp `-hf REPO` (the `:QUANT` tag goes to `weights`) and `-hff FILE`.
    pub hf: Option<String>,
    pub hf_file: Option<String>,
    /// vLLM's model: a Hub repo id or a local folder (the caller tells which).
    pub served_model: Option<String>,
    pub weights: Option<WeightPrecision>,
    pub kv: Option<KvTypes>,
    /// Tokens per sequence (llama-server's `-c` shared by `-np` slots: c ÷ N).
    pub context: Option<u64>,
    pub batch: Option<u64>,
    pub ubatch: Option<u64>,
    /// llama-bench `-d`: tokens already in the cache.
    pub prompt: Option<u64>,
    pub flash_attention: Option<bool>,
    pub gpu_layers: Option<u64>,
    pub n_cpu_moe: Option<u64>,
    pub tensor_split: Option<Vec<f32>>,
    pub threads: Option<u32>,
    pub mmproj: Option<String>,
    pub no_mmproj_offload: bool,
    pub tp: Option<u64>,
    pub gpu_memory_utilization: Option<f64>,
    pub max_num_seqs: Option<u64>,
    pub max_num_batched_tokens: Option<u64>,
    pub prefix_caching: Option<bool>,
    /// mlx-lm `--prefill-step-size`.
    pub prefill_step: Option<u64>,
    /// What was read but sized differently, one sentence each.
    pub notes: Vec<String>,
}

impl LaunchLine {
    /// The settings over scenario `s` (the window's paste; the command line maps them onto its
    /// flags instead, so that flags given directly win). The model source is the caller's: a
    /// file to import or a repository to read. The split is one setting: `-ngl` or
    /// `--n-cpu-moe` replaces the scenario's.
    pub fn apply(&self, s: &mut Scenario) {
        if let Some(r) = self.runtime {
            s.set_runtime(r, false);
        }
        macro_rules! set {
            ($($from:ident => $to:ident),*) => { $( if let Some(v) = self.$from { s.$to = v; } )* };
        }
        set!(
            weights => weights,
            kv => kv,
            context => context,
            batch => batch,
            ubatch => ubatch,
            prompt => prompt_tokens,
            flash_attention => flash_attention,
            gpu_memory_utilization => gpu_memory_utilization
        );
        if self.gpu_layers.is_some() || self.n_cpu_moe.is_some() {
            s.launch.gpu_layers = self.gpu_layers;
            s.launch.n_cpu_moe = self.n_cpu_moe;
        }
        if let Some(ts) = &self.tensor_split {
            s.launch.tensor_split.clone_from(ts);
        }
        if self.threads.is_some() {
            s.launch.threads = self.threads;
        }
        if self.prefill_step.is_some() {
            s.launch.prefill_step = self.prefill_step;
        }
        let v = &mut s.serving;
        v.tensor_parallel = self.tp.or(v.tensor_parallel);
        v.max_num_seqs = self.max_num_seqs.or(v.max_num_seqs);
        v.max_num_batched_tokens = self.max_num_batched_tokens.or(v.max_num_batched_tokens);
        v.prefix_caching = self.prefix_caching.or(v.prefix_caching);
    }
}

/// The settings of `line`, a llama.cpp, `vllm serve` or mlx-lm command line. The error is one
/// line naming the flag.
pub fn parse(line: &str) -> Result<LaunchLine, String> {
    let mut words = split(line, true)?;
    if words
        .first()
        .is_some_and(|w| w.to_ascii_lowercase().ends_with(".exe"))
    {
        // A Windows command line: a backslash is a path separator, not an escape.
        words = split(line, false)?;
    }
    let (program, rest) = program(&words)?;
    let mut l = LaunchLine::default();
    match program {
        Program::LlamaCpp { bench } => llama_cpp(rest, bench, &mut l)?,
        Program::Vllm => vllm(rest, &mut l)?,
        Program::Mlx { generate } => crate::core::mlx::launch_line::mlx_lm(rest, generate, &mut l)?,
    }
    Ok(l)
}

/// Which runtime a command line starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Program {
    /// llama-server, llama-cli, llama-bench (and their old names).
    LlamaCpp { bench: bool },
    /// `vllm serve MODEL`.
    Vllm,
    /// `mlx_lm.server` (`generate` false) or `mlx_lm.generate`, also as `mlx_lm server`,
    /// `python -m mlx_lm.server` and `python -m mlx_lm server`.
    Mlx { generate: bool },
}

/// Shell words: spaces split, single and double quotes group, a backslash escapes the next
/// character, and a backslash-newline joins lines (as a pasted multi-line command is written).
fn split(line: &str, escapes: bool) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\')
                if escapes && matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) =>
            {
                word.get_or_insert_default()
                    .push(chars.next().unwrap_or('\\'));
            }
            (Some(_), c) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '\\') if escapes => match chars.next() {
                Some('\n') | None => {}
                Some(n) => word.get_or_insert_default().push(n),
            },
            (None, c) if c.is_whitespace() => out.extend(word.take()),
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    if quote.is_some() {
        return Err("an unclosed quote".into());
    }
    out.extend(word);
    Ok(out)
}

/// The program and the words after it (`vllm serve` takes two words).
fn program(words: &[String]) -> Result<(Program, &[String]), String> {
    let Some(first) = words.first() else {
        return Err("empty: give a llama.cpp, vLLM or mlx-lm command line".to_string());
    };
    if let Some((generate, used)) = crate::core::mlx::launch_line::program(words) {
        return Ok((Program::Mlx { generate }, &words[used..]));
    }
    let name = first.rsplit('/').next().unwrap_or(first);
    let name = name.strip_suffix(".exe").unwrap_or(name);
    match name {
        "llama-server" | "llama-cli" | "server" | "main" | "llama-run" => {
            Ok((Program::LlamaCpp { bench: false }, &words[1..]))
        }
        "llama-bench" => Ok((Program::LlamaCpp { bench: true }, &words[1..])),
        // The `llama` front end of 2026 builds: `llama serve`, `llama cli`, `llama bench`.
        "llama" => match words.get(1).map(String::as_str) {
            Some("serve" | "server" | "cli" | "run" | "completion") => {
                Ok((Program::LlamaCpp { bench: false }, &words[2..]))
            }
            Some("bench") => Ok((Program::LlamaCpp { bench: true }, &words[2..])),
            _ => Err(format!(
                "'{}': give `llama serve`, `llama cli` or `llama bench`",
                words.join(" ")
            )),
        },
        "vllm" if words.get(1).map(String::as_str) == Some("serve") => {
            Ok((Program::Vllm, &words[2..]))
        }
        _ => Err(format!(
            "'{first}' is not a command headroom reads (llama-server, llama-cli, llama-bench, `vllm serve`, mlx_lm.server or mlx_lm.generate)"
        )),
    }
}

/// The flags and their values, `--flag=value` split; `takes_value` says which flags take one.
pub(crate) fn pairs(
    rest: &[String],
    takes_value: impl Fn(&str) -> bool,
) -> Result<Vec<(String, Option<&str>)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let w = &rest[i];
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f.to_string(), Some(v)),
            _ => (w.clone(), None),
        };
        if inline.is_some() || !takes_value(&flag) {
            out.push((flag, inline));
            i += 1;
            continue;
        }
        let v = rest
            .get(i + 1)
            .map(String::as_str)
            .ok_or_else(|| format!("{flag} needs a value"))?;
        out.push((flag, Some(v)));
        i += 2;
    }
    Ok(out)
}

/// A flag's value through headroom's own parser (the same domain as the headroom flag).
pub(crate) fn value<T>(
    flag: &str,
    v: Option<&str>,
    parse: fn(&str) -> Result<T, String>,
) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    parse(v).map_err(|e| format!("{flag} {v}: {e}"))
}

/// llama.cpp flags that change nothing headroom sizes: accepted, left out.
#[rustfmt::skip]
const LLAMA_IGNORED: &[&str] = &[
    "--host", "--port", "-a", "--alias", "--api-key", "--jinja", "--chat-template", "-n",
    "--n-predict", "--predict", "--temp", "--temperature", "--top-k", "--top-p", "--min-p",
    "--repeat-penalty", "--seed", "-s", "-tb", "--threads-batch", "-sm", "--split-mode", "-mg", "--main-gpu", "--mlock", "--no-mmap",
    "--metrics", "-v", "--verbose", "--log-disable", "--log-file", "-r", "--repetitions", "-o",
    "--output", "-p", "--prompt", "-cnv", "--no-webui", "--keep", "-fit", "--fit", "-fitt",
    "--fit-target", "-fitc", "--fit-ctx", "--offline", "-hft", "--hf-token", "-lv",
    "--verbosity", "--no-mmproj",
];

/// llama.cpp flags that move memory in ways headroom does not model: refused with why.
const LLAMA_NOT_MODELLED: &[(&str, &str)] = &[
    ("-nkvo", "the KV cache in RAM"),
    ("--no-kv-offload", "the KV cache in RAM"),
    ("-ot", "per-tensor buffer overrides"),
    ("--override-tensor", "per-tensor buffer overrides"),
    ("--swa-full", "a full-size sliding-window cache"),
    ("-ncffn", "dense FFN weights in RAM"),
    ("--n-cpu-ffn", "dense FFN weights in RAM"),
    (
        "--rpc",
        "RPC servers (plan them with `headroom cluster --runtime llama.cpp`)",
    ),
];

/// llama.cpp flags without a value.
#[rustfmt::skip]
const LLAMA_SWITCHES: &[&str] = &[
    "--jinja", "--mlock", "--no-mmap", "--metrics", "-v", "--verbose", "--log-disable", "-cnv",
    "--no-webui", "--cpu-moe", "-cmoe", "--cont-batching", "--offline", "--no-mmproj", "-nkvo",
    "--no-kv-offload", "--swa-full", "--no-mmproj-offload",
];

fn llama_cpp(rest: &[String], bench: bool, a: &mut LaunchLine) -> Result<(), String> {
    a.runtime = Some(Runtime::LlamaCpp);
    let takes = |f: &str| {
        f.starts_with('-')
            && !LLAMA_SWITCHES.contains(&f)
            // `-fa` alone was a switch before llama.cpp took on|off|auto.
            && !(f == "-fa" || f == "--flash-attn")
    };
    let words = pairs(rest, takes)?;
    let (mut k, mut v) = (None, None);
    let (mut ctx, mut slots) = (None, None);
    let mut it = words.iter().peekable();
    while let Some((flag, val)) = it.next() {
        let f = flag.as_str();
        match f {
            "-m" | "--model" => {
                let p = val.ok_or_else(|| "-m needs a file".to_string())?;
                a.gguf = Some(p.to_string());
            }
            "-hf" | "-hfr" | "--hf-repo" => {
                let r = val.ok_or_else(|| format!("{f} needs a repo"))?;
                let (repo, quant) = r.split_once(':').map_or((r, None), |(x, q)| (x, Some(q)));
                a.hf = Some(repo.to_string());
                if let Some(q) = quant {
                    a.weights = Some(WeightPrecision::from_cli(q).ok_or_else(|| {
                        format!("{f} {r}: '{q}' is not a precision headroom sizes")
                    })?);
                }
            }
            "-hff" | "--hf-file" => a.hf_file = val.map(str::to_string),
            "-c" | "--ctx-size" => {
                let n: u64 = value(f, *val, |s| {
                    s.parse::<u64>()
                        .map_err(|_| format!("'{s}' is not a whole number"))
                })?;
                // 0: the model's trained length; headroom's default context then applies.
                ctx = (n > 0)
                    .then(|| parse_context(&n.to_string()))
                    .transpose()
                    .map_err(|e| format!("{f}: {e}"))?;
            }
            "-ub" | "--ubatch-size" => a.ubatch = Some(first_of(f, *val, parse_ubatch, bench)?),
            "-b" | "--batch-size" => {
                // The logical batch: how many prompt tokens are submitted at once; the compute
                // buffers follow the ubatch, which headroom sizes.
                value(f, *val, parse_ubatch)?;
            }
            "-ngl" | "--gpu-layers" | "--n-gpu-layers" => {
                a.gpu_layers = match val.map(str::trim) {
                    Some("all") => Some(10_000),
                    Some("auto") => None,
                    _ => Some(first_of(f, *val, parse_gpu_layers, bench)?),
                };
            }
            // Each GPU's share of the layers; llama-bench separates runs with `,` and the
            // proportions of one run with `/` (`-ts 3/1`).
            "-ts" | "--tensor-split" => {
                a.tensor_split = Some(first_of(f, *val, LaunchInputs::parse_tensor_split, bench)?);
            }
            "-t" | "--threads" => a.threads = Some(first_of(f, *val, parse_threads, bench)?),
            "--n-cpu-moe" | "-ncmoe" => a.n_cpu_moe = Some(value(f, *val, parse_gpu_layers)?),
            // The vision projector: sized beside the model (`core::vision`).
            "-mm" | "--mmproj" => {
                let p = val.ok_or_else(|| format!("{f} needs a file"))?;
                a.mmproj = Some(p.to_string());
            }
            "--no-mmproj-offload" => a.no_mmproj_offload = true,
            "--cpu-moe" | "-cmoe" => a.n_cpu_moe = Some(10_000),
            "-fa" | "--flash-attn" => {
                // A value follows when the next word is one; a bare `-fa` (older builds) is on.
                let next = it.peek().map(|(w, _)| w.as_str());
                let on = match next {
                    Some(w @ ("on" | "off" | "auto" | "1" | "0")) => {
                        it.next();
                        w != "off" && w != "0"
                    }
                    _ => val.is_none_or(|x| x != "off" && x != "0"),
                };
                a.flash_attention = Some(on);
            }
            "-ctk" | "--cache-type-k" => k = Some(cache_type(f, *val)?),
            "-ctv" | "--cache-type-v" => v = Some(cache_type(f, *val)?),
            "-np" | "--parallel" => slots = Some(value(f, *val, parse_sched)?),
            "-d" | "--n-depth" if bench => {
                a.prompt = Some(first_of(f, *val, parse_context, bench)?);
            }
            f if LLAMA_IGNORED.contains(&f) => {}
            f if LLAMA_NOT_MODELLED.iter().any(|(n, _)| *n == f) => {
                let why = LLAMA_NOT_MODELLED
                    .iter()
                    .find(|(n, _)| *n == f)
                    .map_or("", |(_, w)| w);
                return Err(format!("{f}: headroom does not model {why}"));
            }
            f if !f.starts_with('-') => {
                return Err(format!("'{f}': llama.cpp takes no positional arguments"));
            }
            f => return Err(format!("{f}: not a llama.cpp flag headroom reads")),
        }
    }
    settle_llama(a, (k, v), ctx, slots);
    Ok(())
}

/// What llama.cpp's flags mean together: `-ngl` beside `--n-cpu-moe`, the K and V cache types
/// (F16 where one is not given), and llama-server's context shared by its `-np` slots.
fn settle_llama(
    a: &mut LaunchLine,
    (k, v): (Option<KvPrecision>, Option<KvPrecision>),
    ctx: Option<u64>,
    slots: Option<u64>,
) {
    if a.gpu_layers.is_some() && a.n_cpu_moe.is_some() {
        // `-ngl N --n-cpu-moe M`: headroom models the expert split with every layer on the GPU
        // (`-ngl 99 --n-cpu-moe M`, how it is run); a smaller -ngl with it is not modelled.
        a.notes.push(format!(
            "-ngl with --n-cpu-moe is sized as -ngl 99 --n-cpu-moe {}",
            a.n_cpu_moe.unwrap_or(0)
        ));
        a.gpu_layers = None;
    }
    if k.is_some() || v.is_some() {
        let (k, v) = (
            k.unwrap_or(KvPrecision::Fp16),
            v.unwrap_or(KvPrecision::Fp16),
        );
        a.kv = Some(KvTypes { k, v });
    }
    // llama-server's context is shared by its slots: each of `-np N` sequences gets c ÷ N.
    match (ctx, slots) {
        (Some(c), Some(n)) => {
            a.context = Some((c / n).max(1));
            a.batch = Some(n.min(crate::core::scenario::limits::MAX_BATCH));
        }
        (Some(c), None) => a.context = Some(c),
        (None, Some(n)) => a.batch = Some(n.min(crate::core::scenario::limits::MAX_BATCH)),
        (None, None) => {}
    }
}

/// llama-bench takes comma lists (`-ngl 10,20,30`): the first value, as its first run uses.
fn first_of<T>(
    flag: &str,
    v: Option<&str>,
    parse: fn(&str) -> Result<T, String>,
    bench: bool,
) -> Result<T, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    let first = if bench {
        v.split(',').next().unwrap_or(v)
    } else {
        v
    };
    parse(first).map_err(|e| format!("{flag} {v}: {e}"))
}

/// A llama.cpp cache type (`f16`, `q8_0`, …) as headroom's KV precision.
fn cache_type(flag: &str, v: Option<&str>) -> Result<KvPrecision, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a type"))?;
    let name = match v {
        "f16" => "fp16",
        "f32" => "fp32",
        other => other,
    };
    KvPrecision::from_cli(name).ok_or_else(|| {
        format!("{flag} {v}: a cache type headroom does not size (f32, f16, bf16, q8_0, q4_0)")
    })
}

/// `vllm serve` flags that change nothing headroom sizes: accepted, left out.
#[rustfmt::skip]
const VLLM_IGNORED: &[&str] = &[
    "--host", "--port", "--served-model-name", "--api-key", "--download-dir", "--seed",
    "--tokenizer", "--revision", "--uvicorn-log-level", "--max-logprobs", "--chat-template",
    "--tool-call-parser", "--reasoning-parser", "--generation-config", "--load-format",
    "--distributed-executor-backend",
];

/// `vllm serve` flags without a value.
#[rustfmt::skip]
const VLLM_SWITCHES: &[&str] = &[
    "--trust-remote-code", "--enforce-eager", "--disable-log-requests", "--disable-log-stats",
    "--enable-prefix-caching", "--no-enable-prefix-caching", "--enable-auto-tool-choice",
];

fn vllm(rest: &[String], a: &mut LaunchLine) -> Result<(), String> {
    a.runtime = Some(Runtime::Vllm);
    // vLLM's argument parser takes `--max_model_len` for `--max-model-len`.
    let rest: Vec<String> = rest
        .iter()
        .map(|w| match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => format!("{}={v}", f.replace('_', "-")),
            _ if w.starts_with("--") => w.replace('_', "-"),
            _ => w.clone(),
        })
        .collect();
    let words = pairs(&rest, |f| f.starts_with('-') && !VLLM_SWITCHES.contains(&f))?;
    for (i, (flag, val)) in words.iter().enumerate() {
        let f = flag.as_str();
        match f {
            m if i == 0 && !m.starts_with('-') => a.served_model = Some(m.to_string()),
            "--model" => a.served_model = val.map(str::to_string),
            "--tensor-parallel-size" | "-tp" => a.tp = Some(value(f, *val, parse_tp)?),
            "--max-model-len" => a.context = Some(value(f, *val, parse_context)?),
            "--gpu-memory-utilization" => {
                a.gpu_memory_utilization = Some(value(f, *val, parse_fraction)?);
            }
            "--max-num-seqs" => a.max_num_seqs = Some(value(f, *val, parse_sched)?),
            "--max-num-batched-tokens" => {
                a.max_num_batched_tokens = Some(value(f, *val, parse_sched)?);
            }
            "--kv-cache-dtype" => match val.unwrap_or("auto") {
                "auto" => {}
                t if t.starts_with("fp8") => a.kv = Some(KvTypes::same(KvPrecision::Fp8)),
                t => return Err(format!("{f} {t}: not a KV cache dtype vLLM takes")),
            },
            "--dtype" => {
                a.weights = match val.unwrap_or("auto") {
                    "auto" => a.weights,
                    "half" | "float16" => Some(WeightPrecision::Fp16),
                    "bfloat16" => Some(WeightPrecision::Bf16),
                    "float" | "float32" => Some(WeightPrecision::Fp32),
                    t => return Err(format!("{f} {t}: not a dtype vLLM takes")),
                };
            }
            "--quantization" | "-q" => {
                let q = val.unwrap_or_default();
                a.weights = Some(match q {
                    "awq" | "awq_marlin" => WeightPrecision::Awq4,
                    "gptq" | "gptq_marlin" => WeightPrecision::Gptq4,
                    "fp8" => WeightPrecision::Fp8,
                    "bitsandbytes" => WeightPrecision::Nf4,
                    "mxfp4" => WeightPrecision::Mxfp4,
                    // vLLM's name for TensorRT Model Optimizer checkpoints (NVFP4 among them).
                    "modelopt_fp4" => WeightPrecision::Nvfp4,
                    t => {
                        return Err(format!("{f} {t}: a quantization headroom does not size"));
                    }
                });
            }
            "--pipeline-parallel-size" | "-pp" => {
                let n = value(f, *val, parse_tp)?;
                if n > 1 {
                    a.notes.push(format!(
                        "{f} {n} is sized per stage by `headroom cluster --pp {n}`; one machine's fit ignores it"
                    ));
                }
            }
            "--enable-prefix-caching" => a.prefix_caching = Some(true),
            "--no-enable-prefix-caching" => a.prefix_caching = Some(false),
            "--trust-remote-code"
            | "--enforce-eager"
            | "--disable-log-requests"
            | "--disable-log-stats"
            | "--enable-auto-tool-choice" => {}
            f if VLLM_IGNORED.contains(&f) => {}
            f => {
                return Err(format!("{f}: not a `vllm serve` flag headroom reads"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words() {
        assert_eq!(
            split(
                "llama-server -m 'my model.gguf' \\\n  -c \"8192\" --alias a\\ b",
                true
            )
            .unwrap(),
            [
                "llama-server",
                "-m",
                "my model.gguf",
                "-c",
                "8192",
                "--alias",
                "a b"
            ]
        );
        assert!(split("llama-cli -m 'x", true).is_err());
    }

    /// A pasted llama-server line over the default scenario: the cache types, context, split,
    /// threads and tensor split land; what the line does not say stays.
    #[test]
    fn applied_to_a_scenario() {
        let l = parse(
            "llama-server -m x.gguf -c 16384 -np 2 -ngl 20 -fa on -ctk q8_0 -ctv q8_0 -t 6 -ts 3,1",
        )
        .unwrap();
        let mut s = Scenario::default();
        let before = s.clone();
        l.apply(&mut s);
        assert_eq!((s.context, s.batch), (8192, 2));
        assert_eq!(s.runtime, Runtime::LlamaCpp);
        assert_eq!(s.kv, KvTypes::same(KvPrecision::Q8_0));
        assert_eq!(s.launch.gpu_layers, Some(20));
        assert_eq!(
            (s.launch.threads, s.launch.tensor_split.clone()),
            (Some(6), vec![3.0, 1.0])
        );
        assert!(s.flash_attention);
        assert_eq!((s.weights, s.model.clone()), (before.weights, before.model));
    }

    #[test]
    fn notes_instead_of_printing() {
        let l = parse("llama-server -m x.gguf -ngl 40 --n-cpu-moe 20").unwrap();
        assert_eq!((l.gpu_layers, l.n_cpu_moe), (None, Some(20)));
        assert_eq!(l.notes.len(), 1);
        let v = parse("vllm serve org/m --pipeline-parallel-size 2").unwrap();
        assert_eq!(v.served_model.as_deref(), Some("org/m"));
        assert!(v.notes[0].contains("--pipeline-parallel-size 2"));
    }
}
