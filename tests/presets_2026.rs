//! Model presets for the models people run at the end of 2026 (issue 32 item 3).
//!
//! Each test checks a preset against facts read off its config.json on Hugging Face (cited above
//! the test) and its KV cache per token at FP16 against a hand computation:
//! 2 (K, V) × attention layers × kv_heads × head_dim × 2 bytes; for MLA the cached latent,
//! (kv_lora_rank + qk_rope_head_dim) × layers × 2 bytes; for Qwen3-Next only the full-attention
//! layers. The total parameter counts against the published ones are checked for every preset by
//! `param_counts_match_published_totals` in tests/catalog.rs.

use headroom::core::catalog::ModelPreset;
use headroom::core::estimate::estimate;
use headroom::core::model::{ModelSpec, RecurrentKind};
use headroom::core::scenario::Scenario;
use headroom::io::catalog;

const NEW_IDS: [&str; 15] = [
    "qwen3-next-80b-a3b",
    "qwen3-coder-480b-a35b",
    "qwen3-coder-30b-a3b",
    "deepseek-v3.1",
    "kimi-k2",
    "kimi-k2-thinking",
    "glm-4.5",
    "glm-4.6",
    "llama-4-maverick",
    "mistral-small-3.2-24b",
    "ministral-3-3b",
    "ministral-3-8b",
    "ministral-3-14b",
    "phi-4-mini",
    "minimax-m2",
];

fn preset(id: &str) -> &'static ModelPreset {
    catalog::builtin()
        .models
        .iter()
        .find(|m| m.id == id)
        .unwrap_or_else(|| panic!("no preset {id}"))
}

fn spec(id: &str) -> &'static ModelSpec {
    &preset(id).spec
}

/// KV-cache bytes per token with the default scenario (F16 cache).
fn kv_per_token(id: &str) -> u64 {
    estimate(&Scenario {
        model: spec(id).clone(),
        context: 4096,
        batch: 1,
        ..Scenario::default()
    })
    .kv_cache_per_token
    .0
}

/// (routed experts, active experts) of a MoE preset.
fn moe(id: &str) -> (u64, u64) {
    let m = spec(id).moe.as_ref().expect("MoE");
    (m.experts, m.active_experts)
}

#[test]
fn new_presets_exist_with_sources_and_published_totals() {
    for id in NEW_IDS {
        let p = preset(id);
        assert!(
            p.source.starts_with("https://huggingface.co/") && p.source.ends_with("/config.json"),
            "{id}: source {}",
            p.source
        );
        assert!(p.published_params.is_some(), "{id}: no published_params");
        let notes = p.notes.as_deref().unwrap_or("");
        assert!(
            notes.starts_with("published_params: https://"),
            "{id}: notes must cite the published total"
        );
        let kebab = id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
        assert!(kebab, "{id} is not a kebab id");
    }
}

// https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json
#[test]
fn qwen3_next_80b_a3b() {
    let s = spec("qwen3-next-80b-a3b");
    assert_eq!(
        (s.layers, s.hidden, s.kv_heads, s.head_dim),
        (48, 2048, 2, 256)
    );
    assert_eq!(moe("qwen3-next-80b-a3b"), (512, 10));
    assert_eq!(s.max_context, 262_144);
    let r = s.recurrent.as_ref().expect("Gated DeltaNet layers");
    assert_eq!(r.kind, RecurrentKind::GatedDeltaNet);
    // full_attention_interval 4: layers 3, 7, …, 47.
    assert_eq!(
        r.attention_layers,
        (0..12).map(|k| 4 * k + 3).collect::<Vec<_>>()
    );
    assert_eq!((r.heads, r.head_dim, r.state, r.groups), (32, 128, 128, 16));
    assert_eq!(
        (s.attention_layer_count(), s.recurrent_layer_count()),
        (12, 36)
    );
    // 12 attention layers × 2 × 2 KV heads × 256 × 2 B = 24,576.
    assert_eq!(kv_per_token("qwen3-next-80b-a3b"), 24_576);
    // The count tests/hybrid.rs derives by hand for this shape.
    assert_eq!(s.param_count().total, 79_674_391_296);
}

