//! Parameter counts against published checkpoints, shapes and the generic shape.

use super::*;

/// Mistral-7B-v0.1 (mistralai/Mistral-7B-v0.1 config.json).
fn mistral_7b() -> ModelSpec {
    ModelSpec {
        name: "Mistral 7B v0.1".into(),
        arch: "mistral".into(),
        vocab: 32000,
        max_context: 32768,
        sliding: Some(SlidingWindow {
            window: 4096,
            local_layers: 32,
            period: 0,
        }),
        ..ModelSpec::default()
    }
}

/// Mixtral-8x7B-v0.1 (mistralai/Mixtral-8x7B-v0.1 config.json).
fn mixtral() -> ModelSpec {
    ModelSpec {
        arch: "mixtral".into(),
        vocab: 32000,
        moe: Some(MoeSpec {
            experts: 8,
            active_experts: 2,
            expert_ffn: 14336,
            ..MoeSpec::default()
        }),
        ..ModelSpec::default()
    }
}

/// DeepSeek-V3 (deepseek-ai/DeepSeek-V3 config.json).
fn deepseek_v3() -> ModelSpec {
    ModelSpec {
        arch: "deepseek_v3".into(),
        layers: 61,
        hidden: 7168,
        heads: 128,
        kv_heads: 128,
        head_dim: 192,
        intermediate: 18432,
        vocab: 129280,
        moe: Some(MoeSpec {
            experts: 256,
            active_experts: 8,
            expert_ffn: 2048,
            shared_experts: 1,
            first_dense_layers: 3,
            router_bias: true,
            ..MoeSpec::default()
        }),
        mla: Some(MlaSpec {
            indexer: None,
            kv_lora_rank: 512,
            q_lora_rank: 1536,
            qk_rope_head_dim: 64,
            qk_nope_head_dim: 128,
            v_head_dim: 128,
        }),
        mtp_layers: 1,
        ..ModelSpec::default()
    }
}

#[test]
fn llama3_8b_exact() {
    // meta-llama/Meta-Llama-3-8B: model.safetensors.index.json total_size 16,060,522,496 bytes
    // of BF16 = 8,030,261,248 parameters.
    let s = ModelSpec::default();
    assert_eq!(s.param_count().total, 8_030_261_248);
    // Per layer: 4096·(4096 + 2·1024 + 4096) + 3·4096·14336 + 2·4096 = 218,112,000.
    assert_eq!(s.layer_params(0).total, 218_112_000);
    // A dense model's active count is its total; per token it multiplies with one
    // embedding row, not the 128256 × 4096 table.
    assert_eq!(s.param_count().active, 8_030_261_248);
    assert_eq!(
        s.per_token_params().active,
        8_030_261_248 - 128_256 * 4096 + 4096
    );
}

#[test]
fn mistral_7b_v01_exact_with_a_window_on_every_layer() {
    // mistralai/Mistral-7B-v0.1: model.safetensors.index.json total_size 14,483,464,192 bytes / 2.
    let s = mistral_7b();
    assert_eq!(s.param_count().total, 7_241_732_096);
    assert_eq!(s.local_layers(), (32, 4096));
    assert!((0..32).all(|i| s.is_local_layer(i)));
    assert!(!s.is_local_layer(32));
}

#[test]
fn mixtral_total_and_active() {
    // mistralai/Mixtral-8x7B-v0.1: total_size 93,405,585,408 bytes / 2 = 46,702,792,704.
    let s = mixtral();
    let p = s.param_count();
    assert_eq!(p.total, 46_702_792_704);
    // Mistral's "12.9B active" counts the whole input embedding; we count one row of it.
    assert_eq!(p.active, 12_748_857_344);
    let with_table = p.active + 32000 * 4096 - 4096;
    assert!(
        (with_table as f64 / 12.9e9 - 1.0).abs() < 0.005,
        "{with_table}"
    );
}

#[test]
fn deepseek_v3_main_model_is_671b_and_36_6b_active() {
    // DeepSeek-V3 README_WEIGHTS.md: main model 671B total, 36.6B activated (incl. the 0.9B
    // output head); the MTP module is NOT part of it (mtp_layers is recorded, not counted).
    let s = deepseek_v3();
    let p = s.param_count();
    assert_eq!(p.total, 671_026_419_200);
    assert!(
        (p.active as f64 / 36.6e9 - 1.0).abs() < 0.005,
        "{}",
        p.active
    );
    assert_eq!(
        s.layer_groups(),
        vec![
            LayerGroup {
                first: 0,
                count: 3,
                moe: false,
                recurrent: false,
                mlp_only: false
            },
            LayerGroup {
                first: 3,
                count: 58,
                moe: true,
                recurrent: false,
                mlp_only: false
            },
        ]
    );
    // MLA caches 512 + 64 elements per token per layer.
    assert_eq!(s.kv_elements_per_token_layer(), (576, 0));
}

