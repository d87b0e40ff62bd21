//! Weight and KV-cache precisions with their real storage cost (block scales included).
//!
//! GGUF block sizes are from ggml's `ggml-common.h` (`block_q8_0` = 2 + 32 bytes per 32 weights, …);
//! bitsandbytes NF4 from Dettmers et al. 2023 (QLoRA, §2: 64-weight blocks, fp32 absmax, double
//! quantisation to 8-bit with 256-block fp32 second-level constants → 4.127 bits).

use serde::{Deserialize, Serialize};

pub use super::ggml::GgmlType;

/// Weight precision (`--weights`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum WeightPrecision {
    Fp32,
    #[default]
    Fp16,
    Bf16,
    Fp8,
    Int8,
    Int4,
    Nf4,
    Nf4DoubleQuant,
    Gptq4,
    Awq4,
    Q8_0,
    Q6K,
    Q5KM,
    Q5_0,
    Q4KM,
    Q4_0,
    Q3KM,
    Q2K,
    /// llama.cpp i-quants (file types `IQ4_XS`, `IQ4_NL`, `IQ3_M`, `IQ3_XXS`, `IQ2_M`, `IQ2_XS`,
    /// `IQ2_XXS`), sized as llama-quantize writes them with an importance matrix (`--imatrix`;
    /// IQ2_XXS and IQ2_XS refuse to quantise without one). Block layouts: `block_iq4_xs` and
    /// friends in ggml-common.h (see [`GgmlType`]); the mixes: [`WeightPrecision::ggml_type_in`].
    Iq4Xs,
    Iq4Nl,
    Iq3M,
    Iq3Xxs,
    Iq2M,
    Iq2Xs,
    Iq2Xxs,
    /// MXFP4 as gpt-oss ships it: the routed experts' matrices in MXFP4 (4.25 bits), everything
    /// else in BF16 (openai/gpt-oss-120b config.json `quantization_config`: `quant_method:
    /// mxfp4`, `modules_to_not_convert`: self_attn, router, embed_tokens, lm_head). A dense
    /// model has no routed experts: its decoder linear layers take MXFP4 instead.
    Mxfp4,
    /// FP8 E4M3 with one FP32 scale per 128×128 block, as DeepSeek-V3/R1 ship (config.json
    /// `quantization_config`: `fmt: e4m3`, `weight_block_size: [128, 128]`; the scales are the
    /// `weight_scale_inv` tensors): 8 + 32/16384 bits on the decoder's linear layers; embeddings,
    /// output head, norms and router in BF16.
    Fp8Block,
    /// NVFP4, NVIDIA's block-scaled FP4: E2M1 values with one FP8 E4M3 scale per 16 and one
    /// FP32 scale per tensor (NVIDIA, "Introducing NVFP4 for Efficient and Accurate
    /// Low-Precision Inference", developer.nvidia.com blog, 2025-06-24) = 4 + 8/16 = 4.5 bits,
    /// on the decoder's linear layers as TensorRT Model Optimizer writes its `NVFP4`
    /// checkpoints (`hf_quant_config.json` `quant_algo: NVFP4`, `group_size: 16`,
    /// `exclude_modules: [lm_head]`); embeddings, output head, norms and router in BF16.
    /// llama.cpp's `GGML_TYPE_NVFP4` (`block_nvfp4`: four UE4M3 scales + 32 bytes per 64
    /// values) has the same 4.5 bits.
    Nvfp4,
    /// MLX affine quantisation as mlx-lm writes it (`mlx_lm.convert -q --q-bits N`, the `-Nbit`
    /// repos of mlx-community): N-bit integers with one scale and one bias per group of 64 in
    /// the model's 16-bit dtype, N + 32/64 bits (`mlx/ops.cpp`, `quantize`; mlx-lm
    /// `utils.py`, `quantize_model`, affine default group 64). Every `Linear` and `Embedding`
    /// is quantised, the token embedding and `lm_head` included; norms and biases stay 16-bit
    /// (`core::mlx`).
    Mlx3,
    Mlx4,
    Mlx5,
    Mlx6,
    Mlx8,
}