// https://huggingface.co/Qwen/Qwen3-Coder-480B-A35B-Instruct/blob/main/config.json
#[test]
fn qwen3_coder_480b_a35b() {
    let s = spec("qwen3-coder-480b-a35b");
    assert_eq!((s.layers, s.hidden, s.heads, s.kv_heads), (62, 6144, 96, 8));
    assert_eq!(moe("qwen3-coder-480b-a35b"), (160, 8));
    assert_eq!(s.moe.as_ref().unwrap().expert_ffn, 2560);
    assert_eq!(s.max_context, 262_144);
    // 62 × 2 × 8 × 128 × 2 B = 253,952.
    assert_eq!(kv_per_token("qwen3-coder-480b-a35b"), 253_952);
}

// https://huggingface.co/Qwen/Qwen3-Coder-30B-A3B-Instruct/blob/main/config.json
#[test]
fn qwen3_coder_30b_a3b() {
    let s = spec("qwen3-coder-30b-a3b");
    assert_eq!((s.layers, s.hidden, s.kv_heads), (48, 2048, 4));
    assert_eq!(moe("qwen3-coder-30b-a3b"), (128, 8));
    assert_eq!(s.max_context, 262_144);
    // Same decoder as Qwen3-30B-A3B.
    assert_eq!(s.param_count(), spec("qwen3-30b-a3b").param_count());
    // 48 × 2 × 4 × 128 × 2 B = 98,304.
    assert_eq!(kv_per_token("qwen3-coder-30b-a3b"), 98_304);
}

// https://huggingface.co/deepseek-ai/DeepSeek-V3.1/blob/main/config.json
#[test]
fn deepseek_v3_1() {
    let s = spec("deepseek-v3.1");
    assert_eq!((s.layers, s.hidden, s.heads), (61, 7168, 128));
    assert_eq!(moe("deepseek-v3.1"), (256, 8));
    assert_eq!(s.max_context, 163_840);
    let mla = s.mla.as_ref().expect("MLA");
    assert_eq!((mla.kv_lora_rank, mla.qk_rope_head_dim), (512, 64));
    // Same architecture as DeepSeek-V3.
    assert_eq!(s.param_count(), spec("deepseek-v3").param_count());
    // MLA: (512 + 64) × 61 × 2 B = 70,272.
    assert_eq!(kv_per_token("deepseek-v3.1"), 70_272);
}

// https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json
// https://huggingface.co/moonshotai/Kimi-K2-Thinking/blob/main/config.json
#[test]
fn kimi_k2_and_k2_thinking() {
    for (id, ctx) in [("kimi-k2", 131_072), ("kimi-k2-thinking", 262_144)] {
        let s = spec(id);
        assert_eq!(
            (s.layers, s.hidden, s.heads, s.kv_heads),
            (61, 7168, 64, 64),
            "{id}"
        );
        assert_eq!(moe(id), (384, 8), "{id}");
        let m = s.moe.as_ref().unwrap();
        assert_eq!((m.shared_experts, m.first_dense_layers), (1, 1), "{id}");
        assert_eq!(s.vocab, 163_840, "{id}");
        assert_eq!(s.max_context, ctx, "{id}");
        // MLA: (512 + 64) × 61 × 2 B = 70,272.
        assert_eq!(kv_per_token(id), 70_272, "{id}");
    }
    assert_eq!(
        spec("kimi-k2").param_count(),
        spec("kimi-k2-thinking").param_count()
    );
}

// https://huggingface.co/zai-org/GLM-4.5/blob/main/config.json
// https://huggingface.co/zai-org/GLM-4.6/blob/main/config.json
#[test]
fn glm_4_5_and_4_6() {
    for (id, ctx) in [("glm-4.5", 131_072), ("glm-4.6", 202_752)] {
        let s = spec(id);
        assert_eq!(
            (s.layers, s.hidden, s.heads, s.kv_heads),
            (92, 5120, 96, 8),
            "{id}"
        );
        assert_eq!(moe(id), (160, 8), "{id}");
        assert_eq!(s.moe.as_ref().unwrap().first_dense_layers, 3, "{id}");
        assert!(s.qkv_bias && s.qk_norm, "{id}");
        assert_eq!(s.max_context, ctx, "{id}");
        // 92 × 2 × 8 × 128 × 2 B = 376,832.
        assert_eq!(kv_per_token(id), 376_832, "{id}");
    }
}

