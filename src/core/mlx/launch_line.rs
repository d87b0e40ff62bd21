//! mlx-lm's command lines read into scenario settings: `mlx_lm.server --model
//! mlx-community/Qwen3-4B-Instruct-2507-4bit --prefill-step-size 1024` and `mlx_lm.generate
//! --model … --kv-bits 8 --max-kv-size 8192`.
//!
//! Flags are those of mlx-lm's argument parsers (ml-explore/mlx-lm `mlx_lm/server.py` `main`,
//! `mlx_lm/generate.py` `setup_arg_parser`). The precision comes from the mlx-community repo's
//! suffix (`-4bit`, `-8bit`, `-bf16`, `-mxfp4`); a local folder says nothing until imported.

use crate::core::launch_line::{LaunchLine, pairs, value};
use crate::core::precision::{KvPrecision, KvTypes, WeightPrecision};
use crate::core::scenario::Runtime;
use crate::core::scenario::parse::{parse_context, parse_sched, parse_ubatch};

/// Whether `words` start an mlx-lm command: `Some((generate, words used by the program))`.
pub fn program(words: &[String]) -> Option<(bool, usize)> {
    let name = |i: usize| -> Option<&str> {
        let w = words.get(i)?;
        Some(w.rsplit('/').next().unwrap_or(w))
    };
    let sub = |s: Option<&str>| match s {
        Some("server") => Some(false),
        Some("generate") => Some(true),
        _ => None,
    };
    match name(0)? {
        "mlx_lm.server" => Some((false, 1)),
        "mlx_lm.generate" => Some((true, 1)),
        "mlx_lm" => sub(name(1)).map(|g| (g, 2)),
        p if p.starts_with("python") && name(1) == Some("-m") => match name(2)? {
            "mlx_lm.server" => Some((false, 3)),
            "mlx_lm.generate" => Some((true, 3)),
            "mlx_lm" => sub(name(3)).map(|g| (g, 4)),
            _ => None,
        },
        _ => None,
    }
}

/// The precision an mlx-community repo name carries (`…-4bit`, `…-8bit-DWQ`, `…-bf16`,
/// `…-MXFP4-Q8`), when it carries one.
pub fn repo_precision(repo: &str) -> Option<WeightPrecision> {
    let name = repo.rsplit('/').next().unwrap_or(repo).to_ascii_lowercase();
    name.split(['-', '_']).find_map(|part| match part {
        "bf16" => Some(WeightPrecision::Bf16),
        "fp16" | "f16" => Some(WeightPrecision::Fp16),
        "mxfp4" => Some(WeightPrecision::Mxfp4),
        p => p
            .strip_suffix("bit")
            .and_then(|b| b.parse::<u32>().ok())
            .and_then(WeightPrecision::mlx_of_bits),
    })
}

/// `mlx_lm.server` and `mlx_lm.generate` flags that change nothing headroom sizes.
#[rustfmt::skip]
const IGNORED: &[&str] = &[
    "--host", "--port", "--allowed-origins", "--log-level", "--chat-template", "--temp",
    "--top-p", "--top-k", "--min-p", "--max-tokens", "-m", "--chat-template-args",
    "--prompt-concurrency", "--prompt-cache-size", "--prompt-cache-bytes", "--num-draft-tokens",
    "--prompt", "-p", "--system-prompt", "--extra-eos-token", "--prefill-response", "--seed",
    "--xtc-probability", "--xtc-threshold", "--min-tokens-to-keep", "--chat-template-config",
    "--verbose", "--prompt-cache-file",
];

/// Flags without a value.
#[rustfmt::skip]
const SWITCHES: &[&str] = &[
    "--trust-remote-code", "--use-default-chat-template", "--pipeline", "--ignore-chat-template",
    "--quantize-activations", "-qa",
];

