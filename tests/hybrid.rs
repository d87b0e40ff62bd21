//! Hybrid linear-attention and state-space models from config.json (issue 32, first slice):
//! Qwen3-Next's Gated DeltaNet layers and Mamba-2.
//!
//! Fixtures: tests/fixtures/configs/hybrid/ (see SOURCES.md there: the transformers
//! configuration classes' defaults, which describe Qwen3-Next-80B-A3B and the
//! Mamba-Codestral-7B shape; no Hub config.json could be fetched). Every expected number below is
//! computed by hand in the comment above it from the config numbers.

use headroom::core::estimate::{ComponentKind, Estimate, estimate};
use headroom::core::hf_config::parse_hf_config;
use headroom::core::model::{ModelSpec, RecurrentKind};
use headroom::core::scenario::Scenario;

const QWEN3_NEXT: &str =
    include_str!("fixtures/configs/hybrid/transformers_Qwen3NextConfig_defaults.json");
const MAMBA2: &str =
    include_str!("fixtures/configs/hybrid/transformers_Mamba2Config_defaults.json");

fn qwen3_next() -> ModelSpec {
    parse_hf_config(QWEN3_NEXT).expect("Qwen3-Next parses")
}

fn mamba2() -> ModelSpec {
    parse_hf_config(MAMBA2).expect("Mamba-2 parses")
}

const JAMBA: &str = include_str!("fixtures/configs/hybrid/transformers_JambaConfig_defaults.json");

fn jamba() -> ModelSpec {
    parse_hf_config(JAMBA).expect("Jamba parses")
}

/// BF16 weights, F16 KV, contiguous cache (no padding), `batch` sequences of `context` tokens.
fn run(model: ModelSpec, context: u64, batch: u64) -> Estimate {
    estimate(&Scenario {
        model,
        context,
        batch,
        ..Scenario::default()
    })
}

fn kv(e: &Estimate) -> u64 {
    e.kind_total(ComponentKind::KvCache).0
}

#[test]
fn qwen3_next_layers_are_three_linear_then_one_full_attention() {
    let s = qwen3_next();
    assert_eq!(s.arch, "qwen3_next");
    let r = s.recurrent.as_ref().expect("Gated DeltaNet layers");
    assert_eq!(r.kind, RecurrentKind::GatedDeltaNet);
    // full_attention_interval 4: layers 3, 7, …, 47 attend fully (Qwen3NextConfig.__init__).
    assert_eq!(
        r.attention_layers,
        (0..12).map(|k| 4 * k + 3).collect::<Vec<_>>()
    );
    assert_eq!(
        (s.attention_layer_count(), s.recurrent_layer_count()),
        (12, 36)
    );
    assert!(s.is_recurrent_layer(0) && !s.is_recurrent_layer(3));
    assert!(s.attn_output_gate && s.qk_norm);
    // Every layer is MoE (decoder_sparse_step 1), so two groups: attention + MoE, linear + MoE.
    let g = s.layer_groups();
    assert_eq!(g.len(), 2);
    assert_eq!(g.iter().map(|g| g.count).sum::<u64>(), 48);
    // An explicit layer_types gives the same layers.
    let mut v: serde_json::Value = serde_json::from_str(QWEN3_NEXT).unwrap();
    let types: Vec<&str> = (0..48)
        .map(|i| {
            if (i + 1) % 4 == 0 {
                "full_attention"
            } else {
                "linear_attention"
            }
        })
        .collect();
    v["layer_types"] = serde_json::json!(types);
    v.as_object_mut().unwrap().remove("full_attention_interval");
    let t = parse_hf_config(&v.to_string()).unwrap();
    assert_eq!(t.recurrent, s.recurrent);
}