// https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E-Instruct/blob/main/config.json
#[test]
fn llama_4_maverick() {
    let s = spec("llama-4-maverick");
    assert_eq!((s.layers, s.hidden, s.heads, s.kv_heads), (48, 5120, 40, 8));
    assert_eq!(moe("llama-4-maverick"), (128, 1));
    // interleave_moe_layer_step 2: half the layers are MoE.
    assert_eq!(s.moe.as_ref().unwrap().sparse_step, 2);
    assert_eq!(s.max_context, 1_048_576);
    // Every layer caches K and V (chunked layers too): 48 × 2 × 8 × 128 × 2 B = 196,608.
    assert_eq!(kv_per_token("llama-4-maverick"), 196_608);
}

// https://huggingface.co/mistralai/Mistral-Small-3.2-24B-Instruct-2506/blob/main/config.json
#[test]
fn mistral_small_3_2() {
    let s = spec("mistral-small-3.2-24b");
    assert_eq!(
        (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim),
        (40, 5120, 32, 8, 128)
    );
    assert_eq!(s.intermediate, 32_768);
    assert!(s.moe.is_none());
    assert_eq!(s.max_context, 131_072);
    // Text: embedding + head 2 × 131,072 × 5120 = 1,342,177,280; per layer q 5120 × 4096 +
    // k, v 5120 × 1024 each + o 4096 × 5120 = 52,428,800, MLP 3 × 5120 × 32,768 = 503,316,480,
    // norms 10,240 → 555,755,520 × 40 = 22,230,220,800; final norm 5120 → 23,572,403,200.
    // + vision 438,958,080 (see the preset's notes) = 24,011,361,280.
    assert_eq!(s.param_count().total, 24_011_361_280);
    // 40 × 2 × 8 × 128 × 2 B = 163,840.
    assert_eq!(kv_per_token("mistral-small-3.2-24b"), 163_840);
}

// https://huggingface.co/microsoft/Phi-4-mini-instruct/blob/main/config.json
#[test]
fn phi_4_mini() {
    let s = spec("phi-4-mini");
    assert_eq!(
        (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim),
        (32, 3072, 24, 8, 128)
    );
    assert!(s.tied_embeddings);
    assert_eq!(s.max_context, 131_072);
    // Tied embedding 200,064 × 3072 = 614,596,608; per layer q 3072² = 9,437,184, k, v
    // 3072 × 1024 each = 6,291,456, o 9,437,184, MLP 3 × 3072 × 8192 = 75,497,472, norms 6144
    // → 100,669,440 × 32 = 3,221,422,080; final norm 3072 → 3,836,021,760.
    assert_eq!(s.param_count().total, 3_836_021_760);
    // 32 × 2 × 8 × 128 × 2 B = 131,072.
    assert_eq!(kv_per_token("phi-4-mini"), 131_072);
}

// https://huggingface.co/MiniMaxAI/MiniMax-M2/blob/main/config.json
#[test]
fn minimax_m2() {
    let s = spec("minimax-m2");
    assert_eq!(
        (s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim),
        (62, 3072, 48, 8, 128)
    );
    assert_eq!(moe("minimax-m2"), (256, 8));
    assert_eq!(s.max_context, 196_608);
    // Embedding + head 2 × 200,064 × 3072 = 1,229,193,216; per layer attention q 3072 × 6144 +
    // k, v 3072 × 1024 each + o 6144 × 3072 = 44,040,192, q/k norm 256, experts
    // 256 × 3 × 3072 × 1536 = 3,623,878,656, router 786,432 + bias 256, norms 6144
    // → 3,668,711,936 × 62 = 227,460,140,032; final norm 3072 → 228,689,336,320.
    assert_eq!(s.param_count().total, 228_689_336_320);
    // 62 × 2 × 8 × 128 × 2 B = 253,952.
    assert_eq!(kv_per_token("minimax-m2"), 253_952);
}

