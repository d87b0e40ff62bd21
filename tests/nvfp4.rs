//! NVFP4 weights: their bytes (worked out by hand), the checkpoints that say they are NVFP4, and
//! the kernel that runs them (FP4 tensor cores on Blackwell, weight-only elsewhere).

use headroom::core::WeightPrecision;
use headroom::core::estimate::{ComponentKind, estimate};
use headroom::core::fit::{FitResult, FitSettings, fit_all};
use headroom::core::model::ModelSpec;
use headroom::core::scenario::{Runtime, Scenario};
use headroom::core::speed::GpuDevice;
use headroom::core::speed::step::Kernel;
use headroom::io::catalog::builtin;

fn weights_bytes(model: ModelSpec, w: WeightPrecision) -> u64 {
    estimate(&Scenario {
        model,
        weights: w,
        ..Scenario::default()
    })
    .kind_total(ComponentKind::Weights)
    .0
}

#[test]
fn nvfp4_is_four_and_a_half_bits_and_has_its_names() {
    // 16 E2M1 values (8 bytes) + one E4M3 scale byte = 9 bytes per 16 = 4.5 bits; llama.cpp's
    // block_nvfp4: 4 scale bytes + 32 bytes per 64 = 4.5 bits as well.
    assert_eq!(WeightPrecision::Nvfp4.bits_per_weight(), 4.5);
    assert_eq!(
        WeightPrecision::from_cli("nvfp4"),
        Some(WeightPrecision::Nvfp4)
    );
    assert_eq!(
        WeightPrecision::from_cli("ModelOpt-FP4"),
        Some(WeightPrecision::Nvfp4)
    );
    assert!(WeightPrecision::ALL.contains(&WeightPrecision::Nvfp4));
    assert!(!WeightPrecision::Nvfp4.is_gguf());
}

#[test]
fn llama_3_8b_in_nvfp4_keeps_embeddings_and_head_in_bf16() {
    // Llama-3-8B: 6,979,321,856 weights in the blocks' linear layers × 9/16 bytes
    // = 3,925,868,544; the embedding, output head and norms (2 × 525,336,576 + 33 × 4096 … as
    // in tests/moe.rs: 2,101,878,784 bytes) in BF16.
    assert_eq!(
        weights_bytes(ModelSpec::default(), WeightPrecision::Nvfp4),
        3_925_868_544 + 2_101_878_784
    );
    // Against MXFP4 on the same dense model (17 bytes per 32 on the linear layers): NVFP4's
    // scales cost 1/4 bit more a weight = 6,979,321,856 / 32 bytes more.
    assert_eq!(
        weights_bytes(ModelSpec::default(), WeightPrecision::Nvfp4)
            - weights_bytes(ModelSpec::default(), WeightPrecision::Mxfp4),
        6_979_321_856 / 32
    );
}

#[test]
fn llama_3_3_70b_in_nvfp4_is_42_7_gb() {
    // Llama 3.3 70B (config.json: 80 layers, hidden 8192, 64 heads, 8 KV heads, FFN 28672,
    // vocab 128256, untied): per layer q,o 2 × 8192² + k,v 2 × 8192 × 1024 + MLP 3 × 8192 × 28672
    // = 855,638,016 linear weights; × 80 = 68,451,041,280 × 9/16 = 38,503,710,720 bytes.
    // Embedding + head 2 × 128256 × 8192 = 2,101,346,304 and norms 161 × 8192 = 1,318,912 in
    // BF16 = 4,205,330,432 bytes. Total 42,709,041,152 bytes (NVIDIA's
    // nvidia/Llama-3.3-70B-Instruct-FP4 quantises the same linear layers, lm_head excluded).
    let spec = builtin().model("llama-3.3-70b").unwrap().spec.clone();
    assert_eq!(
        weights_bytes(spec, WeightPrecision::Nvfp4),
        38_503_710_720 + 4_205_330_432
    );
}

