//! `--command "llama-server -m model.gguf -ngl 40 -c 32768 -fa on -ctk q8_0 --n-cpu-moe 20"` or
//! `--command "vllm serve meta-llama/Llama-3.1-8B-Instruct --tensor-parallel-size 2 …"`: the
//! runtime's own command line read into the scenario flags it means. Flags given to headroom
//! directly win over the command's; a flag the reader does not know is an error naming it, and
//! flags that change nothing headroom sizes (ports, sampling, logging) are accepted and left out.
//!
//! llama.cpp's flags are those of `common/arg.cpp` (`llama-server`, `llama-cli`, `llama-bench`);
//! vLLM's those of `vllm serve` (`vllm/engine/arg_utils.py` `EngineArgs`).

use super::app::CliError;
use super::args::ScenarioArgs;
use super::values::{
    parse_context, parse_fraction, parse_gpu_layers, parse_sched, parse_tp, parse_ubatch,
};
use crate::core::precision::{KvPrecision, KvTypes, WeightPrecision};
use crate::core::scenario::Runtime;
use std::path::PathBuf;

/// Which runtime a command line starts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Program {
    /// llama-server, llama-cli, llama-bench (and their old names).
    LlamaCpp { bench: bool },
    /// `vllm serve MODEL`.
    Vllm,
}

/// `a` with the command line's settings filled in where `a` leaves them unset.
pub fn merge(a: &ScenarioArgs) -> Result<ScenarioArgs, CliError> {
    let Some(line) = a.command.as_deref() else {
        return Ok(a.clone());
    };
    let mut words = split(line, true).map_err(|e| usage(&e))?;
    if words
        .first()
        .is_some_and(|w| w.to_ascii_lowercase().ends_with(".exe"))
    {
        // A Windows command line: a backslash is a path separator, not an escape.
        words = split(line, false).map_err(|e| usage(&e))?;
    }
    let (program, rest) = program(&words)?;
    let mut from = ScenarioArgs::default();
    match program {
        Program::LlamaCpp { bench } => llama_cpp(rest, bench, &mut from)?,
        Program::Vllm => vllm(rest, &mut from)?,
    }
    Ok(fill(a.clone(), from))
}

fn usage(msg: &str) -> CliError {
    CliError::usage(format!("--command: {msg}"))
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
fn program(words: &[String]) -> Result<(Program, &[String]), CliError> {
    let Some(first) = words.first() else {
        return Err(usage("empty: give a llama.cpp or vLLM command line"));
    };
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
            _ => Err(usage(&format!(
                "'{}': give `llama serve`, `llama cli` or `llama bench`",
                words.join(" ")
            ))),
        },
        "vllm" if words.get(1).map(String::as_str) == Some("serve") => {
            Ok((Program::Vllm, &words[2..]))
        }
        _ => Err(usage(&format!(
            "'{first}' is not a command headroom reads (llama-server, llama-cli, llama-bench or `vllm serve`)"
        ))),
    }
}

/// The flags and their values, `--flag=value` split; `takes_value` says which flags take one.
fn pairs(
    rest: &[String],
    takes_value: impl Fn(&str) -> bool,
) -> Result<Vec<(String, Option<&str>)>, CliError> {
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
            .ok_or_else(|| usage(&format!("{flag} needs a value")))?;
        out.push((flag, Some(v)));
        i += 2;
    }
    Ok(out)
}

/// A flag's value through headroom's own parser (the same domain as the headroom flag).
fn value<T>(
    flag: &str,
    v: Option<&str>,
    parse: fn(&str) -> Result<T, String>,
) -> Result<T, CliError> {
    let v = v.ok_or_else(|| usage(&format!("{flag} needs a value")))?;
    parse(v).map_err(|e| usage(&format!("{flag} {v}: {e}")))
}