/// Qwen3.5 (hybrid Gated DeltaNet + gated attention, dense and MoE): the presets are their
/// config.json files (tests/fixtures/configs/qwen3_5/, SOURCES.md there), and the cache by hand.
///
/// 35B-A3B: 10 of 40 layers attend (layer_types: 3 × linear, 1 × full), 2 KV heads × 256 × 2
/// (K, V) × 2 B = 2,048 B per layer, 20,480 B per token; the 30 Gated DeltaNet layers keep
/// a conv state of (16 × 128 × 2 + 32 × 128) × (4 − 1) = 24,576 elements and a recurrent state of
/// 32 × 128 × 128 = 524,288 elements, × 30 layers × 4 B (F32) = 65,863,680 B per sequence.
/// 27B: 16 of 64 layers attend, 4 × 256 × 2 × 2 B = 4,096 B per layer, 65,536 B per token; the
/// 48 linear layers keep (16 × 128 × 2 + 48 × 128) × 3 = 30,720 and 48 × 128 × 128 = 786,432
/// elements, × 48 × 4 B = 156,893,184 B per sequence.
#[test]
fn qwen3_5_presets_are_their_configs() {
    use headroom::core::hf_config::parse_hf_config;
    let cases = [
        (
            "qwen3.5-35b-a3b",
            include_str!("fixtures/configs/qwen3_5/Qwen3.5-35B-A3B_config.json"),
            20_480_u64,
            65_863_680_u64,
            10_u64,
        ),
        (
            "qwen3.5-27b",
            include_str!("fixtures/configs/qwen3_5/Qwen3.5-27B_config.json"),
            65_536,
            156_893_184,
            16,
        ),
    ];
    for (id, text, kv, state, attn) in cases {
        let from_config = parse_hf_config(text).unwrap_or_else(|e| panic!("{id}: {e}"));
        let p = spec(id);
        assert_eq!(
            from_config.param_count(),
            p.param_count(),
            "{id}: preset and config differ"
        );
        assert_eq!(from_config.mtp_layers, 1, "{id}");
        assert_eq!(p.mtp_layers, 1, "{id}");
        let r = p.recurrent.as_ref().expect("hybrid");
        assert_eq!(r.kind, RecurrentKind::GatedDeltaNet);
        assert_eq!(r.attention_layers.len() as u64, attn, "{id}");
        assert_eq!(kv_per_token(id), kv, "{id}");
        assert_eq!(p.recurrent_state_bytes_per_sequence(), state, "{id}");
        assert_eq!(
            from_config.recurrent_state_bytes_per_sequence(),
            state,
            "{id}"
        );
    }
    // 35B-A3B by hand: embedding and head 2 × 248,320 × 2048 = 1,017,118,720 and the final
    // norm 2048; 10 attention layers of q (gated) 2048 × 8192 + k, v 2 × 2048 × 512 + o
    // 4096 × 2048 + q/k norms 512 = 27,263,488; 30 Gated DeltaNet layers of in_proj_qkvz
    // 2048 × 12,288 + in_proj_ba 2048 × 64 + conv 8192 × 4 + dt_bias, A_log 64 + norm 128 +
    // out_proj 4096 × 2048 = 33,718,464; 40 MoE blocks of 256 × 3 × 2048 × 512 + router
    // 256 × 2048 + shared 3 × 2048 × 512 + its gate 2048 = 808,978,432, with 2 norms of 2048:
    // 1,017,120,768 + 272,634,880 + 1,011,553,920 + 32,359,301,120 = 34,660,610,688, 1.0 %
    // under the published 35B (which counts the vision encoder). Active: 8 of 256 experts,
    // the head but not the input table: 2,946,431,616 ("A3B").
    let c = spec("qwen3.5-35b-a3b").param_count();
    assert_eq!(c.total, 34_660_610_688);
    assert_eq!(c.active, 2_946_431_616);
    assert_eq!(spec("qwen3.5-27b").param_count().total, 26_895_998_464);
}