#[test]
fn moe_layer_count_matches_the_per_layer_rule() {
    for layers in [1u64, 2, 7, 24, 48, 61] {
        for first in [0u64, 1, 3] {
            for step in [0u64, 1, 2, 3] {
                for dense in [vec![], vec![0, 5], vec![23, 23, 47, 100]] {
                    let s = ModelSpec {
                        layers,
                        moe: Some(MoeSpec {
                            experts: 4,
                            active_experts: 2,
                            expert_ffn: 64,
                            first_dense_layers: first,
                            sparse_step: step,
                            dense_layers: dense.clone(),
                            ..MoeSpec::default()
                        }),
                        ..ModelSpec::default()
                    };
                    let brute = (0..layers).filter(|&i| s.is_moe_layer(i)).count() as u64;
                    assert_eq!(
                        s.moe_layer_count(),
                        brute,
                        "{layers} {first} {step} {dense:?}"
                    );
                    let groups = s.layer_groups();
                    assert_eq!(groups.iter().map(|g| g.count).sum::<u64>(), layers);
                    for g in &groups {
                        assert_eq!(s.is_moe_layer(g.first), g.moe);
                    }
                    // The grouped sum equals the layer-by-layer sum.
                    let by_layer: u64 = (0..layers).map(|i| s.layer_params(i).total).sum();
                    let outer: u64 = s.outer_tensors().iter().map(|t| t.elements).sum();
                    assert_eq!(s.param_count().total, by_layer + outer);
                }
            }
        }
    }
}

#[test]
fn qwen2_moe_sparse_step_and_mlp_only_layers() {
    let s = ModelSpec {
        layers: 8,
        moe: Some(MoeSpec {
            experts: 4,
            sparse_step: 2,
            dense_layers: vec![3],
            ..MoeSpec::default()
        }),
        ..ModelSpec::default()
    };
    let moe: Vec<u64> = (0..8).filter(|&i| s.is_moe_layer(i)).collect();
    assert_eq!(moe, vec![1, 5, 7]);
    assert_eq!(s.moe_layer_count(), 3);
}

#[test]
fn interleaved_windows_follow_the_period() {
    // Gemma 3 4B: 34 layers, global every 6th (layers 5, 11, …, 29).
    let s = ModelSpec {
        layers: 34,
        sliding: Some(SlidingWindow {
            window: 1024,
            local_layers: 0,
            period: 6,
        }),
        ..ModelSpec::default()
    };
    assert_eq!(s.local_layers(), (29, 1024));
    let global: Vec<u64> = (0..34).filter(|&i| !s.is_local_layer(i)).collect();
    assert_eq!(global, vec![5, 11, 17, 23, 29]);
    // Qwen2 with use_sliding_window: the last layers.
    let q = ModelSpec {
        layers: 4,
        sliding: Some(SlidingWindow {
            window: 64,
            local_layers: 1,
            period: 0,
        }),
        ..ModelSpec::default()
    };
    assert_eq!(
        (0..4).map(|i| q.is_local_layer(i)).collect::<Vec<_>>(),
        vec![false, false, false, true]
    );
    assert_eq!(ModelSpec::default().local_layers(), (0, 0));
}

#[test]
fn tied_embedding_is_read_in_full() {
    // Qwen2.5-0.5B ties its 151936 × 896 embedding: total 494,032,768 (Qwen model card "0.49B";
    // transformers num_parameters() prints 494032768).
    let s = ModelSpec {
        layers: 24,
        hidden: 896,
        heads: 14,
        kv_heads: 2,
        head_dim: 64,
        intermediate: 4864,
        vocab: 151936,
        tied_embeddings: true,
        qkv_bias: true,
        ..ModelSpec::default()
    };
    let p = s.param_count();
    assert_eq!(p.total, 494_032_768);
    assert_eq!(p.active, p.total);
    assert_eq!(s.outer_tensors().len(), 2);
}

#[test]
fn vision_tower_is_stored_not_read() {
    let s = ModelSpec {
        vision_params: 1000,
        ..ModelSpec::default()
    };
    let base = ModelSpec::default().param_count();
    assert_eq!(s.param_count().total, base.total + 1000);
    assert_eq!(
        s.per_token_params().active,
        ModelSpec::default().per_token_params().active
    );
}