/// Which layer tensors a quantisation touches. Used by the GGUF k-quant mixes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TensorClass {
    TokenEmbedding,
    Output,
    AttnQ,
    AttnK,
    AttnV,
    AttnOut,
    FfnGateUp,
    FfnDown,
    /// Norms, biases, routers: kept at F32 by llama.cpp.
    Small,
}

impl WeightPrecision {
    pub const ALL: [WeightPrecision; 33] = [
        WeightPrecision::Fp32,
        WeightPrecision::Fp16,
        WeightPrecision::Bf16,
        WeightPrecision::Fp8,
        WeightPrecision::Int8,
        WeightPrecision::Int4,
        WeightPrecision::Nf4,
        WeightPrecision::Nf4DoubleQuant,
        WeightPrecision::Gptq4,
        WeightPrecision::Awq4,
        WeightPrecision::Q8_0,
        WeightPrecision::Q6K,
        WeightPrecision::Q5KM,
        WeightPrecision::Q5_0,
        WeightPrecision::Q4KM,
        WeightPrecision::Q4_0,
        WeightPrecision::Q3KM,
        WeightPrecision::Q2K,
        WeightPrecision::Iq4Xs,
        WeightPrecision::Iq4Nl,
        WeightPrecision::Iq3M,
        WeightPrecision::Iq3Xxs,
        WeightPrecision::Iq2M,
        WeightPrecision::Iq2Xs,
        WeightPrecision::Iq2Xxs,
        WeightPrecision::Mxfp4,
        WeightPrecision::Fp8Block,
        WeightPrecision::Nvfp4,
        WeightPrecision::Mlx8,
        WeightPrecision::Mlx6,
        WeightPrecision::Mlx5,
        WeightPrecision::Mlx4,
        WeightPrecision::Mlx3,
    ];

