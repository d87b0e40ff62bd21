//! DeepSeek Sparse Attention (DeepSeek-V3.2-Exp, issue 32 item 1): the lightning indexer's
//! parameters and key cache counted by hand from DeepSeek-V3.2-Exp `inference/model.py`
//! (`Indexer`), and the decode it buys at long context (attention reads the top-k tokens only).

use headroom::core::WeightPrecision;
use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::fit::{FitResult, FitSettings, fit_all};
use headroom::core::hf_config::parse_hf_config;
use headroom::core::precision::{KvPrecision, KvTypes};
use headroom::core::scenario::{Runtime, Scenario};
use headroom::io::catalog::builtin;

/// Per layer: wq_b 1536 × (64 × 128) + wk 7168 × 128 + k_norm (weight + bias) 2 × 128 +
/// weights_proj 7168 × 64.
const INDEXER_PER_LAYER: u64 = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64;

fn scenario(id: &str, context: u64) -> Scenario {
    Scenario {
        model: builtin().model(id).unwrap().spec.clone(),
        model_id: Some(id.into()),
        weights: WeightPrecision::Fp8Block,
        kv: KvTypes {
            k: KvPrecision::Fp16,
            v: KvPrecision::Fp16,
        },
        context,
        prompt_tokens: 1024.min(context),
        runtime: Runtime::Vllm,
        ..Scenario::default()
    }
}

fn fit_on(s: &Scenario, machine: &str) -> FitResult {
    let cat = builtin();
    let m = cat.machine(machine).unwrap();
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

#[test]
fn the_indexer_adds_its_projections_to_every_layer() {
    assert_eq!(INDEXER_PER_LAYER, 13_959_424);
    let v31 = builtin().model("deepseek-v3.1").unwrap().spec.param_count();
    let v32 = builtin()
        .model("deepseek-v3.2-exp")
        .unwrap()
        .spec
        .param_count();
    assert_eq!(v32.total, v31.total + 61 * INDEXER_PER_LAYER);
    // Every layer's indexer runs for every token.
    assert_eq!(v32.active, v31.active + 61 * INDEXER_PER_LAYER);
}

#[test]
fn a_deepseek_v32_config_json_reads_its_indexer() {
    let text = std::fs::read_to_string("tests/fixtures/configs/deepseek-ai_DeepSeek-V3.json")
        .unwrap()
        .replace("\"deepseek_v3\"", "\"deepseek_v32\"");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let base = parse_hf_config(&text).unwrap().param_count().total;
    for (k, n) in [
        ("index_n_heads", 64),
        ("index_head_dim", 128),
        ("index_topk", 2048),
    ] {
        v.as_object_mut().unwrap().insert(k.into(), n.into());
    }
    let spec = parse_hf_config(&v.to_string()).unwrap();
    let ix = spec.mla.as_ref().unwrap().indexer.as_ref().unwrap();
    assert_eq!((ix.heads, ix.head_dim, ix.topk), (64, 128, 2048));
    assert_eq!(spec.param_count().total, base + 61 * INDEXER_PER_LAYER);
    // An indexer without its width is named.
    v.as_object_mut().unwrap().remove("index_head_dim");
    let e = parse_hf_config(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("index_head_dim"), "{e}");
}

#[test]
fn the_cache_holds_the_latent_and_the_indexer_key() {
    // 61 layers × (576-element latent × 2 B + 128 FP8 key + 4 B FP32 scale) = 61 × 1,284 B.
    let s = scenario("deepseek-v3.2-exp", 8192);
    let e = estimate(&s);
    assert_eq!(e.kv_cache_per_token.0, 61 * (576 * 2 + 132));
    let dense = estimate(&scenario("deepseek-v3.1", 8192));
    assert_eq!(dense.kv_cache_per_token.0, 61 * 576 * 2);
    let kv = |e: &headroom::core::estimate::Estimate| {
        e.components
            .iter()
            .filter(|c| c.kind == ComponentKind::KvCache)
            .map(|c| c.bytes.0)
            .sum::<u64>()
    };
    assert_eq!(kv(&e) - kv(&dense), 61 * 132 * 8192);
}

#[test]
fn sparse_attention_keeps_long_context_decode_fast() {
    // At 128K tokens the dense model reads every cached latent each step; V3.2 reads the
    // indexer keys of all and the latents of 2,048. At 2K both read the same latents.
    // Decode at depth: a 128K conversation near its end.
    let long = |id| {
        let s = Scenario {
            prompt_tokens: 120_000,
            ..scenario(id, 131_072)
        };
        fit_on(&s, "aws-p5e-48xlarge").decode_tokens_per_s
    };
    let short = |id| fit_on(&scenario(id, 2048), "aws-p5e-48xlarge").decode_tokens_per_s;
    let (d_long, s_long) = (long("deepseek-v3.1"), long("deepseek-v3.2-exp"));
    let (d_short, s_short) = (short("deepseek-v3.1"), short("deepseek-v3.2-exp"));
    assert!(d_long > 0.0 && s_long > d_long, "{d_long} vs {s_long}");
    // Short context: the indexer's extra weights and keys cost a little, never help.
    assert!(
        s_short <= d_short && s_short > 0.9 * d_short,
        "{d_short} vs {s_short}"
    );
    // The dense model slows with context; the sparse one far less.
    assert!(
        d_short / d_long > s_short / s_long,
        "{d_short}/{d_long} vs {s_short}/{s_long}"
    );
}