/// Qwen3.5's MTP layer reads the model's own embedding and head (`mtp_use_dedicated_embeddings`
/// false): as a drafter (`--speculative mtp`) it adds only its block. 35B-A3B by hand: one
/// gated-attention layer 27,263,488 + one MoE block 808,978,432 + its 2 norms 4096 + eh_proj
/// 2 × 2048² = 8,388,608 + enorm and hnorm 4096 = 844,638,720 parameters, 1,689,277,440 B in
/// BF16 (with copies of the 248,320 × 2048 embedding and head it would be 1.89 GiB more).
#[test]
fn qwen3_5_mtp_drafter_shares_the_embedding_and_head() {
    use headroom::core::estimate::ComponentKind;
    use headroom::core::speculative::{SpecMethod, SpeculativeInputs};
    let p = spec("qwen3.5-35b-a3b");
    assert!(p.mtp_shares_embeddings);
    let parsed = headroom::core::hf_config::parse_hf_config(include_str!(
        "fixtures/configs/qwen3_5/Qwen3.5-35B-A3B_config.json"
    ))
    .unwrap();
    assert!(parsed.mtp_shares_embeddings);
    let e = estimate(&Scenario {
        model: p.clone(),
        speculative: Some(SpeculativeInputs {
            method: SpecMethod::Mtp,
            ..SpeculativeInputs::default()
        }),
        ..Scenario::default()
    });
    let draft: u64 = e
        .components
        .iter()
        .filter(|c| c.kind == ComponentKind::Weights && c.name.starts_with("Draft weights"))
        .map(|c| c.bytes.0)
        .sum();
    assert_eq!(draft, 1_689_277_440);
    // DeepSeek-V3's checkpoint stores copies, which the runtimes replace by the target's own
    // (tests/speculative.rs deepseek_v3_mtp_drafter_shares_the_targets_embedding_and_head).
    assert!(!spec("deepseek-v3").mtp_shares_embeddings);
}

// https://huggingface.co/mistralai/Ministral-3-3B-Instruct-2512/blob/main/config.json
// https://huggingface.co/mistralai/Ministral-3-8B-Instruct-2512/blob/main/config.json
// https://huggingface.co/mistralai/Ministral-3-14B-Instruct-2512/blob/main/config.json
// The text shapes as NVIDIA Megatron-Bridge's ministral3_provider.py reads them (3B, 8B, 14B)
// and transformers' Ministral3Config defaults (the 8B). By hand, per layer: q h×4096, k and v
// h×1024 each, o 4096×h, gated MLP 3×h×I, two norms h; plus the 131,072 × h embedding (and
// an untied head) and the final norm:
// - 3B (h 3072, I 9216, 26 layers, tied): 26 × 116,398,080 + 402,653,184 + 3,072 = 3,429,006,336
//   (model card: 3.4B language model);
// - 8B (h 4096, I 14336, 34 layers): 34 × 218,112,000 + 2 × 536,870,912 + 4,096 = 8,489,553,920
//   (model card: 8.4B);
// - 14B (h 5120, I 16384, 40 layers): 40 × 304,097,280 + 2 × 671,088,640 + 5,120
//   = 13,506,073,600 (model card: 13.5B).
#[test]
fn ministral_3_family() {
    for (id, layers, hidden, ffn, tied, total, kv) in [
        (
            "ministral-3-3b",
            26,
            3072,
            9216,
            true,
            3_429_006_336u64,
            106_496u64,
        ),
        (
            "ministral-3-8b",
            34,
            4096,
            14336,
            false,
            8_489_553_920,
            139_264,
        ),
        (
            "ministral-3-14b",
            40,
            5120,
            16384,
            false,
            13_506_073_600,
            163_840,
        ),
    ] {
        let s = spec(id);
        assert_eq!(
            (s.layers, s.hidden, s.intermediate, s.tied_embeddings),
            (layers, hidden, ffn, tied),
            "{id}"
        );
        assert_eq!(
            (s.heads, s.kv_heads, s.head_dim, s.vocab),
            (32, 8, 128, 131_072),
            "{id}"
        );
        assert!(s.moe.is_none() && s.mla.is_none(), "{id} is dense");
        assert_eq!(s.max_context, 262_144, "{id}");
        assert_eq!(s.param_count().total, total, "{id}");
        // layers × 2 × 8 KV heads × 128 × 2 B.
        assert_eq!(kv_per_token(id), kv, "{id}");
        // The Instruct checkpoints ship in FP8 (model cards).
        assert_eq!(
            preset(id).default_weights(),
            headroom::core::WeightPrecision::Fp8,
            "{id}"
        );
    }
}