    /// The CLI spelling (`--weights`), stable.
    pub const fn cli_name(self) -> &'static str {
        match self {
            WeightPrecision::Fp32 => "fp32",
            WeightPrecision::Fp16 => "fp16",
            WeightPrecision::Bf16 => "bf16",
            WeightPrecision::Fp8 => "fp8",
            WeightPrecision::Int8 => "int8",
            WeightPrecision::Int4 => "int4",
            WeightPrecision::Nf4 => "nf4",
            WeightPrecision::Nf4DoubleQuant => "nf4-dq",
            WeightPrecision::Gptq4 => "gptq-4bit",
            WeightPrecision::Awq4 => "awq-4bit",
            WeightPrecision::Q8_0 => "q8_0",
            WeightPrecision::Q6K => "q6_k",
            WeightPrecision::Q5KM => "q5_k_m",
            WeightPrecision::Q5_0 => "q5_0",
            WeightPrecision::Q4KM => "q4_k_m",
            WeightPrecision::Q4_0 => "q4_0",
            WeightPrecision::Q3KM => "q3_k_m",
            WeightPrecision::Q2K => "q2_k",
            WeightPrecision::Iq4Xs => "iq4_xs",
            WeightPrecision::Iq4Nl => "iq4_nl",
            WeightPrecision::Iq3M => "iq3_m",
            WeightPrecision::Iq3Xxs => "iq3_xxs",
            WeightPrecision::Iq2M => "iq2_m",
            WeightPrecision::Iq2Xs => "iq2_xs",
            WeightPrecision::Iq2Xxs => "iq2_xxs",
            WeightPrecision::Mxfp4 => "mxfp4",
            WeightPrecision::Fp8Block => "fp8-block",
            WeightPrecision::Nvfp4 => "nvfp4",
            WeightPrecision::Mlx3 => "mlx-3bit",
            WeightPrecision::Mlx4 => "mlx-4bit",
            WeightPrecision::Mlx5 => "mlx-5bit",
            WeightPrecision::Mlx6 => "mlx-6bit",
            WeightPrecision::Mlx8 => "mlx-8bit",
        }
    }

    /// The precision a CLI/catalog name gives: case-insensitive, `-` and `_` alike, surrounding
    /// blanks ignored. Compares in place (no allocation: the fit engine matches every
    /// benchmark's precision through it).
    pub fn from_cli(s: &str) -> Option<Self> {
        let t = s.trim();
        Self::ALL
            .into_iter()
            .find(|p| cli_name_eq(t, p.cli_name()))
            .or_else(|| {
                [
                    ("nf4_double_quant", WeightPrecision::Nf4DoubleQuant),
                    ("nf4dq", WeightPrecision::Nf4DoubleQuant),
                    ("gptq", WeightPrecision::Gptq4),
                    ("awq", WeightPrecision::Awq4),
                    ("mxfp4_moe", WeightPrecision::Mxfp4),
                    ("modelopt_fp4", WeightPrecision::Nvfp4),
                    ("mlx3", WeightPrecision::Mlx3),
                    ("mlx4", WeightPrecision::Mlx4),
                    ("mlx5", WeightPrecision::Mlx5),
                    ("mlx6", WeightPrecision::Mlx6),
                    ("mlx8", WeightPrecision::Mlx8),
                ]
                .into_iter()
                .find(|(alias, _)| cli_name_eq(t, alias))
                .map(|(_, p)| p)
            })
    }

    /// A human label for pickers and reports.
    pub const fn label(self) -> &'static str {
        match self {
            WeightPrecision::Fp32 => "FP32",
            WeightPrecision::Fp16 => "FP16",
            WeightPrecision::Bf16 => "BF16",
            WeightPrecision::Fp8 => "FP8 (E4M3)",
            WeightPrecision::Int8 => "INT8 (LLM.int8)",
            WeightPrecision::Int4 => "INT4 (group 128)",
            WeightPrecision::Nf4 => "NF4",
            WeightPrecision::Nf4DoubleQuant => "NF4 + double quant",
            WeightPrecision::Gptq4 => "GPTQ 4-bit g128",
            WeightPrecision::Awq4 => "AWQ 4-bit g128",
            WeightPrecision::Q8_0 => "GGUF Q8_0",
            WeightPrecision::Q6K => "GGUF Q6_K",
            WeightPrecision::Q5KM => "GGUF Q5_K_M",
            WeightPrecision::Q5_0 => "GGUF Q5_0",
            WeightPrecision::Q4KM => "GGUF Q4_K_M",
            WeightPrecision::Q4_0 => "GGUF Q4_0",
            WeightPrecision::Q3KM => "GGUF Q3_K_M",
            WeightPrecision::Q2K => "GGUF Q2_K",
            WeightPrecision::Iq4Xs => "GGUF IQ4_XS",
            WeightPrecision::Iq4Nl => "GGUF IQ4_NL",
            WeightPrecision::Iq3M => "GGUF IQ3_M",
            WeightPrecision::Iq3Xxs => "GGUF IQ3_XXS",
            WeightPrecision::Iq2M => "GGUF IQ2_M",
            WeightPrecision::Iq2Xs => "GGUF IQ2_XS",
            WeightPrecision::Iq2Xxs => "GGUF IQ2_XXS",
            WeightPrecision::Mxfp4 => "MXFP4 (experts; BF16 rest)",
            WeightPrecision::Fp8Block => "FP8 block-scaled (128×128)",
            WeightPrecision::Nvfp4 => "NVFP4 (FP4, E4M3 scale per 16)",
            WeightPrecision::Mlx3 => "MLX 3-bit (g64)",
            WeightPrecision::Mlx4 => "MLX 4-bit (g64)",
            WeightPrecision::Mlx5 => "MLX 5-bit (g64)",
            WeightPrecision::Mlx6 => "MLX 6-bit (g64)",
            WeightPrecision::Mlx8 => "MLX 8-bit (g64)",
        }
    }

    /// The bits of an MLX affine precision (`None` for the others).
    pub const fn mlx_bits(self) -> Option<u32> {
        match self {
            WeightPrecision::Mlx3 => Some(3),
            WeightPrecision::Mlx4 => Some(4),
            WeightPrecision::Mlx5 => Some(5),
            WeightPrecision::Mlx6 => Some(6),
            WeightPrecision::Mlx8 => Some(8),
            _ => None,
        }
    }

    /// The MLX affine precision of `bits` at mlx-lm's default group of 64 (`None` for bit
    /// widths mlx-community does not publish).
    pub const fn mlx_of_bits(bits: u32) -> Option<WeightPrecision> {
        match bits {
            3 => Some(WeightPrecision::Mlx3),
            4 => Some(WeightPrecision::Mlx4),
            5 => Some(WeightPrecision::Mlx5),
            6 => Some(WeightPrecision::Mlx6),
            8 => Some(WeightPrecision::Mlx8),
            _ => None,
        }
    }

    pub const fn is_gguf(self) -> bool {
        matches!(
            self,
            WeightPrecision::Q8_0
                | WeightPrecision::Q6K
                | WeightPrecision::Q5KM
                | WeightPrecision::Q5_0
                | WeightPrecision::Q4KM
                | WeightPrecision::Q4_0
                | WeightPrecision::Q3KM
                | WeightPrecision::Q2K
                | WeightPrecision::Iq4Xs
                | WeightPrecision::Iq4Nl
                | WeightPrecision::Iq3M
                | WeightPrecision::Iq3Xxs
                | WeightPrecision::Iq2M
                | WeightPrecision::Iq2Xs
                | WeightPrecision::Iq2Xxs
        )
    }

    /// Whether this GGUF file type is a mix (some tensors at other types than the bulk), as the
    /// k-quant `_M` types, Q2_K and the i-quants are.
    pub const fn is_mix(self) -> bool {
        self.is_gguf()
            && !matches!(
                self,
                WeightPrecision::Q8_0
                    | WeightPrecision::Q6K
                    | WeightPrecision::Q5_0
                    | WeightPrecision::Q4_0
            )
    }

    /// Whether llama.cpp's mix for this file type gives tensors different types by layer index
    /// (the estimate then sums layer by layer instead of once per kind of layer).
    pub const fn mixes_by_layer(self) -> bool {
        matches!(
            self,
            WeightPrecision::Q4KM
                | WeightPrecision::Q5KM
                | WeightPrecision::Q3KM
                | WeightPrecision::Iq3M
                | WeightPrecision::Iq2M
                | WeightPrecision::Iq2Xs
                | WeightPrecision::Iq2Xxs
        )
    }

    /// Bits per weight of the bulk of the weights (block scales included).
    pub fn bits_per_weight(self) -> f64 {
        match self {
            WeightPrecision::Fp32 => 32.0,
            WeightPrecision::Fp16 | WeightPrecision::Bf16 => 16.0,
            WeightPrecision::Fp8 => 8.0,
            // LLM.int8: int8 weights + one fp32 scale per output row (negligible for h ≥ 1024).
            WeightPrecision::Int8 => 8.0,
            // Symmetric int4 with an fp16 scale per 128 weights: 4 + 16/128.
            WeightPrecision::Int4 => 4.125,
            // NF4: 4 bits + fp32 absmax per 64 weights = 4.5 (QLoRA paper §2).
            WeightPrecision::Nf4 => 4.5,
            // Double quantisation: 8-bit absmax per 64 + fp32 per 256 blocks = 4 + 8/64 + 32/16384.
            WeightPrecision::Nf4DoubleQuant => 4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0),
            // GPTQ/AWQ g128: packed int4 + fp16 scale + 4-bit zero point per 128 weights.
            WeightPrecision::Gptq4 | WeightPrecision::Awq4 => 4.0 + 20.0 / 128.0,
            WeightPrecision::Mxfp4 => GgmlType::MXFP4.bits_per_weight(),
            WeightPrecision::Fp8Block => 8.0 + FP8_BLOCK_SCALE_BITS,
            // The per-tensor FP32 scale is 4 bytes a matrix: nothing at these sizes.
            WeightPrecision::Nvfp4 => GgmlType::NVFP4.bits_per_weight(),
            WeightPrecision::Mlx3
            | WeightPrecision::Mlx4
            | WeightPrecision::Mlx5
            | WeightPrecision::Mlx6
            | WeightPrecision::Mlx8 => crate::core::mlx::affine_bits_per_weight(
                self.mlx_bits().unwrap_or(4),
                crate::core::mlx::DEFAULT_GROUP_SIZE,
            ),
            _ => self
                .ggml_type_for(TensorClass::AttnQ, 0, 1)
                .bits_per_weight(),
        }
    }

    /// Whether the embedding/output and norm tensors are kept in 16-bit (bitsandbytes, GPTQ and
    /// AWQ quantise only the linear layers inside the blocks; `lm_head` and embeddings stay fp16).
    pub const fn keeps_embeddings_16bit(self) -> bool {
        matches!(
            self,
            WeightPrecision::Int8
                | WeightPrecision::Int4
                | WeightPrecision::Nf4
                | WeightPrecision::Nf4DoubleQuant
                | WeightPrecision::Gptq4
                | WeightPrecision::Awq4
                | WeightPrecision::Fp8
                | WeightPrecision::Fp8Block
                | WeightPrecision::Mxfp4
                | WeightPrecision::Nvfp4
        )
    }

    /// The ggml type llama.cpp's `llama_tensor_get_type` (src/llama-quant.cpp) gives a tensor
    /// of class `c` in layer `i` of `n` for this file type. Only meaningful for GGUF precisions.
    pub fn ggml_type_for(self, c: TensorClass, i: u64, n: u64) -> GgmlType {
        self.ggml_type_in(c, i, n, 1)
    }

    /// [`Self::ggml_type_for`] on a model whose query heads share each KV head `gqa` times
    /// (`n_gqa()` in llama.cpp: heads / kv_heads): the i-quant mixes keep `attn_v` at more bits
    /// when `gqa` ≥ 4 (the tensor is then 4× smaller than `attn_q`).
    pub fn ggml_type_in(self, c: TensorClass, i: u64, n: u64, gqa: u64) -> GgmlType {
        use GgmlType as G;
        use TensorClass as T;
        if c == T::Small {
            return G::F32;
        }
        if let Some(t) = self.iquant_type(c, i, n, gqa >= 4) {
            return t;
        }
        // use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2
        let more = i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
        match self {
            WeightPrecision::Q8_0 => G::Q8_0,
            WeightPrecision::Q6K => G::Q6K,
            WeightPrecision::Q5_0 => match c {
                T::Output => G::Q6K,
                _ => G::Q5_0,
            },
            WeightPrecision::Q4_0 => match c {
                T::Output => G::Q6K,
                _ => G::Q4_0,
            },
            WeightPrecision::Q5KM => match c {
                T::Output => G::Q6K,
                T::AttnV | T::FfnDown if more => G::Q6K,
                _ => G::Q5K,
            },
            WeightPrecision::Q4KM => match c {
                T::Output => G::Q6K,
                T::AttnV | T::FfnDown if more => G::Q6K,
                _ => G::Q4K,
            },
            WeightPrecision::Q3KM => match c {
                T::Output => G::Q6K,
                T::AttnV if i < 2 => G::Q5K,
                T::AttnV => G::Q4K,
                T::FfnDown if i < n / 16 => G::Q5K,
                T::FfnDown => G::Q4K,
                T::AttnOut => G::Q4K,
                _ => G::Q3K,
            },
            WeightPrecision::Q2K => match c {
                T::Output => G::Q6K,
                // llama-quant.cpp: attn_v at Q4_K when 4+ query heads share a KV head.
                T::AttnV if gqa >= 4 => G::Q4K,
                T::AttnV | T::FfnDown | T::AttnOut => G::Q3K,
                T::TokenEmbedding => G::Q2K,
                _ => G::Q2K,
            },
            WeightPrecision::Fp32 => G::F32,
            WeightPrecision::Bf16 => G::BF16,
            _ => G::F16,
        }
    }

    /// The i-quant mixes of `llama_tensor_get_type_impl` (src/llama-quant.cpp, ggml-org/llama.cpp
    /// commit 007dbbf) for a dense model quantised with an importance matrix: default types from
    /// `llama_model_quantize_impl` (IQ3_M → IQ3_S, IQ2_M → IQ2_S), output at Q5_K for the 2- and
    /// 3-bit types and Q6_K otherwise, and the per-category bumps. `None` for other precisions.
    fn iquant_type(self, c: TensorClass, i: u64, n: u64, gqa4: bool) -> Option<GgmlType> {
        use GgmlType as G;
        use TensorClass as T;
        let bulk = match self {
            WeightPrecision::Iq4Xs => G::IQ4_XS,
            WeightPrecision::Iq4Nl => G::IQ4_NL,
            WeightPrecision::Iq3M => G::IQ3_S,
            WeightPrecision::Iq3Xxs => G::IQ3_XXS,
            WeightPrecision::Iq2M => G::IQ2_S,
            WeightPrecision::Iq2Xs => G::IQ2_XS,
            WeightPrecision::Iq2Xxs => G::IQ2_XXS,
            _ => return None,
        };
        let two_bit = matches!(
            self,
            WeightPrecision::Iq2M | WeightPrecision::Iq2Xs | WeightPrecision::Iq2Xxs
        );
        let first_eighth = i < n / 8;
        Some(match (self, c) {
            (_, T::Output) if two_bit || self == WeightPrecision::Iq3Xxs => G::Q5K,
            (_, T::Output) => G::Q6K,
            (WeightPrecision::Iq2Xs | WeightPrecision::Iq2Xxs, T::TokenEmbedding) => G::Q2K,
            (WeightPrecision::Iq2M | WeightPrecision::Iq3Xxs, T::TokenEmbedding) => G::IQ3_S,
            (_, T::AttnV) if two_bit && gqa4 => G::Q4K,
            (WeightPrecision::Iq2M, T::AttnV) => G::IQ3_S,
            (_, T::AttnV) if two_bit => G::Q2K,
            (WeightPrecision::Iq2M, T::FfnDown) if first_eighth => G::IQ3_S,
            (_, T::FfnDown) if two_bit && first_eighth => G::Q2K,
            (WeightPrecision::Iq2M, T::AttnOut) => G::IQ3_S,
            (WeightPrecision::Iq3Xxs, T::AttnV) if gqa4 => G::Q4K,
            (WeightPrecision::Iq3Xxs, T::AttnK | T::AttnQ) => G::IQ2_S,
            (WeightPrecision::Iq3Xxs, T::AttnOut) => G::IQ3_S,
            (WeightPrecision::Iq3M, T::AttnV | T::AttnOut) => G::Q4K,
            (WeightPrecision::Iq3M, T::FfnDown) if first_eighth => G::Q4K,
            (WeightPrecision::Iq4Xs | WeightPrecision::Iq4Nl, T::AttnV) if gqa4 => G::Q5K,
            _ => bulk,
        })
    }

    /// One line saying which tensors the mix keeps at which type (for tooltips and reports).
    pub const fn mix_note(self) -> &'static str {
        match self {
            WeightPrecision::Q4KM => {
                "Q4_K bulk; attn_v and ffn_down at Q6_K in the first/last eighth and every third layer between; output at Q6_K; norms F32 (llama-quant.cpp)"
            }
            WeightPrecision::Q5KM => {
                "Q5_K bulk; attn_v and ffn_down at Q6_K in the first/last eighth and every third layer between; output at Q6_K; norms F32 (llama-quant.cpp)"
            }
            WeightPrecision::Q3KM => {
                "Q3_K bulk; attn_v at Q5_K (first 2 layers) / Q4_K; ffn_down at Q5_K (first 1/16) / Q4_K; attn_output Q4_K; output Q6_K (llama-quant.cpp)"
            }
            WeightPrecision::Q2K => {
                "Q2_K bulk; attn_v at Q4_K when 4+ query heads share a KV head, else Q3_K; attn_output and ffn_down at Q3_K; output Q6_K (llama-quant.cpp)"
            }
            WeightPrecision::Q4_0 | WeightPrecision::Q5_0 => {
                "all matrices at the file type, output at Q6_K, norms F32 (llama-quant.cpp)"
            }
            WeightPrecision::Q8_0 | WeightPrecision::Q6K => {
                "all matrices at the file type, norms F32"
            }
            WeightPrecision::Iq4Xs | WeightPrecision::Iq4Nl => {
                "IQ4 bulk; attn_v at Q5_K when 4+ query heads share a KV head; output Q6_K; norms F32 (llama-quant.cpp, with an imatrix)"
            }
            WeightPrecision::Iq3M => {
                "IQ3_S bulk; attn_v and attn_output at Q4_K; ffn_down at Q4_K in the first eighth; output Q6_K (llama-quant.cpp, with an imatrix)"
            }
            WeightPrecision::Iq3Xxs => {
                "IQ3_XXS bulk; attn_q/attn_k at IQ2_S; attn_output and token_embd IQ3_S; attn_v Q4_K when 4+ query heads share a KV head; output Q5_K (llama-quant.cpp, with an imatrix)"
            }
            WeightPrecision::Iq2M => {
                "IQ2_S bulk; attn_output, token_embd and the first eighth of ffn_down at IQ3_S; attn_v Q4_K (4+ query heads per KV head) or IQ3_S; output Q5_K (llama-quant.cpp, with an imatrix)"
            }
            WeightPrecision::Iq2Xs | WeightPrecision::Iq2Xxs => {
                "IQ2 bulk; token_embd and the first eighth of ffn_down at Q2_K; attn_v Q4_K (4+ query heads per KV head) or Q2_K; output Q5_K (llama-quant.cpp, needs an imatrix)"
            }
            WeightPrecision::Int8
            | WeightPrecision::Nf4
            | WeightPrecision::Nf4DoubleQuant
            | WeightPrecision::Int4
            | WeightPrecision::Gptq4
            | WeightPrecision::Awq4
            | WeightPrecision::Fp8 => {
                "linear layers inside the blocks quantised; embeddings, lm_head and norms kept at 16-bit"
            }
            WeightPrecision::Mxfp4 => {
                "routed experts in MXFP4 (32 weights + one E8M0 scale = 4.25 bits); attention, router, shared experts, embeddings and norms in BF16 (as gpt-oss ships)"
            }
            WeightPrecision::Fp8Block => {
                "decoder linear layers in FP8 E4M3 with an FP32 scale per 128×128 block; embeddings, lm_head, norms and router in BF16 (as DeepSeek-V3 ships)"
            }
            WeightPrecision::Nvfp4 => {
                "decoder linear layers in NVFP4 (16 E2M1 values + one E4M3 scale = 4.5 bits, one FP32 scale per tensor); embeddings, lm_head, norms and router in BF16 (as TensorRT Model Optimizer writes NVFP4 checkpoints)"
            }
            WeightPrecision::Mlx3
            | WeightPrecision::Mlx4
            | WeightPrecision::Mlx5
            | WeightPrecision::Mlx6
            | WeightPrecision::Mlx8 => {
                "every Linear and Embedding (token embedding and lm_head included) at N bits + a 16-bit scale and bias per 64 weights; norms, biases and MoE routers counted at 16-bit (mlx-lm quantize_model; its MoE quant_predicate keeps routers at 8 bits)"
            }
            _ => "every tensor at this type",
        }
    }
}