#[test]
fn absurd_shapes_saturate_instead_of_panicking() {
    let s = ModelSpec {
        layers: u64::MAX,
        hidden: u64::MAX,
        heads: u64::MAX,
        head_dim: u64::MAX,
        vocab: u64::MAX,
        moe: Some(MoeSpec {
            experts: u64::MAX,
            active_experts: u64::MAX,
            expert_ffn: u64::MAX,
            shared_experts: 1,
            ..MoeSpec::default()
        }),
        mla: Some(MlaSpec {
            indexer: None,
            kv_lora_rank: u64::MAX,
            q_lora_rank: u64::MAX,
            qk_rope_head_dim: u64::MAX,
            qk_nope_head_dim: u64::MAX,
            v_head_dim: u64::MAX,
        }),
        ..ModelSpec::default()
    };
    assert_eq!(s.param_count().total, u64::MAX);
    let _ = s.layer_tensors(0);
    let _ = s.kv_elements_per_token_layer();
}

#[test]
fn serde_round_trips_and_rejects_unknown_fields() {
    let s = deepseek_v3();
    let j = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<ModelSpec>(&j).unwrap(), s);
    // Missing fields take the defaults (Llama-3-8B) ...
    let partial: ModelSpec = serde_json::from_str(r#"{"name": "x", "layers": 2}"#).unwrap();
    assert_eq!(partial.hidden, 4096);
    assert_eq!(partial.layers, 2);
    // ... unknown ones are errors, in the spec and in its parts.
    assert!(serde_json::from_str::<ModelSpec>(r#"{"hiden": 4096}"#).is_err());
    assert!(serde_json::from_str::<ModelSpec>(r#"{"moe": {"experts": 8, "topk": 2}}"#).is_err());
    assert!(serde_json::from_str::<ModelSpec>(r#"{"sliding": {"window": 8, "size": 2}}"#).is_err());
    assert!(serde_json::from_str::<ModelSpec>(r#"{"mla": {"rank": 8}}"#).is_err());
    assert!(serde_json::from_str::<ModelSpec>(r#"{"file_weights": {"bytes": 8}}"#).is_err());
}

#[test]
fn generic_shape_is_close_to_the_asked_count() {
    for p in [
        1e8, 5e8, 1.5e9, 2e9, 3e9, 7e9, 13e9, 70e9, 405e9, 1e12, 2e12,
    ] {
        let s = ModelSpec::generic(p as u64);
        assert_eq!(s.param_count().total, p as u64);
        let got = ModelSpec {
            nominal_params: None,
            ..s.clone()
        }
        .param_count()
        .total as f64;
        // Below 0.5B one head of 128 is a quarter of the width or more.
        let tol = if p < 5e8 { 0.25 } else { 0.12 };
        assert!((got / p - 1.0).abs() < tol, "{p}: {got} {s:?}");
        assert!(s.is_estimated());
        assert!(
            s.kv_heads >= 1 && s.heads.is_multiple_of(s.kv_heads),
            "{s:?}"
        );
        assert_eq!(s.hidden, s.heads * s.head_dim);
    }
}

#[test]
fn generic_70b_is_llama_3_70b() {
    // meta-llama/Meta-Llama-3-70B: 80 layers, 8192 wide, 64 heads, 8 KV heads, MLP 28672.
    let s = ModelSpec::generic(70_000_000_000);
    assert_eq!(
        (s.layers, s.hidden, s.heads, s.kv_heads, s.intermediate),
        (80, 8192, 64, 8, 28672)
    );
}

#[test]
fn generic_dimensions_never_shrink_as_the_count_grows() {
    let mut last = ModelSpec::generic(1_000_000);
    for i in 1..=4000 {
        let p = 10f64.powf(6.0 + 6.4 * i as f64 / 4000.0) as u64;
        let s = ModelSpec::generic(p);
        let dims = |m: &ModelSpec| {
            [
                m.layers,
                m.heads,
                m.kv_heads,
                m.head_dim,
                m.hidden,
                m.intermediate,
                m.vocab,
            ]
        };
        assert!(
            dims(&s).iter().zip(dims(&last)).all(|(a, b)| *a >= b),
            "{p}: {:?} after {:?}",
            dims(&s),
            dims(&last)
        );
        assert!(s.heads.is_multiple_of(s.kv_heads), "{p}: {s:?}");
        last = s;
    }
}

#[test]
fn generic_is_monotonic_in_size() {
    let mut last = 0u64;
    for p in [1e8, 5e8, 1e9, 3e9, 7e9, 13e9, 34e9, 70e9, 180e9, 405e9] {
        let s = ModelSpec::generic(p as u64);
        let arch = s.arch_param_count().total;
        assert!(arch > last, "{p}: {arch} ≤ {last}");
        last = arch;
    }
}