/// llama.cpp flags that change nothing headroom sizes: accepted, left out.
#[rustfmt::skip]
const LLAMA_IGNORED: &[&str] = &[
    "--host", "--port", "-a", "--alias", "--api-key", "--jinja", "--chat-template", "-n",
    "--n-predict", "--predict", "--temp", "--temperature", "--top-k", "--top-p", "--min-p",
    "--repeat-penalty", "--seed", "-s", "-t", "--threads", "-tb", "--threads-batch", "-ts",
    "--tensor-split", "-sm", "--split-mode", "-mg", "--main-gpu", "--mlock", "--no-mmap",
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

fn llama_cpp(rest: &[String], bench: bool, a: &mut ScenarioArgs) -> Result<(), CliError> {
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
                let p = val.ok_or_else(|| usage("-m needs a file"))?;
                a.gguf = Some(PathBuf::from(p));
            }
            "-hf" | "-hfr" | "--hf-repo" => {
                let r = val.ok_or_else(|| usage(&format!("{f} needs a repo")))?;
                let (repo, quant) = r.split_once(':').map_or((r, None), |(x, q)| (x, Some(q)));
                a.hf = Some(repo.to_string());
                if let Some(q) = quant {
                    a.weights = Some(WeightPrecision::from_cli(q).ok_or_else(|| {
                        usage(&format!("{f} {r}: '{q}' is not a precision headroom sizes"))
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
                    .map_err(|e| usage(&format!("{f}: {e}")))?;
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
            "--n-cpu-moe" | "-ncmoe" => a.n_cpu_moe = Some(value(f, *val, parse_gpu_layers)?),
            // The vision projector: sized beside the model (`core::vision`).
            "-mm" | "--mmproj" => {
                let p = val.ok_or_else(|| usage(&format!("{f} needs a file")))?;
                a.mmproj = Some(PathBuf::from(p));
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
                return Err(usage(&format!("{f}: headroom does not model {why}")));
            }
            f if !f.starts_with('-') => {
                return Err(usage(&format!(
                    "'{f}': llama.cpp takes no positional arguments"
                )));
            }
            f => return Err(usage(&format!("{f}: not a llama.cpp flag headroom reads"))),
        }
    }
    if a.gpu_layers.is_some() && a.n_cpu_moe.is_some() {
        // `-ngl N --n-cpu-moe M`: headroom models the expert split with every layer on the GPU
        // (`-ngl 99 --n-cpu-moe M`, how it is run); a smaller -ngl with it is not modelled.
        eprintln!(
            "headroom: note: --command: -ngl with --n-cpu-moe is sized as -ngl 99 --n-cpu-moe {}",
            a.n_cpu_moe.unwrap_or(0)
        );
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
    Ok(())
}

/// llama-bench takes comma lists (`-ngl 10,20,30`): the first value, as its first run uses.
fn first_of<T>(
    flag: &str,
    v: Option<&str>,
    parse: fn(&str) -> Result<T, String>,
    bench: bool,
) -> Result<T, CliError> {
    let v = v.ok_or_else(|| usage(&format!("{flag} needs a value")))?;
    let first = if bench {
        v.split(',').next().unwrap_or(v)
    } else {
        v
    };
    parse(first).map_err(|e| usage(&format!("{flag} {v}: {e}")))
}

/// A llama.cpp cache type (`f16`, `q8_0`, …) as headroom's KV precision.
fn cache_type(flag: &str, v: Option<&str>) -> Result<KvPrecision, CliError> {
    let v = v.ok_or_else(|| usage(&format!("{flag} needs a type")))?;
    let name = match v {
        "f16" => "fp16",
        "f32" => "fp32",
        other => other,
    };
    KvPrecision::from_cli(name).ok_or_else(|| {
        usage(&format!(
            "{flag} {v}: a cache type headroom does not size (f32, f16, bf16, q8_0, q4_0)"
        ))
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

fn vllm(rest: &[String], a: &mut ScenarioArgs) -> Result<(), CliError> {
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
            m if i == 0 && !m.starts_with('-') => model_arg(m, a),
            "--model" => model_arg(val.unwrap_or_default(), a),
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
                t => return Err(usage(&format!("{f} {t}: not a KV cache dtype vLLM takes"))),
            },
            "--dtype" => {
                a.weights = match val.unwrap_or("auto") {
                    "auto" => a.weights,
                    "half" | "float16" => Some(WeightPrecision::Fp16),
                    "bfloat16" => Some(WeightPrecision::Bf16),
                    "float" | "float32" => Some(WeightPrecision::Fp32),
                    t => return Err(usage(&format!("{f} {t}: not a dtype vLLM takes"))),
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
                        return Err(usage(&format!(
                            "{f} {t}: a quantization headroom does not size"
                        )));
                    }
                });
            }
            "--pipeline-parallel-size" | "-pp" => {
                let n = value(f, *val, parse_tp)?;
                if n > 1 {
                    eprintln!(
                        "headroom: note: --command: {f} {n} is sized per stage by `headroom cluster --pp {n}`; one machine's fit ignores it"
                    );
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
                return Err(usage(&format!(
                    "{f}: not a `vllm serve` flag headroom reads"
                )));
            }
        }
    }
    Ok(())
}

/// vLLM's model: a Hub repo id (`org/name`) or a local folder of safetensors.
fn model_arg(m: &str, a: &mut ScenarioArgs) {
    let p = PathBuf::from(m);
    if p.is_dir() || m.starts_with('/') || m.starts_with('.') {
        a.safetensors = Some(p);
    } else {
        a.hf = Some(m.to_string());
    }
}

/// `a` with every option it leaves unset taken from `from` (the model source only when `a`
/// names none).
fn fill(mut a: ScenarioArgs, from: ScenarioArgs) -> ScenarioArgs {
    let named = a.model.is_some()
        || a.config.is_some()
        || a.params.is_some()
        || a.gguf.is_some()
        || a.safetensors.is_some()
        || a.hf.is_some()
        || a.url.is_some();
    if !named {
        a.gguf = from.gguf;
        a.safetensors = from.safetensors;
        a.hf = from.hf;
        a.hf_file = a.hf_file.or(from.hf_file);
    }
    macro_rules! take {
        ($($f:ident),*) => { $( a.$f = a.$f.or(from.$f); )* };
    }
    take!(
        weights,
        kv,
        context,
        batch,
        ubatch,
        prompt,
        runtime,
        flash_attention,
        tp,
        gpu_memory_utilization,
        max_num_seqs,
        max_num_batched_tokens,
        prefix_caching,
        mmproj,
        images,
        image_tokens
    );
    a.no_mmproj_offload |= from.no_mmproj_offload;
    // The split is one setting: an explicit --gpu-layers or --n-cpu-moe replaces the command's.
    if a.gpu_layers.is_none() && a.n_cpu_moe.is_none() {
        a.gpu_layers = from.gpu_layers;
        a.n_cpu_moe = from.n_cpu_moe;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> ScenarioArgs {
        merge(&ScenarioArgs {
            command: Some(line.into()),
            ..ScenarioArgs::default()
        })
        .unwrap_or_else(|e| panic!("{line}: {}", e.message))
    }

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

    #[test]
    fn llama_server_line() {
        let a = args(
            "llama-server -m x.gguf -ngl 40 -c 32768 -fa on -ctk q8_0 -ctv q4_0 --n-cpu-moe 20 --port 8080",
        );
        assert_eq!(a.gguf, Some(PathBuf::from("x.gguf")));
        assert_eq!((a.gpu_layers, a.n_cpu_moe), (None, Some(20)));
        assert_eq!(a.context, Some(32768));
        assert_eq!(a.flash_attention, Some(true));
        assert_eq!(
            a.kv,
            Some(KvTypes {
                k: KvPrecision::Q8_0,
                v: KvPrecision::Q4_0
            })
        );
        assert_eq!(a.runtime, Some(Runtime::LlamaCpp));
    }

    /// Command lines as the runtimes' own documentation writes them.
    #[test]
    fn real_command_lines() {
        // llama.cpp tools/server/README.md, Quick Start (commit 00dc805).
        let a = args("./llama-server -m models/7B/ggml-model.gguf -c 2048");
        assert_eq!(a.gguf, Some(PathBuf::from("models/7B/ggml-model.gguf")));
        assert_eq!(
            (a.context, a.runtime),
            (Some(2048), Some(Runtime::LlamaCpp))
        );
        let w = args("llama-server.exe -m models\\7B\\ggml-model.gguf -c 2048");
        assert_eq!(w.gguf, Some(PathBuf::from("models\\7B\\ggml-model.gguf")));
        // llama.cpp README.md, Quick start and the recommended server command (commit 003fb84).
        let h = args("llama serve -hf ggml-org/Qwen3.5-0.8B-GGUF");
        assert_eq!(h.hf.as_deref(), Some("ggml-org/Qwen3.5-0.8B-GGUF"));
        let r = args("llama-server -m model.gguf -ngl 99 -c 65536 --parallel 1");
        assert_eq!(
            (r.gpu_layers, r.context, r.batch),
            (Some(99), Some(65536), Some(1))
        );
        // The -hf quant tag is the precision: ggml-org/GLM-4.7-Flash-GGUF:Q4_K_M (server README).
        let q = args("llama-server -hf ggml-org/GLM-4.7-Flash-GGUF:Q4_K_M");
        assert_eq!(q.weights, Some(WeightPrecision::Q4KM));
        // vLLM's docs: distributed serving, and the XPU page's pipeline-parallel example.
        let v = args("vllm serve facebook/opt-13b \\\n     --tensor-parallel-size 4");
        assert_eq!((v.hf.as_deref(), v.tp), (Some("facebook/opt-13b"), Some(4)));
        assert_eq!(v.runtime, Some(Runtime::Vllm));
        let x = args(
            "vllm serve facebook/opt-13b --dtype=bfloat16 --max_model_len=1024 --distributed-executor-backend=mp --pipeline-parallel-size=2 -tp=8",
        );
        assert_eq!(x.weights, Some(WeightPrecision::Bf16));
        assert_eq!((x.context, x.tp), (Some(1024), Some(8)));
        // llama-bench's comma lists: the first run's values.
        let b = args("llama-bench -m m.gguf -ngl 10,20 -ub 256,512 -fa 1");
        assert_eq!(
            (b.gpu_layers, b.ubatch, b.flash_attention),
            (Some(10), Some(256), Some(true))
        );
    }

    #[test]
    fn slots_share_the_context_and_explicit_flags_win() {
        let a = merge(&ScenarioArgs {
            command: Some("llama-server -m x.gguf -c 16384 -np 4 -ngl 20".into()),
            gpu_layers: Some(30),
            context: Some(2048),
            ..ScenarioArgs::default()
        })
        .unwrap();
        assert_eq!(
            (a.context, a.batch, a.gpu_layers),
            (Some(2048), Some(4), Some(30))
        );
        let b = args("llama-server -m x.gguf -c 16384 -np 4");
        assert_eq!((b.context, b.batch), (Some(4096), Some(4)));
    }

    #[test]
    fn bad_lines_name_the_flag() {
        let err = |line: &str| {
            merge(&ScenarioArgs {
                command: Some(line.into()),
                ..ScenarioArgs::default()
            })
            .unwrap_err()
            .message
        };
        assert!(err("llama-server -m x.gguf --frobnicate 3").contains("--frobnicate"));
        assert!(err("llama-server -m x.gguf -c lots").contains("-c lots"));
        assert!(err("llama-server -m x.gguf -ctk q5_1").contains("-ctk q5_1"));
        assert!(err("ollama run llama3").contains("'ollama'"));
        assert!(err("vllm serve x --quantization squeezellm").contains("squeezellm"));
        assert!(err("llama-server -ngl").contains("-ngl needs a value"));
        assert!(err("llama-server -m x.gguf -nkvo").contains("KV cache in RAM"));
    }
}