/// Bits per weight of DeepSeek-V3's FP8 block scales: one FP32 `weight_scale_inv` per 128×128
/// block (config.json `weight_block_size: [128, 128]`) = 32 / 16384.
pub const FP8_BLOCK_SCALE_BITS: f64 = 32.0 / (128.0 * 128.0);

/// KV-cache element type (`--kv`), for K and V separately.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub enum KvPrecision {
    Fp32,
    #[default]
    Fp16,
    Bf16,
    Fp8,
    Q8_0,
    Q4_0,
}

impl KvPrecision {
    pub const ALL: [KvPrecision; 6] = [
        KvPrecision::Fp32,
        KvPrecision::Fp16,
        KvPrecision::Bf16,
        KvPrecision::Fp8,
        KvPrecision::Q8_0,
        KvPrecision::Q4_0,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            KvPrecision::Fp32 => "fp32",
            KvPrecision::Fp16 => "fp16",
            KvPrecision::Bf16 => "bf16",
            KvPrecision::Fp8 => "fp8",
            KvPrecision::Q8_0 => "q8_0",
            KvPrecision::Q4_0 => "q4_0",
        }
    }
    pub fn from_cli(s: &str) -> Option<Self> {
        let t = s.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|p| p.cli_name() == t)
    }
    /// The ggml type llama.cpp stores this cache type as (`--cache-type-k`); FP8 is vLLM's
    /// `--kv-cache-dtype fp8` (one byte per element), not a ggml type.
    pub const fn ggml(self) -> Option<GgmlType> {
        match self {
            KvPrecision::Fp32 => Some(GgmlType::F32),
            KvPrecision::Fp16 => Some(GgmlType::F16),
            KvPrecision::Bf16 => Some(GgmlType::BF16),
            KvPrecision::Fp8 => None,
            KvPrecision::Q8_0 => Some(GgmlType::Q8_0),
            KvPrecision::Q4_0 => Some(GgmlType::Q4_0),
        }
    }
    /// (bytes per block, elements per block).
    pub const fn block(self) -> (u64, u64) {
        match self.ggml() {
            Some(t) => t.block(),
            None => (1, 1),
        }
    }
    pub fn bits(self) -> f64 {
        let (b, n) = self.block();
        b as f64 * 8.0 / n as f64
    }
    /// Exact bytes for `n` elements (row length must be a multiple of the block for q-types).
    pub fn bytes_for(self, n: u64) -> u64 {
        let (b, k) = self.block();
        n.div_ceil(k).saturating_mul(b)
    }
}