#[test]
fn qwen3_next_parameters_match_80b_total() {
    // h = 2048, V = 151,936 (untied), 48 layers, 512 experts of 512, top-10, one shared expert.
    // Full attention (12 layers): q_proj 2048 × (16·256·2) = 16,777,216 (query + output gate),
    //   k, v 2048 × 512 = 1,048,576 each, o 4096 × 2048 = 8,388,608, q/k norm 512
    //   = 27,263,488.
    // Gated DeltaNet (36 layers): key_dim 16·128 = 2048, value_dim 32·128 = 4096;
    //   in_proj_qkvz 2048 × (2·2048 + 2·4096) = 25,165,824, in_proj_ba 2048 × 64 = 131,072,
    //   conv1d 8192 × 4 = 32,768, dt_bias + A_log 64, norm 128, out_proj 4096 × 2048 = 8,388,608
    //   = 33,718,464.
    // MoE (48 layers): experts 512 × 3 × 2048 × 512 = 1,610,612,736, router 2048 × 512 =
    //   1,048,576, shared expert 3 × 2048 × 512 = 3,145,728, shared gate 2048, norms 2 × 2048
    //   = 1,614,813,184.
    // Outside: embedding + head 2 × 151,936 × 2048 = 622,329,856, final norm 2048.
    // Total: 12·27,263,488 + 36·33,718,464 + 48·1,614,813,184 + 622,331,904 = 79,674,391,296.
    let p = qwen3_next().param_count();
    assert_eq!(p.total, 79_674_391_296);
    // Published "80B total parameters" (transformers docs/qwen3_next.md): within 1 %.
    assert!((p.total as f64 / 80e9 - 1.0).abs() < 0.01);
    // Active: experts 10 of 512 (31,457,280 per layer instead of 1,610,612,736), the head in
    // full, one embedding row: 12·27,263,488 + 36·33,718,464 + 48·(31,457,280 + 1,048,576 +
    // 3,145,728 + 2048 + 4096) + 2048 + 2048 + 311,164,928 = 3,563,766,528 ("A3B"; Qwen also
    // counts the whole input table, +311,162,880 = 3,874,929,408).
    assert_eq!(p.active, 3_563_766_528);
}

#[test]
fn mamba2_parameters_match_codestral_exactly() {
    // h = 4096, d_inner = 2 × 4096 = 8192 = 128 heads × 64, groups 8, state 128, kernel 4.
    // conv_dim = 8192 + 2·8·128 = 10,240. Per layer: in_proj 4096 × (8192 + 10,240 + 128)
    //   = 76,021,760, conv1d 10,240 × 4 + 10,240 bias = 51,200, dt_bias + A_log + D 384,
    //   gated norm 8192, out_proj 8192 × 4096 = 33,554,432, block norm 4096 = 109,640,064.
    // 64 layers: 7,016,964,096; embedding + untied head 2 × 32,768 × 4096 = 268,435,456;
    // norm_f 4096. Total 7,285,403,648 = Mistral's "7,285,403,648 parameters".
    let s = mamba2();
    assert_eq!(s.arch, "mamba2");
    assert_eq!(s.attention_layer_count(), 0);
    assert_eq!(s.param_count().total, 7_285_403_648);
    assert_eq!(s.param_count().active, 7_285_403_648);
}

#[test]
fn qwen3_next_kv_only_for_attention_layers_plus_fixed_state() {
    // KV per token (F16): 12 attention layers × 2 (K, V) × 2 KV heads × 256 × 2 B = 24,576 B.
    // State per linear layer and sequence (F32): conv (4 − 1) × 8192 = 24,576 elements,
    // delta-rule state 32 heads × 128 × 128 = 524,288; (24,576 + 524,288) × 4 = 2,195,456 B;
    // × 36 layers = 79,036,416 B per sequence.
    let s = qwen3_next();
    assert_eq!(s.recurrent_state_bytes_per_sequence(), 79_036_416);
    let short = run(s.clone(), 8192, 1);
    let long = run(s.clone(), 131_072, 1);
    assert_eq!(short.kv_cache_per_token.0, 24_576);
    // 8K: 24,576 × 8192 = 201,326,592 + 79,036,416 = 280,363,008.
    assert_eq!(kv(&short), 280_363_008);
    // 128K: 24,576 × 131,072 = 3,221,225,472 + 79,036,416 = 3,300,261,888.
    assert_eq!(kv(&long), 3_300_261_888);
    // The difference is the attention layers' KV alone: 24,576 × (131,072 − 8192).
    assert_eq!(kv(&long) - kv(&short), 24_576 * (131_072 - 8192));
    // Four sequences: four states and four caches.
    assert_eq!(kv(&run(s, 8192, 4)), 4 * 280_363_008);
    let f = &short
        .components
        .iter()
        .find(|c| c.kind == ComponentKind::KvCache)
        .unwrap()
        .formula;
    assert!(
        f.contains("12 attention layers") && f.contains("36 recurrent layers"),
        "{f}"
    );
    assert!(f.contains("79,036,416 B/sequence"), "{f}");
}

