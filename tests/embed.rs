//! Embedding and reranking models (`--mode embed`, issue "Beyond text generation" item 2): the
//! encoder's parameters counted by hand from transformers' BERT modules, no KV cache where the
//! runtime keeps none, one forward pass's activations, and throughput in sequences per second.

use headroom::core::WeightPrecision;
use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::fit::{FitResult, FitSettings, fit_all};
use headroom::core::hf_config::parse_hf_config;
use headroom::core::model::ModelSpec;
use headroom::core::scenario::{Mode, Runtime, Scenario};
use headroom::io::catalog::builtin;
use std::process::Command;

fn preset(id: &str) -> ModelSpec {
    builtin().model(id).unwrap().spec.clone()
}

fn embed(id: &str, tokens: u64, batch: u64) -> Scenario {
    Scenario {
        model: preset(id),
        model_id: Some(id.into()),
        mode: Mode::Embed,
        weights: WeightPrecision::Fp16,
        context: tokens,
        prompt_tokens: tokens,
        batch,
        ..Scenario::default()
    }
}

fn kind(s: &Scenario, k: ComponentKind) -> u64 {
    estimate(s)
        .components
        .iter()
        .filter(|c| c.kind == k)
        .map(|c| c.bytes.0)
        .sum()
}

fn fit_on(s: &Scenario, machine: &str) -> FitResult {
    let cat = builtin();
    let m = cat.machine(machine).unwrap();
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

/// BERT-large (24 layers, h 1024, 16 heads, MLP 4096) as `BertModel` builds it:
/// embeddings V·h + P·h + T·h + LayerNorm 2h; per layer q/k/v/o 4(h² + h), two LayerNorms 4h,
/// MLP h·I + I + I·h + h; the pooler h² + h.
fn bert_large(vocab: u64, positions: u64, types: u64) -> u64 {
    let (h, i) = (1024u64, 4096u64);
    let layer = 4 * (h * h + h) + 4 * h + (h * i + i) + (i * h + h);
    vocab * h + positions * h + types * h + 2 * h + 24 * layer + (h * h + h)
}

#[test]
fn encoder_parameters_are_counted_module_by_module() {
    // 12,596,224 a layer; BGE large EN v1.5 (BERT vocab 30,522, 512 positions, 2 types):
    // 335,141,888 — the model card's "335M params".
    assert_eq!(bert_large(30_522, 512, 2), 335_141_888);
    assert_eq!(preset("bge-large-en-v1.5").param_count().total, 335_141_888);
    assert_eq!(preset("e5-large-v2").param_count().total, 335_141_888);
    // BGE-M3 (XLM-RoBERTa large: 250,002 tokens, 8,194 positions, 1 type): "568M params".
    assert_eq!(bert_large(250_002, 8_194, 1), 567_754_752);
    assert_eq!(preset("bge-m3").param_count().total, 567_754_752);
    // Multilingual E5 large (514 positions): "560M params".
    assert_eq!(
        preset("multilingual-e5-large").param_count().total,
        bert_large(250_002, 514, 1)
    );
    // Qwen3-Embedding 0.6B: the Qwen3-0.6B decoder (596,049,920 with 151,936 tokens) with
    // 151,669 tokens: 267 × 1024 fewer.
    assert_eq!(
        preset("qwen3-embedding-0.6b").param_count().total,
        596_049_920 - 267 * 1024
    );
}

#[test]
fn a_bert_config_json_reads_as_an_encoder() {
    // The keys of BAAI/bge-large-en-v1.5's config.json that shape the model.
    let cfg = r#"{"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 1024,
        "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096,
        "vocab_size": 30522, "max_position_embeddings": 512, "type_vocab_size": 2,
        "hidden_act": "gelu", "layer_norm_eps": 1e-12}"#;
    let m = parse_hf_config(cfg).unwrap();
    assert_eq!(m.param_count().total, 335_141_888);
    assert!(m.encoder.is_some());
    assert_eq!(m.max_context, 512);
    // XLM-RoBERTa: 514 positions hold 512 tokens (the padding offset).
    let x = cfg.replace("\"bert\"", "\"xlm-roberta\"").replace(
        "\"max_position_embeddings\": 512",
        "\"max_position_embeddings\": 514",
    );
    assert_eq!(parse_hf_config(&x).unwrap().max_context, 512);
    // Bad input names the key.
    let bad = cfg.replace("\"num_attention_heads\": 16", "\"num_attention_heads\": 15");
    let e = parse_hf_config(&bad).unwrap_err().to_string();
    assert!(
        e.contains("num_attention_heads") && !e.contains('\n'),
        "{e}"
    );
}