/// K and V types (`--kv fp16` or `--kv q8_0/q4_0`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct KvTypes {
    pub k: KvPrecision,
    pub v: KvPrecision,
}

impl KvTypes {
    pub const fn same(p: KvPrecision) -> Self {
        KvTypes { k: p, v: p }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s.split_once('/') {
            Some((k, v)) => Some(KvTypes {
                k: KvPrecision::from_cli(k)?,
                v: KvPrecision::from_cli(v)?,
            }),
            None => KvPrecision::from_cli(s).map(KvTypes::same),
        }
    }
    pub fn cli_name(self) -> String {
        if self.k == self.v {
            self.k.cli_name().to_string()
        } else {
            format!("{}/{}", self.k.cli_name(), self.v.cli_name())
        }
    }
}

/// `a` and `b` equal up to ASCII case, with `-` and `_` the same character.
fn cli_name_eq(a: &str, b: &str) -> bool {
    let norm = |c: u8| {
        if c == b'-' {
            b'_'
        } else {
            c.to_ascii_lowercase()
        }
    };
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| norm(x) == norm(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_sizes_match_ggml() {
        // ggml-common.h: QK_K = 256; sizes in bytes per block.
        assert_eq!(GgmlType::Q8_0.bits_per_weight(), 8.5);
        assert_eq!(GgmlType::Q6K.bits_per_weight(), 6.5625);
        assert_eq!(GgmlType::Q5K.bits_per_weight(), 5.5);
        assert_eq!(GgmlType::Q4K.bits_per_weight(), 4.5);
        assert_eq!(GgmlType::Q4_0.bits_per_weight(), 4.5);
        assert_eq!(GgmlType::Q3K.bits_per_weight(), 3.4375);
        assert_eq!(GgmlType::Q2K.bits_per_weight(), 2.625);
    }

    #[test]
    fn nf4_double_quant_is_4_127_bits() {
        // QLoRA (Dettmers et al. 2023) §2: "reduces the memory footprint ... from 0.5 bits to 0.127 bits per parameter".
        let b = WeightPrecision::Nf4DoubleQuant.bits_per_weight();
        assert!((b - 4.127).abs() < 0.001, "{b}");
        assert_eq!(WeightPrecision::Nf4.bits_per_weight(), 4.5);
    }

    #[test]
    fn cli_names_round_trip() {
        for p in WeightPrecision::ALL {
            assert_eq!(WeightPrecision::from_cli(p.cli_name()), Some(p));
        }
        for p in KvPrecision::ALL {
            assert_eq!(KvPrecision::from_cli(p.cli_name()), Some(p));
        }
        assert_eq!(
            KvTypes::parse("q8_0/q4_0"),
            Some(KvTypes {
                k: KvPrecision::Q8_0,
                v: KvPrecision::Q4_0
            })
        );
        assert_eq!(KvTypes::parse("int3"), None);
    }
}