// https://huggingface.co/mistralai/Mistral-Large-3-675B-Instruct-2512/blob/main/params.json
// (Mistral's own format; vLLM maps it onto DeepseekV3ForCausalLM). By hand:
// - attention (MLA) per layer: q_a 7168×1536 = 11,010,048, q_b 1536 × 128·192 = 37,748,736,
//   kv_a 7168 × (512 + 64) = 4,128,768, kv_b 512 × 128·256 = 16,777,216, o 16,384 × 7168
//   = 117,440,512, q_a/kv_a norms 2,048: 187,107,328; plus the layer's two norms 14,336;
// - 3 dense layers with a gated FFN of 16,384: 3 × 7168 × 16,384 = 352,321,536 each;
// - 58 MoE layers: 128 routed experts × 3 × 7168 × 4096 (88,080,384 each) = 11,274,289,152,
//   router 7168 × 128 = 917,504, one shared expert 88,080,384;
// - embedding and untied head 2 × 131,072 × 7168 = 1,879,048,192, final norm 7,168.
// Total 3 × 539,443,200 + 58 × 11,550,408,704 + 1,879,055,360 = 673,421,089,792 (model card:
// 673B language model); active with 4 experts ≈ 39.0B (model card: 39B).
#[test]
fn mistral_large_3() {
    let p = preset("mistral-large-3-675b");
    assert!(p.source.ends_with("/params.json"), "{}", p.source);
    assert!(
        p.notes
            .as_deref()
            .unwrap()
            .starts_with("published_params: https://")
    );
    let s = &p.spec;
    assert_eq!((s.layers, s.hidden, s.heads), (61, 7168, 128));
    let m = s.moe.as_ref().expect("MoE");
    assert_eq!(
        (
            m.experts,
            m.active_experts,
            m.expert_ffn,
            m.shared_experts,
            m.first_dense_layers
        ),
        (128, 4, 4096, 1, 3)
    );
    assert_eq!(s.mtp_layers, 0);
    let c = s.param_count();
    assert_eq!(c.total, 673_421_089_792);
    let active_err = c.active as f64 / 39.0e9 - 1.0;
    assert!(
        active_err.abs() < 0.02,
        "active {} ({active_err:+.3})",
        c.active
    );
    // MLA: (512 + 64) × 61 × 2 B = 70,272, as DeepSeek-V3.
    assert_eq!(kv_per_token("mistral-large-3-675b"), 70_272);
    assert_eq!(
        kv_per_token("mistral-large-3-675b"),
        kv_per_token("deepseek-v3")
    );
    // FP8 with 128×128 block scales in the Instruct repo.
    assert_eq!(
        p.default_weights(),
        headroom::core::WeightPrecision::Fp8Block
    );
    // The model card: "FP8 on a single node of B200s or H200s" — the FP8 weights fit in 8 ×
    // 141 GB, not in 8 × 80 GB.
    let w = estimate(&Scenario {
        model: s.clone(),
        weights: p.default_weights(),
        context: 4096,
        ..Scenario::default()
    })
    .kind_total(headroom::core::estimate::ComponentKind::Weights)
    .0 as f64;
    assert!(w > 8.0 * 80e9 && w < 8.0 * 141e9, "FP8 weights {w}");
}