#[test]
fn mamba2_state_does_not_grow_with_context() {
    // Per layer and sequence: conv 3 × 10,240 = 30,720, SSM 128 heads × 64 × 128 = 1,048,576;
    // (30,720 + 1,048,576) × 4 B = 4,317,184 B; × 64 layers = 276,299,776 B. No KV at all.
    let s = mamba2();
    assert_eq!(s.recurrent_state_bytes_per_sequence(), 276_299_776);
    for ctx in [1024, 8192, 131_072, 1_000_000] {
        let e = run(s.clone(), ctx, 1);
        assert_eq!(e.kv_cache_per_token.0, 0);
        assert_eq!(kv(&e), 276_299_776, "context {ctx}");
    }
    assert_eq!(kv(&run(s, 8192, 8)), 8 * 276_299_776);
}

#[test]
fn a_dense_model_is_unchanged() {
    // Llama 3 8B (the default): every layer attends, no state, and the spec serialises as
    // before (no new keys), so saved scenarios and exports stay byte-identical.
    let s = ModelSpec::default();
    assert_eq!(s.attention_layer_count(), 32);
    assert_eq!(s.recurrent_state_bytes_per_sequence(), 0);
    // 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B/token × 8192 tokens.
    assert_eq!(kv(&run(s.clone(), 8192, 1)), 131_072 * 8192);
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("recurrent") && !json.contains("attn_output_gate"));
}

#[test]
fn bad_hybrid_keys_are_refused_by_name() {
    let mut v: serde_json::Value = serde_json::from_str(QWEN3_NEXT).unwrap();
    v["linear_num_key_heads"] = serde_json::json!(5);
    let e = parse_hf_config(&v.to_string()).unwrap_err().to_string();
    assert!(e.contains("linear_num_key_heads"), "{e}");
    let mut m: serde_json::Value = serde_json::from_str(MAMBA2).unwrap();
    m["num_heads"] = serde_json::json!(100);
    let e = parse_hf_config(&m.to_string()).unwrap_err().to_string();
    assert!(e.contains("num_heads"), "{e}");
}

/// Decode tok/s of `model` on an H100 machine at `depth` tokens of context.
fn decode_at(model: ModelSpec, depth: u64) -> f64 {
    use headroom::core::estimate::estimate_with;
    use headroom::core::speed::{SpeedConstants, SpeedQuery, placement_speed};
    let c = headroom::io::catalog::builtin();
    let m = c
        .machines
        .iter()
        .find(|m| {
            m.gpu
                .as_deref()
                .is_some_and(|g| g.to_ascii_lowercase().contains("h100"))
        })
        .expect("an H100 machine in the catalog");
    let acc = m.gpu.as_deref().and_then(|g| c.accelerator(g));
    let s = Scenario {
        model,
        context: 131_072,
        gpus: m.gpu_count.max(1) as u64,
        ..Scenario::default()
    };
    let est = estimate_with(&s, false);
    let k = SpeedConstants::default();
    let mut q = SpeedQuery::on_machine(&s, &est, m, acc, &k);
    q.depth = depth;
    placement_speed(&q, &k).decode_tokens_per_s
}