/// Read an mlx-lm command's flags (`rest`, after the program) into `a`.
pub fn mlx_lm(rest: &[String], generate: bool, a: &mut LaunchLine) -> Result<(), String> {
    a.runtime = Some(Runtime::Mlx);
    let words = pairs(rest, |f| f.starts_with('-') && !SWITCHES.contains(&f))?;
    let tool = if generate {
        "mlx_lm.generate"
    } else {
        "mlx_lm.server"
    };
    let (mut kv_bits, mut kv_group) = (None, None);
    for (flag, val) in &words {
        let f = flag.as_str();
        match f {
            "--model" => {
                let m = val.ok_or_else(|| "--model needs a repo or folder".to_string())?;
                a.served_model = Some(m.to_string());
                a.weights = repo_precision(m).or(a.weights);
            }
            "--prefill-step-size" if !generate => {
                a.prefill_step = Some(value(f, *val, parse_ubatch)?);
            }
            "--decode-concurrency" if !generate => {
                a.batch = Some(
                    value(f, *val, parse_sched)?.min(crate::core::scenario::limits::MAX_BATCH),
                );
            }
            "--max-kv-size" if generate => {
                let n = value(f, *val, parse_context)?;
                a.context = Some(n);
                a.notes.push(format!(
                    "--max-kv-size {n} makes every layer's cache a rotating window of {n} tokens: sized as a context of {n}"
                ));
            }
            "--kv-bits" if generate => {
                kv_bits = Some(value(f, *val, |s| {
                    s.parse::<u32>()
                        .map_err(|_| format!("'{s}' is not a whole number"))
                })?);
            }
            "--kv-group-size" if generate => {
                kv_group = Some(value(f, *val, |s| {
                    s.parse::<u64>()
                        .map_err(|_| format!("'{s}' is not a whole number"))
                })?);
            }
            "--quantized-kv-start" if generate => {}
            "--draft-model" => a
                .notes
                .push("--draft-model: sized without the draft model (give it with --draft)".into()),
            "--adapter-path" => {}
            f if IGNORED.contains(&f) || SWITCHES.contains(&f) => {}
            f if !f.starts_with('-') => {
                return Err(format!("'{f}': {tool} takes no positional arguments"));
            }
            f => return Err(format!("{f}: not a {tool} flag headroom reads")),
        }
    }
    if let Some(bits) = kv_bits {
        let group = kv_group.unwrap_or(crate::core::mlx::KV_GROUP_SIZE);
        let k = match (bits, group) {
            (8, 64) => KvPrecision::Q8_0,
            (4, 64) => KvPrecision::Q4_0,
            _ => {
                return Err(format!(
                    "--kv-bits {bits} --kv-group-size {group}: headroom sizes an MLX cache of 8 or 4 bits in groups of 64"
                ));
            }
        };
        a.kv = Some(KvTypes::same(k));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::launch_line::parse;

    #[test]
    fn programs() {
        let w = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(program(&w("mlx_lm.server --model x")), Some((false, 1)));
        assert_eq!(program(&w("mlx_lm generate --model x")), Some((true, 2)));
        assert_eq!(
            program(&w("python3 -m mlx_lm.server --port 1")),
            Some((false, 3))
        );
        assert_eq!(program(&w("python -m mlx_lm server")), Some((false, 4)));
        assert_eq!(program(&w("llama-server -m x")), None);
    }

    #[test]
    fn repo_suffixes() {
        assert_eq!(
            repo_precision("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit"),
            Some(WeightPrecision::Mlx4)
        );
        assert_eq!(
            repo_precision("mlx-community/Qwen3-4B-Instruct-2507-8bit"),
            Some(WeightPrecision::Mlx8)
        );
        assert_eq!(
            repo_precision("mlx-community/Qwen3-4B-4bit-DWQ"),
            Some(WeightPrecision::Mlx4)
        );
        assert_eq!(
            repo_precision("mlx-community/Mistral-7B-Instruct-v0.3-bf16"),
            Some(WeightPrecision::Bf16)
        );
        assert_eq!(repo_precision("./my-model"), None);
    }

    /// The server line of mlx-lm's SERVER.md and a generate line with a quantised cache.
    #[test]
    fn server_and_generate_lines() {
        let l = parse(
            "mlx_lm.server --model mlx-community/Qwen3-4B-Instruct-2507-4bit --port 8080 --prefill-step-size 1024",
        )
        .unwrap();
        assert_eq!(l.runtime, Some(Runtime::Mlx));
        assert_eq!(l.weights, Some(WeightPrecision::Mlx4));
        assert_eq!(l.prefill_step, Some(1024));
        assert_eq!(
            l.served_model.as_deref(),
            Some("mlx-community/Qwen3-4B-Instruct-2507-4bit")
        );
        let g = parse(
            "mlx_lm.generate --model mlx-community/Meta-Llama-3.1-8B-Instruct-4bit --max-kv-size 33000 --max-tokens 1000 --temp 0.0 --top-p 0.9 --seed 1000 --kv-bits 8 --prompt -",
        )
        .unwrap();
        assert_eq!(g.context, Some(33_000));
        assert_eq!(g.kv, Some(KvTypes::same(KvPrecision::Q8_0)));
        assert_eq!(g.notes.len(), 1);
        // Flags of the other tool, or of none, are named.
        let e = parse("mlx_lm.server --model x --kv-bits 8").unwrap_err();
        assert!(
            e.contains("--kv-bits") && e.contains("mlx_lm.server"),
            "{e}"
        );
        let e = parse("mlx_lm.generate --model x --kv-bits 3").unwrap_err();
        assert!(e.contains("--kv-bits 3"), "{e}");
    }
}