#[test]
fn an_embedding_pass_keeps_no_kv_cache_unless_llama_cpp_runs_a_decoder() {
    // The reranker complaint: sized as a chat model at its 8K context, BGE-M3 carries a KV
    // cache it never allocates.
    let chat = Scenario {
        mode: Mode::Inference,
        context: 8192,
        prompt_tokens: 512,
        ..embed("bge-m3", 512, 1)
    };
    assert!(kind(&chat, ComponentKind::KvCache) > 0);
    let s = embed("bge-m3", 512, 1);
    assert_eq!(kind(&s, ComponentKind::KvCache), 0);
    let total = estimate(&s).per_gpu_total().0;
    // FP16 weights 1.06 GiB + activations + 512 MiB runtime: under 2 GiB.
    assert!(total < 2 << 30, "{total}");

    // llama.cpp: an encoder gets no memory (llama_model::create_memory: nullptr for BERT)…
    let l = Scenario {
        runtime: Runtime::LlamaCpp,
        ..embed("bge-large-en-v1.5", 512, 4)
    };
    assert_eq!(kind(&l, ComponentKind::KvCache), 0);
    // …a decoder run with --embedding its usual cache: 28 layers × 2 × 8 KV heads × 128 × 2 B
    // = 114,688 B a token, × 512 cells × 4 sequences.
    let q = Scenario {
        runtime: Runtime::LlamaCpp,
        ..embed("qwen3-embedding-0.6b", 512, 4)
    };
    assert_eq!(kind(&q, ComponentKind::KvCache), 114_688 * 512 * 4);
    // The PyTorch servers keep none for it.
    assert_eq!(
        kind(
            &embed("qwen3-embedding-0.6b", 512, 4),
            ComponentKind::KvCache
        ),
        0
    );
}

#[test]
fn the_whole_batch_goes_through_one_forward_pass() {
    // Generic runtime, FlashAttention: 32 × 512 = 16,384 tokens in flight. Hidden states
    // q·h·2 B·4 = 134,217,728; q/k/v q·(16 + 2·16)·64·2 B = 100,663,296; the MLP q·4096·2 B·2 =
    // 268,435,456; pooled output 32 × 1024 × 4 B = 131,072; no logits.
    let s = embed("bge-large-en-v1.5", 512, 32);
    let e = estimate(&s);
    let act: Vec<_> = e
        .components
        .iter()
        .filter(|c| c.kind == ComponentKind::Activations)
        .map(|c| (c.name.as_str(), c.bytes.0))
        .collect();
    assert!(
        act.contains(&("Prefill activations (one layer in flight)", 503_316_480)),
        "{act:?}"
    );
    assert!(act.contains(&("Pooled embeddings", 131_072)), "{act:?}");
    assert!(!act.iter().any(|(n, _)| *n == "Logits"), "{act:?}");
}

#[test]
fn throughput_is_the_prefill_rate_in_sequences() {
    let s = embed("bge-large-en-v1.5", 512, 32);
    let f = fit_on(&s, "desktop-rtx4090-64gb");
    let e = f.embedding.as_ref().expect("embedding speed");
    assert_eq!(e.tokens_per_sequence, 512);
    assert_eq!(e.tokens_per_s, f.prefill_tokens_per_s);
    assert!((e.sequences_per_s * 512.0 - f.prefill_tokens_per_s).abs() < 1e-6);
    assert!((e.batch_s - 32.0 * 512.0 / f.prefill_tokens_per_s).abs() < 1e-9);
    // A 335M-parameter encoder: at least 1,000 tokens/s on a 4090 and no faster than its
    // FP16 tensor peak (165 TFLOPS) at 2 FLOPs per parameter per token allows.
    assert!(
        e.tokens_per_s > 1e3 && e.tokens_per_s < 165e12 / (2.0 * 335e6),
        "{e:?}"
    );
    // Cost per 1M input tokens follows the input rate, not a decode rate.
    let cloud = fit_on(&s, "aws-g5-xlarge");
    let rate = cloud.embedding.as_ref().unwrap().tokens_per_s;
    let usd = cloud.usd_per_million_tokens.unwrap();
    let hourly = 1.006; // aws-g5-xlarge on-demand $/h in the catalog
    assert!(
        (usd - hourly / (rate * 3600.0) * 1e6).abs() < 0.05 * usd,
        "{usd} vs {rate}"
    );
}

fn headroom(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_headroom"))
        .args(args)
        .env(
            "XDG_CONFIG_HOME",
            std::env::temp_dir().join("headroom-cli-test-no-user-catalogs"),
        )
        .output()
        .unwrap()
}