#[test]
fn nvfp4_runs_on_fp4_tensor_cores_only_on_blackwell() {
    let cat = builtin();
    let gpu = |id: &str| GpuDevice::from_accelerator(cat.accelerator(id).unwrap());
    for id in [
        "b200",
        "rtx-5090",
        "rtx-pro-6000-blackwell",
        "rtx-5070-laptop",
    ] {
        assert_eq!(
            Kernel::for_weights(WeightPrecision::Nvfp4, &gpu(id)),
            Kernel::W4A4Fp4,
            "{id}"
        );
        // FP8 weights on the same card still take the FP8 path.
        assert_eq!(
            Kernel::for_weights(WeightPrecision::Fp8, &gpu(id)),
            Kernel::W8A8Fp8
        );
    }
    // Hopper, Ada and Ampere have no FP4 tensor cores: vLLM's FP4 Marlin, weight-only.
    for id in ["h100-sxm", "rtx-4090", "a100-80gb-sxm", "l40s"] {
        assert_eq!(
            Kernel::for_weights(WeightPrecision::Nvfp4, &gpu(id)),
            Kernel::W4A16,
            "{id}"
        );
    }
    // The dense FP4 rate is twice the FP8 one on every Blackwell part in the catalog
    // (the vendors' FP4 "AI TOPS" are with 2:4 sparsity: 3352 on an RTX 5090 = 2 × 1676).
    // (B300 lists no INT8/FP8 figure in the catalog: against FP16 it is 4× or more.)
    for a in cat.accelerators.iter().filter(|a| a.fp4_tflops.is_some()) {
        let fp4 = a.fp4_tflops.unwrap();
        match a.int8_tops {
            Some(fp8) => {
                let ratio = fp4 / fp8;
                assert!((1.9..=3.5).contains(&ratio), "{}: FP4/FP8 {ratio}", a.id);
            }
            None => assert!(fp4 >= 4.0 * a.fp16_tflops, "{}", a.id),
        }
    }
}

fn fit_on(s: &Scenario, machine: &str) -> FitResult {
    let cat = builtin();
    let m = cat
        .machine(machine)
        .unwrap_or_else(|| panic!("machine {machine}"));
    fit_all(s, [m], cat, &FitSettings::default()).remove(0)
}

#[test]
fn nvfp4_prefill_is_faster_than_fp8_on_b200_and_not_on_h100() {
    // Prefill of a long prompt is compute-bound: on a B200 NVFP4 GEMMs run at the FP4 rate (2×
    // FP8), on an H100 NVFP4 is dequantised to 16 bits (Marlin) and loses to FP8's W8A8.
    let s = |w| Scenario {
        model: builtin().model("llama-3.3-70b").unwrap().spec.clone(),
        weights: w,
        runtime: Runtime::Vllm,
        context: 8192,
        ..Scenario::default()
    };
    let b = |w, m| fit_on(&s(w), m).prefill_tokens_per_s;
    let (b200_fp4, b200_fp8) = (
        b(WeightPrecision::Nvfp4, "aws-p6-b200-48xlarge"),
        b(WeightPrecision::Fp8, "aws-p6-b200-48xlarge"),
    );
    let (h100_fp4, h100_fp8) = (
        b(WeightPrecision::Nvfp4, "aws-p5-48xlarge"),
        b(WeightPrecision::Fp8, "aws-p5-48xlarge"),
    );
    // Less than 2×: attention (BF16), the per-layer and per-step costs do not shrink.
    assert!(
        b200_fp4 > 1.15 * b200_fp8 && b200_fp4 < 2.0 * b200_fp8,
        "B200 {b200_fp4} vs {b200_fp8}"
    );
    assert!(h100_fp4 < h100_fp8, "H100 {h100_fp4} vs {h100_fp8}");
    // Decode at batch 1 is memory-bound: fewer bytes, faster on both.
    let d = |w, m| fit_on(&s(w), m).decode_tokens_per_s;
    assert!(
        d(WeightPrecision::Nvfp4, "aws-p5-48xlarge") > d(WeightPrecision::Fp8, "aws-p5-48xlarge")
    );
}

#[test]
fn modelopt_nvfp4_config_imports_as_nvfp4() {
    // A TensorRT Model Optimizer export (as nvidia/Llama-3.1-8B-Instruct-FP4 writes its
    // config.json): quant_method modelopt, quant_algo NVFP4, group_size 16.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.json");
    std::fs::write(
        &path,
        r#"{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":4096,
        "intermediate_size":14336,"num_attention_heads":32,"num_hidden_layers":32,
        "num_key_value_heads":8,"vocab_size":128256,"max_position_embeddings":131072,
        "torch_dtype":"bfloat16","tie_word_embeddings":false,
        "quantization_config":{"quant_method":"modelopt","quant_algo":"NVFP4",
        "kv_cache_quant_algo":"FP8","group_size":16,"exclude_modules":["lm_head"]}}"#,
    )
    .unwrap();
    let m = headroom::io::import::import_path(&path).unwrap();
    assert_eq!(m.weights, Some(WeightPrecision::Nvfp4));
    // llm-compressor's NVFP4 format.
    std::fs::write(
        &path,
        r#"{"model_type":"llama","hidden_size":4096,"intermediate_size":14336,
        "num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,
        "vocab_size":128256,"quantization_config":{"quant_method":"compressed-tensors",
        "format":"nvfp4-pack-quantized"}}"#,
    )
    .unwrap();
    let m = headroom::io::import::import_path(&path).unwrap();
    assert_eq!(m.weights, Some(WeightPrecision::Nvfp4));
}