#[test]
fn a_state_space_model_decodes_as_fast_deep_as_shallow() {
    // Mamba-2 reads its 276 MB state per step whatever the depth: the same tok/s at 1K and 128K.
    let (shallow, deep) = (decode_at(mamba2(), 1024), decode_at(mamba2(), 131_072));
    assert!(
        shallow > 0.0 && (deep / shallow - 1.0).abs() < 1e-9,
        "{shallow} vs {deep}"
    );
    // Qwen3-Next slows with depth, but only through its 12 attention layers' KV.
    let (q1, q128) = (
        decode_at(qwen3_next(), 1024),
        decode_at(qwen3_next(), 131_072),
    );
    assert!(q128 < q1, "{q1} vs {q128}");
}

#[test]
fn jamba_parameters_match_52b_total_12b_active() {
    // h = 4096, 32 layers: attention at i % 8 == 4 (4, 12, 20, 28), MoE at i % 2 == 1 (16).
    // Mamba-1 mixer (28 layers), d_inner 8192, N 16, R 256, K 4: in_proj 4096 × 16,384 =
    //   67,108,864, conv1d 8192 × 4 + 8192 = 40,960, x_proj 8192 × (256 + 32) = 2,359,296,
    //   dt_proj 256 × 8192 + 8192 = 2,105,344, A_log 8192 × 16 = 131,072, D 8192, out_proj
    //   8192 × 4096 = 33,554,432, dt/B/C norms 256 + 16 + 16 = 288 → 105,308,448.
    // Attention (4 layers): q, o 4096 × 4096 = 16,777,216 each, k, v 4096 × 1024 each → 41,943,040.
    // MLP 3 × 4096 × 14,336 = 176,160,768; MoE 16 × that + router 4096 × 16 = 2,818,637,824.
    // Norms 2 × 4096 per layer. Attention layers are all even, so dense.
    // 4 × (41,943,040 + 176,160,768 + 8192) = 872,448,000
    // 12 × (105,308,448 + 176,160,768 + 8192) = 3,377,728,896   (Mamba, dense)
    // 16 × (105,308,448 + 2,818,637,824 + 8192) = 46,783,271,424 (Mamba, MoE)
    // + embedding and head 2 × 65,536 × 4096 + final norm 4096 = 536,875,008
    // = 51,570,323,328: the paper's "52B total" (within 1 %).
    let s = jamba();
    assert_eq!(s.arch, "jamba");
    let r = s.recurrent.as_ref().unwrap();
    assert_eq!(r.kind, RecurrentKind::Mamba1);
    assert_eq!(r.attention_layers, vec![4, 12, 20, 28]);
    assert_eq!(s.moe_layer_count(), 16);
    assert_eq!(s.layer_groups().len(), 3);
    let p = s.param_count();
    assert_eq!(p.total, 51_570_323_328);
    assert!((p.total as f64 / 52e9 - 1.0).abs() < 0.01);
    // Active: top-2 of 16 → 16 × (105,308,448 + 2 × 176,160,768 + 65,536 + 8192) =
    // 7,323,259,392; + 872,448,000 + 3,377,728,896 + one embedding row, final norm, head
    // (4096 + 4096 + 268,435,456) = 11,841,879,936: "12B active".
    assert_eq!(p.active, 11_841_879_936);
}

#[test]
fn jamba_kv_is_4_gib_at_256k_plus_its_mamba_state() {
    // KV per token: 4 attention layers × 2 × 8 KV heads × 128 × 2 B = 16,384 B; at 262,144
    // tokens 4,294,967,296 B = 4 GiB (the paper's Table 1: "KV cache (256K context, 16bit)
    // 4GB" for Jamba, 32GB for Mixtral).
    // Mamba-1 state per layer: conv 3 × 8192 = 24,576, SSM 16 × 8192 = 131,072;
    // (24,576 + 131,072) × 4 B = 622,592 B; × 28 layers = 17,432,576 B per sequence.
    let s = jamba();
    assert_eq!(s.recurrent_state_bytes_per_sequence(), 17_432_576);
    let e = run(s, 262_144, 1);
    assert_eq!(e.kv_cache_per_token.0, 16_384);
    assert_eq!(kv(&e), 4_294_967_296 + 17_432_576);
}