#[test]
fn the_cli_takes_mode_embed() {
    let o = headroom(&[
        "fit",
        "--model",
        "bge-m3",
        "--mode",
        "embed",
        "--weights",
        "fp16",
        "--context",
        "512",
        "--prompt",
        "512",
        "--batch",
        "16",
        "--machine",
        "aws-g5-xlarge",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = &v[0];
    assert!(r["decode_tokens_per_s"].is_null(), "{r}");
    let e = &r["embedding"];
    assert_eq!(e["tokens_per_sequence"], 512);
    assert!(e["sequences_per_s"].as_f64().unwrap() > 0.0, "{e}");
    assert!(r["serving"].is_null(), "{r}");
    // Speculative decoding is for generation only.
    let o = headroom(&[
        "estimate",
        "--model",
        "bge-m3",
        "--mode",
        "embed",
        "--speculative",
        "eagle3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--speculative") && err.lines().count() == 1,
        "{err}"
    );
    // Serving and cluster plans are for generation: one line naming the flag.
    for cmd in ["serve", "cluster"] {
        let o = headroom(&[cmd, "--model", "bge-m3", "--mode", "embed"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("--mode embed") && err.lines().count() == 1,
            "{err}"
        );
    }
    // The table says sequences per second.
    let o = headroom(&[
        "fit",
        "--model",
        "bge-m3",
        "--mode",
        "embed",
        "--prompt",
        "512",
        "--context",
        "512",
        "--machine",
        "aws-g5-xlarge",
    ]);
    let t = String::from_utf8_lossy(&o.stdout);
    assert!(
        t.contains("embeddings: ") && t.contains("sequences/s of 512 tokens"),
        "{t}"
    );
}

/// BERT-base (bert-base-uncased config.json: 12 layers, h 768, 12 heads, MLP 3072).
fn bert_base() -> ModelSpec {
    parse_hf_config(
        r#"{"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12,
            "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
            "max_position_embeddings": 512, "type_vocab_size": 2}"#,
    )
    .unwrap()
}

/// Published encoder throughput (docs/measurements/embedding_throughput.md, each row's primary
/// source there), against the fit's input tokens/s on the Generic runtime (FP16, one GPU).
/// Rows: (model, machine, tokens per sequence, batch, published tokens/s, row).
#[test]
fn encoder_throughput_follows_published_runs() {
    let rows: [(ModelSpec, &str, u64, u64, f64, &str); 4] = [
        // Row 21: BAAI/bge-large-en-v1.5, text-embeddings-inference 0.6, NVIDIA L4, requests of
        // 256 sentences / 115,000 tokens (mean 449), 62 k tokens/s (michaelfeil/infinity
        // docs/benchmarks).
        (
            preset("bge-large-en-v1.5"),
            "aws-g6-xlarge",
            449,
            256,
            62_000.0,
            "21",
        ),
        // Row 14: BERT-Large FP16, NVIDIA T4, batch 128 × 384, 1,518.35 ms a batch
        // (NVIDIA/TensorRT demo/BERT/README.md): 32.4 k tokens/s.
        (
            preset("bge-large-en-v1.5"),
            "aws-g4dn-xlarge",
            384,
            128,
            128.0 * 384.0 / 1.51835,
            "14",
        ),
        // Row 17: bert-base-uncased, PyTorch 1.12 eager, A100 40GB, batch 128 × 384, 1,276.67
        // sequences/s (facebookincubator/AITemplate examples/03_bert/README.md).
        (
            bert_base(),
            "gcp-a2-highgpu-1g",
            384,
            128,
            1_276.67 * 384.0,
            "17",
        ),
        // Row 15: the same at batch 256 × 128, 4,543.88 sequences/s.
        (
            bert_base(),
            "gcp-a2-highgpu-1g",
            128,
            256,
            4_543.88 * 128.0,
            "15",
        ),
    ];
    for (model, machine, tokens, batch, published, row) in rows {
        let s = Scenario {
            model,
            model_id: None,
            mode: Mode::Embed,
            weights: WeightPrecision::Fp16,
            context: tokens,
            prompt_tokens: tokens,
            batch,
            ..Scenario::default()
        };
        let f = fit_on(&s, machine);
        let ours = f.embedding.as_ref().unwrap().tokens_per_s;
        let err = ours / published - 1.0;
        assert!(
            err.abs() <= 0.35,
            "row {row} on {machine}: {ours:.0} tokens/s vs published {published:.0} ({:+.0} %)",
            err * 100.0
        );
    }
}

#[test]
fn a_reranker_has_its_classification_head_instead_of_the_pooler() {
    // XLMRobertaForSequenceClassification: classifier.dense 1024² + 1024 and out_proj 1024 + 1
    // in place of the pooler's 1024² + 1024: BGE-M3's count + 1,025.
    let r = preset("bge-reranker-v2-m3").param_count().total;
    assert_eq!(r, 567_754_752 + 1_025);
    let cfg = r#"{"architectures": ["XLMRobertaForSequenceClassification"],
        "model_type": "xlm-roberta", "hidden_size": 1024, "num_hidden_layers": 24,
        "num_attention_heads": 16, "intermediate_size": 4096, "vocab_size": 250002,
        "max_position_embeddings": 8194, "type_vocab_size": 1, "id2label": {"0": "LABEL_0"}}"#;
    assert_eq!(parse_hf_config(cfg).unwrap().param_count().total, r);
    // Sized as a generator at its 8K context it would carry a KV cache of 24 × 2 × 16 × 64 × 2 B
    // × 8,192 = 768 MiB it never allocates; scoring a 512-token pair in FP16 needs about
    // 1.06 GiB of weights and well under 2 GiB in all.
    let s = embed("bge-reranker-v2-m3", 512, 1);
    assert_eq!(kind(&s, ComponentKind::KvCache), 0);
    assert!(estimate(&s).per_gpu_total().0 < 2 << 30);
}
