//! Mixture-of-experts models (issue 13): MXFP4 and FP8 block-scaled weights, the presets'
//! publisher precisions and expert shapes, and llama.cpp's expert offload (`--n-cpu-moe`).
//! Every number is worked out by hand in the comments.

use headroom::core::WeightPrecision;
use headroom::core::estimate::{estimate, routed_experts};
use headroom::core::model::ModelSpec;
use headroom::core::scenario::Scenario;
use headroom::io::catalog::builtin;

fn preset(id: &str) -> ModelSpec {
    builtin()
        .model(id)
        .unwrap_or_else(|| panic!("preset {id}"))
        .spec
        .clone()
}

/// gpt-oss-120b's routed experts per layer, from config.json (hidden 2880, intermediate 2880,
/// 128 experts, 4 per token, biases on the experts):
///   gate_up: 2 × 2880 × 2880 × 128 = 2,123,366,400 weights in rows of 2880 = 90 MXFP4 blocks of
///            17 bytes = 1530 bytes a row; 737,280 rows → 1,128,038,400 bytes;
///   down:    2880 × 2880 × 128 = 1,061,683,200 weights, 368,640 rows of 1530 → 564,019,200;
///   biases:  (2 × 2880 + 2880) × 128 = 1,105,920 in BF16 → 2,211,840 bytes.
/// One layer: 1,694,269,440 bytes; per token 4 of 128 experts: 1,694,269,440 × 4/128 = 52,945,920.
const GPT_OSS_LAYER_EXPERTS: u64 = 1_128_038_400 + 564_019_200 + 2_211_840;

#[test]
fn gpt_oss_120b_in_mxfp4_is_65_2_gb_as_published() {
    let spec = preset("gpt-oss-120b");
    assert_eq!(
        builtin().model("gpt-oss-120b").unwrap().default_weights(),
        WeightPrecision::Mxfp4
    );
    let inv = routed_experts(&spec, WeightPrecision::Mxfp4);
    assert_eq!(inv.len(), 36);
    assert!(inv.iter().all(|r| r.bytes == GPT_OSS_LAYER_EXPERTS));
    assert_eq!(inv[0].active_bytes, GPT_OSS_LAYER_EXPERTS / 32);
    // Everything else in BF16: 116,829,156,672 parameters − 36 × 3,186,155,520 expert elements
    // = 2,127,557,952 × 2 B = 4,255,115,904 bytes. Total 36 × 1,694,269,440 + 4,255,115,904
    // = 65,248,815,744 bytes = 60.77 GiB (the openai/gpt-oss-120b safetensors: 65.2 GB).
    let e = estimate(&Scenario {
        model: spec,
        weights: WeightPrecision::Mxfp4,
        ..Scenario::default()
    });
    let w = e.kind_total(headroom::core::estimate::ComponentKind::Weights);
    assert_eq!(w.0, 36 * GPT_OSS_LAYER_EXPERTS + 4_255_115_904);
}

#[test]
fn mxfp4_on_a_dense_model_quantises_its_linear_layers() {
    // Llama-3-8B: 32 layers × 218,112,000 − norms 32 × 8192 = 6,979,321,856 matrix weights in
    // MXFP4 (rows of 4096 or 14336, whole blocks of 32: × 17/32) = 3,707,764,736 bytes; the
    // embedding, head and norms (2 × 525,336,576 + 32 × 8192 + 4096) in BF16 = 2,101,878,784.
    let e = estimate(&Scenario {
        model: ModelSpec::default(),
        weights: WeightPrecision::Mxfp4,
        ..Scenario::default()
    });
    let w = e.kind_total(headroom::core::estimate::ComponentKind::Weights);
    assert_eq!(w.0, 3_707_764_736 + 2_101_878_784);
    assert!(routed_experts(&ModelSpec::default(), WeightPrecision::Mxfp4).is_empty());
}

#[test]
fn deepseek_v3_ships_fp8_with_128_block_scales() {
    let p = builtin().model("deepseek-v3").unwrap();
    assert_eq!(p.default_weights(), WeightPrecision::Fp8Block);
    // 8 + 32 / (128 × 128) bits on the decoder's linear layers.
    assert!((WeightPrecision::Fp8Block.bits_per_weight() - 8.001953125).abs() < 1e-12);
    // Other presets ship BF16.
    assert_eq!(
        builtin().model("qwen3-30b-a3b").unwrap().default_weights(),
        WeightPrecision::Bf16
    );
    assert_eq!(
        WeightPrecision::from_cli("mxfp4"),
        Some(WeightPrecision::Mxfp4)
    );
    assert_eq!(
        WeightPrecision::from_cli("fp8-block"),
        Some(WeightPrecision::Fp8Block)
    );
}

#[test]
fn every_moe_preset_carries_its_expert_shapes() {
    for id in [
        "gpt-oss-20b",
        "gpt-oss-120b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "mixtral-8x7b",
        "mixtral-8x22b",
        "deepseek-v3",
        "deepseek-r1",
        "grok-1",
        "glm-4.5-air",
        "llama-4-scout",
    ] {
        let s = preset(id);
        let m = s.moe.as_ref().unwrap_or_else(|| panic!("{id}: no MoE"));
        assert!(
            m.experts > 1 && m.active_experts >= 1 && m.expert_ffn > 0,
            "{id}"
        );
        assert!(s.moe_layer_count() > 0, "{id}");
    }
    // GLM-4.5-Air (zai-org/GLM-4.5-Air config.json): layer 0 dense, 45 MoE layers of 128 experts
    // of width 1408, 8 active, one shared expert.
    let glm = preset("glm-4.5-air");
    assert_eq!(glm.moe_layer_count(), 45);
    assert!(!glm.is_moe_layer(0) && glm.is_moe_layer(1));
    // Llama 4 Scout (meta-llama/Llama-4-Scout-17B-16E config.json): every layer MoE, 16 experts,
    // top-1 plus a shared expert. Active per token: attention 2 × 5120 × (5120 + 1024) = 62.9M,
    // router 5120 × 16, one routed + one shared expert 2 × 3 × 5120 × 8192 = 251.7M, norms 10240
    // per layer → 48 × 314,664,960 = 15.10B; + head 202048 × 5120 = 1.03B + one embedding row
    // and the final norm = 16.14B ("17B active" counts the whole embedding: + 1.03B).
    let scout = preset("llama-4-scout");
    assert_eq!(scout.moe_layer_count(), 48);
    let a = scout.param_count().active;
    assert_eq!(a, 48 * 314_664_960 + 202_048 * 5120 + 2 * 5120);
}
