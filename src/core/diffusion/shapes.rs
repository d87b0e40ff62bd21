//! The components of an image pipeline as Diffusers builds them from their `config.json`, walked
//! module by module: parameters (exact, as `sum(p.numel() for p in m.parameters())` counts them),
//! FLOPs of one forward pass at a resolution, the largest single weight tensor (what
//! `enable_sequential_cpu_offload` moves at once) and the widest set of activations alive at
//! once.
//!
//! Sources, one per walker:
//! - UNet: diffusers `src/diffusers/models/unets/unet_2d_condition.py`
//!   (`UNet2DConditionModel.__init__`), `unet_2d_blocks.py` (`CrossAttnDownBlock2D`,
//!   `UNetMidBlock2DCrossAttn`, `CrossAttnUpBlock2D`), `models/resnet.py` (`ResnetBlock2D`),
//!   `models/transformers/transformer_2d.py` and `models/attention.py` (`BasicTransformerBlock`,
//!   GEGLU feed-forward).
//! - Flux: `models/transformers/transformer_flux.py` (`FluxTransformer2DModel`,
//!   `FluxTransformerBlock`, `FluxSingleTransformerBlock`).
//! - SD3 MMDiT: `models/transformers/transformer_sd3.py` (`SD3Transformer2DModel`) and
//!   `models/attention.py` (`JointTransformerBlock`, `dual_attention_layers` of SD3.5).
//! - VAE: `models/autoencoders/autoencoder_kl.py` (`AutoencoderKL`) and
//!   `models/autoencoders/vae.py` (`Encoder`, `Decoder`).
//! - Text encoders: transformers `models/clip/modeling_clip.py` (`CLIPTextModel`,
//!   `CLIPTextModelWithProjection`) and `models/t5/modeling_t5.py` (`T5EncoderModel`).

use serde::{Deserialize, Serialize};

/// What one walk adds up: parameters, FLOPs, the largest weight tensor, the activation peak (in
/// elements) and the largest attention score matrix (elements, all heads) that a kernel without
/// memory-efficient attention materialises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Walk {
    pub params: u64,
    pub flops: f64,
    pub largest_tensor: u64,
    /// Elements alive at the widest point of the pass (one sample).
    pub live_elements: f64,
    /// Elements of the largest attention score matrix (all heads, one sample).
    pub score_elements: f64,
    /// Σ over attention layers of their score elements (one sample): the traffic of an
    /// attention that writes its scores to memory.
    pub score_traffic_elements: f64,
    /// Blocks run one after another (ResNet blocks, transformer blocks, encoder layers): the
    /// unit of the runtime's dispatch cost, as a layer is for a language model.
    pub blocks: u64,
    /// FLOPs of the convolutions (cuDNN runs FP32 convolutions in TF32 by default) and of the
    /// attention products `QKᵀ` and `· V`; the rest of `flops` is the Linear layers' GEMMs.
    pub conv_flops: f64,
    pub attn_flops: f64,
    /// Elements the element-wise and normalisation operations read and write in one pass (one
    /// sample), as eager PyTorch runs them: one kernel per operation, each reading its inputs
    /// from memory and writing its output back ([`NORM_PASSES`], [`UNARY_PASSES`],
    /// [`BINARY_PASSES`] per operation).
    pub eager_elements: f64,
    /// The same work as a graph compiler runs it (TorchInductor, TensorRT, Core ML): each chain
    /// of element-wise operations between two GEMMs is one kernel that reads its inputs once and
    /// writes once.
    pub fused_elements: f64,
    /// Kernels one pass launches in eager mode and fused.
    pub kernels: f64,
    pub fused_kernels: f64,
    /// Linear layers (GEMMs with a weight of their own): what a weight-only quantisation
    /// dequantises and bitsandbytes' LLM.int8 quantises the input of, once each per pass.
    pub linears: u64,
    /// Σ over the Linear layers of rows × input features and rows × output features (one
    /// sample): the activations an input-quantising matmul reads and its output writes.
    pub linear_in_elements: f64,
    pub linear_out_elements: f64,
    /// Weight and bias tensors: what `enable_sequential_cpu_offload` moves one at a time.
    pub tensors: u64,
    /// FLOPs (one sample) of the Linear GEMMs and of the convolutions by the output tiles
    /// each launches per sample: bucket `b` holds those with 2^b … 2^(b+1) tiles of
    /// [`TILE`] × [`TILE`] outputs (`waves` turns them into the share of the GPU's SMs busy).
    pub linear_by_tiles: [f64; TILE_BUCKETS],
    pub conv_by_tiles: [f64; TILE_BUCKETS],
}

/// The output tile of one thread block of a tensor-core GEMM, 64 × 64: the small tile cuBLAS and
/// cuDNN heuristics pick for GEMMs too small to fill the GPU with 128 × 128 or 256 × 128 tiles
/// (CUTLASS's SM80 tensor-op configurations range from 64 × 64 to 256 × 128,
/// `cutlass/gemm/device/default_gemm_configuration.h`). The large tile would cost the
/// one-image rows of a 128-SM RTX 4090 a third more than measured (docs/diffusion.md).
pub const TILE: u64 = 64;
/// Buckets of tiles per sample, 2^0 … 2^23.
pub const TILE_BUCKETS: usize = 24;

/// The bucket of a GEMM with `rows × cols` outputs per sample.
fn tile_bucket(rows: u64, cols: u64) -> usize {
    let tiles = rows.div_ceil(TILE).max(1) * cols.div_ceil(TILE).max(1);
    (63 - tiles.leading_zeros() as usize).min(TILE_BUCKETS - 1)
}

/// The share of the SMs a bucket's GEMMs keep busy at `samples` samples on `sms` SMs: its tiles
/// run in waves of `sms` thread blocks, and the last wave is partly idle (`tiles ÷ (waves ×
/// sms)`; NVIDIA, "Matrix Multiplication Background User's Guide", "Wave Quantization").
pub fn waves(bucket: usize, samples: f64, sms: f64) -> f64 {
    let tiles = (2f64.powi(bucket as i32) * std::f64::consts::SQRT_2 * samples).max(1.0);
    let w = tiles / sms.max(1.0);
    (w / w.ceil()).clamp(0.05, 1.0)
}

/// Passes over its tensor of one eager normalisation: GroupNorm and LayerNorm read it for the
/// statistics, then read it again and write the result (PyTorch
/// `aten/src/ATen/native/cuda/group_norm_kernel.cu`: `RowwiseMomentsCUDAKernel`, then the
/// element-wise apply; `layer_norm_kernel.cu` the same two loops).
pub const NORM_PASSES: f64 = 3.0;
/// An eager unary operation (SiLU, GELU, a scalar multiply or divide, a dtype cast, an
/// in-place bias add, a contiguous copy): one read and one write.
pub const UNARY_PASSES: f64 = 2.0;
/// An eager binary operation (the sum or product of two tensors): two reads and one write.
pub const BINARY_PASSES: f64 = 3.0;
/// Diffusers' `RMSNorm.forward` (`models/normalization.py`) in eager mode, in 16-bit passes:
/// `to(float32)` (read 1, write 2), `pow(2)` (2 + 2), `mean` (2), `hidden_states * rsqrt`
/// (1 + 2, promoted to FP32), `to(weight.dtype)` (2 + 1), `* weight` (1 + 1): 17 passes in six
/// kernels.
const RMS_NORM: [f64; 6] = [3.0, 4.0, 2.0, 3.0, 3.0, 2.0];
/// Diffusers' `apply_rotary_emb` (`models/embeddings.py`, `use_real`, unbind dim −1, as Flux
/// calls it) on one of q or k, in 16-bit passes: `-x_imag` (½ + ½), `torch.stack` (1 + 1),
/// `x.float()` (1 + 2), `* cos` (2 + 2), `x_rotated.float()` (1 + 2), `* sin` (2 + 2), the sum
/// (4 + 2), `.to(x.dtype)` (2 + 1): 26 passes in eight kernels.
const ROPE: [f64; 8] = [1.0, 2.0, 3.0, 4.0, 3.0, 4.0, 6.0, 3.0];

impl Walk {
    fn weight(&mut self, w: u64) {
        self.params += w;
        self.tensors += 1;
        self.largest_tensor = self.largest_tensor.max(w);
    }
    fn bias(&mut self, b: u64) {
        self.params += b;
        self.tensors += 1;
    }
    /// A chain of element-wise operations over `elements` (one sample) between two GEMMs:
    /// eager mode runs each of `eager` (its passes) as a kernel of its own; a compiler runs the
    /// chain as `fused_kernels` kernels moving `fused_passes` passes.
    fn chain(&mut self, elements: u64, eager: &[f64], fused_passes: f64, fused_kernels: f64) {
        let e = elements as f64;
        self.eager_elements += e * eager.iter().sum::<f64>();
        self.kernels += eager.len() as f64;
        self.fused_elements += e * fused_passes;
        self.fused_kernels += fused_kernels;
    }
    /// Kernels that move next to nothing (a time-embedding SiLU, a tiny projection).
    fn small_ops(&mut self, n: f64) {
        self.kernels += n;
        self.fused_kernels += n.min(1.0);
    }
    /// A k×k convolution `cin → cout` (with bias) producing `pixels` outputs per channel.
    fn conv(&mut self, k: u64, cin: u64, cout: u64, pixels: u64) {
        let w = k * k * cin * cout;
        self.weight(w);
        self.bias(cout);
        let f = 2.0 * w as f64 * pixels as f64;
        self.flops += f;
        self.conv_flops += f;
        self.conv_by_tiles[tile_bucket(pixels, cout)] += f;
        // Eager PyTorch adds the bias after cuDNN's convolution (`Convolution.cpp`,
        // `_convolution`: `output.add_(reshape_bias(...))`); a compiler folds it into the next
        // chain.
        self.chain(cout * pixels, &[UNARY_PASSES], 0.0, 0.0);
        self.kernels += 1.0;
        self.fused_kernels += 1.0;
    }
    /// A linear layer over `tokens` rows.
    fn linear(&mut self, i: u64, o: u64, bias: bool, tokens: u64) {
        self.weight(i * o);
        if bias {
            self.bias(o);
        }
        let f = 2.0 * (i * o) as f64 * tokens as f64;
        self.flops += f;
        self.linear_by_tiles[tile_bucket(tokens, o)] += f;
        // cuBLASLt applies the bias in the GEMM's epilogue (`addmm`).
        self.kernels += 1.0;
        self.fused_kernels += 1.0;
        self.linears += 1;
        self.linear_in_elements += (tokens * i) as f64;
        self.linear_out_elements += (tokens * o) as f64;
    }
    /// A norm with weight and bias of width `c` (GroupNorm, LayerNorm).
    fn norm(&mut self, c: u64) {
        self.params += 2 * c;
        self.tensors += 2;
    }
    /// Scaled dot-product attention: `QKᵀ` and `softmax · V` over `width` channels.
    fn attention(&mut self, nq: u64, nkv: u64, width: u64, heads: u64) {
        let f = 4.0 * nq as f64 * nkv as f64 * width as f64;
        self.flops += f;
        self.attn_flops += f;
        self.kernels += 1.0;
        self.fused_kernels += 1.0;
        let scores = heads as f64 * nq as f64 * nkv as f64;
        self.score_elements = self.score_elements.max(scores);
        self.score_traffic_elements += scores;
    }
    fn live(&mut self, elements: f64) {
        self.live_elements = self.live_elements.max(elements);
    }
    /// Another component run after this one (the text encoders of a pipeline): work adds up,
    /// peaks do not.
    pub fn then(&mut self, o: &Walk) {
        self.params += o.params;
        self.flops += o.flops;
        self.conv_flops += o.conv_flops;
        self.attn_flops += o.attn_flops;
        self.blocks += o.blocks;
        self.eager_elements += o.eager_elements;
        self.fused_elements += o.fused_elements;
        self.kernels += o.kernels;
        self.fused_kernels += o.fused_kernels;
        self.linears += o.linears;
        self.linear_in_elements += o.linear_in_elements;
        self.linear_out_elements += o.linear_out_elements;
        self.tensors += o.tensors;
        for b in 0..TILE_BUCKETS {
            self.linear_by_tiles[b] += o.linear_by_tiles[b];
            self.conv_by_tiles[b] += o.conv_by_tiles[b];
        }
        self.score_traffic_elements += o.score_traffic_elements;
        self.largest_tensor = self.largest_tensor.max(o.largest_tensor);
        self.live_elements = self.live_elements.max(o.live_elements);
        self.score_elements = self.score_elements.max(o.score_elements);
    }
    /// A residual connection closing a branch of `elements`, followed by the next norm (and an
    /// optional `1 + scale`, `+ shift` modulation): eager runs the gate or rescale, the add,
    /// the norm and the modulation one by one; fused, one kernel reads the branch and the
    /// residual and writes the new residual and the normed input (4 passes).
    fn residual_then_norm(&mut self, elements: u64, pre: &[f64], modulated: bool) {
        let mut ops: Vec<f64> = pre.to_vec();
        ops.push(BINARY_PASSES);
        ops.push(NORM_PASSES);
        if modulated {
            ops.extend([UNARY_PASSES, UNARY_PASSES]);
        }
        self.chain(elements, &ops, 4.0, 1.0);
    }
}

/// `ResnetBlock2D` (`cin → cout` at `pixels`, with a time-embedding projection of width `temb`
/// when non-zero). Alive at its widest: its input (kept for the residual), the norm and SiLU
/// outputs and the first convolution's output.
fn resnet(w: &mut Walk, cin: u64, cout: u64, temb: u64, pixels: u64) {
    w.blocks += 1;
    w.norm(cin);
    // GroupNorm, SiLU (fused: the statistics pass, then one read and one write).
    w.chain(cin * pixels, &[NORM_PASSES, UNARY_PASSES], 3.0, 2.0);
    w.conv(3, cin, cout, pixels);
    if temb > 0 {
        w.small_ops(1.0); // SiLU of the time embedding
        w.linear(temb, cout, true, 1);
    }
    w.norm(cout);
    // `+ temb`, GroupNorm, SiLU.
    let temb_add: &[f64] = if temb > 0 {
        &[UNARY_PASSES, NORM_PASSES, UNARY_PASSES]
    } else {
        &[NORM_PASSES, UNARY_PASSES]
    };
    w.chain(cout * pixels, temb_add, 3.0, 2.0);
    w.conv(3, cout, cout, pixels);
    if cin != cout {
        w.conv(1, cin, cout, pixels);
    }
    // `(input_tensor + hidden_states) / output_scale_factor` (fused: two reads, one write).
    w.chain(cout * pixels, &[BINARY_PASSES, UNARY_PASSES], 3.0, 1.0);
    w.live(pixels as f64 * (3 * cin + cout) as f64);
}

/// `Transformer2DModel` with `depth` `BasicTransformerBlock`s of width `c` over `n` tokens,
/// cross-attending to `m` text tokens of width `cross` (GEGLU feed-forward, inner 4c).
fn transformer_2d(w: &mut Walk, c: u64, depth: u64, heads: u64, cross: u64, n: u64, m: u64) {
    let cn = c * n;
    w.norm(c);
    // GroupNorm, then the NCHW → tokens permute copy.
    w.chain(cn, &[NORM_PASSES, UNARY_PASSES], 3.0, 2.0);
    w.linear(c, c, true, n); // proj_in
    for d in 0..depth {
        w.blocks += 1;
        w.norm(c);
        if d == 0 {
            w.chain(cn, &[NORM_PASSES], 2.0, 1.0);
        }
        for _ in 0..3 {
            w.linear(c, c, false, n); // attn1 q, k, v
        }
        w.attention(n, n, c, heads);
        w.linear(c, c, true, n); // attn1 out
        w.norm(c);
        // `/ rescale_output_factor` (AttnProcessor2_0), `+ hidden_states`, norm2.
        w.residual_then_norm(cn, &[UNARY_PASSES], false);
        w.linear(c, c, false, n); // attn2 q
        w.linear(cross, c, false, m); // attn2 k
        w.linear(cross, c, false, m); // attn2 v
        w.attention(n, m, c, heads);
        w.linear(c, c, true, n); // attn2 out
        w.norm(c);
        w.residual_then_norm(cn, &[UNARY_PASSES], false);
        w.linear(c, 8 * c, true, n); // GEGLU proj (value and gate)
        // GEGLU: `hidden_states * gelu(gate)` over 4c (fused: read 8c, write 4c).
        w.chain(4 * cn, &[UNARY_PASSES, BINARY_PASSES], 3.0, 1.0);
        w.linear(4 * c, c, true, n); // ff out
        let last = d + 1 == depth;
        if last {
            w.chain(cn, &[BINARY_PASSES], 3.0, 1.0);
        } else {
            w.residual_then_norm(cn, &[], false);
        }
        // Residual, normed input, the GEGLU projection and its gated half.
        w.live(n as f64 * (c + c + 8 * c + 4 * c) as f64);
    }
    w.linear(c, c, true, n); // proj_out
    // Tokens → NCHW copy, `+ residual`.
    w.chain(cn, &[UNARY_PASSES, BINARY_PASSES], 3.0, 1.0);
}

/// `UNet2DConditionModel`'s config fields that decide its shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UNetShape {
    pub in_channels: u64,
    pub out_channels: u64,
    /// `block_out_channels`.
    pub channels: Vec<u64>,
    pub layers_per_block: u64,
    /// Per level, the `transformer_layers_per_block` of a cross-attention level, 0 for a plain
    /// `DownBlock2D` / `UpBlock2D` level.
    pub depth: Vec<u64>,
    /// Per level, attention heads (the config's `attention_head_dim`, which Diffusers passes
    /// as `num_attention_heads`: `unet_2d_condition.py`, "num_attention_heads = …
    /// attention_head_dim" for backwards compatibility).
    pub heads: Vec<u64>,
    /// `cross_attention_dim`.
    pub cross_dim: u64,
    /// `projection_class_embeddings_input_dim` of SDXL's `addition_embed_type: "text_time"`
    /// (0 = none).
    pub add_embedding_in: u64,
}

impl UNetShape {
    /// One forward pass over a `lh × lw` latent with `m` text tokens.
    pub fn walk(&self, lh: u64, lw: u64, m: u64) -> Walk {
        let mut w = Walk::default();
        let n_levels = self.channels.len();
        let c0 = self.channels[0];
        let temb = 4 * c0;
        let px = |level: usize| (lh >> level).max(1) * (lw >> level).max(1);
        // `get_timestep_embedding` (arange, exp, outer product, sin, cos, cat, …) and the
        // embedding MLP's SiLU: a dozen kernels on a few thousand elements.
        w.small_ops(12.0);
        w.conv(3, self.in_channels, c0, px(0));
        w.linear(c0, temb, true, 1);
        w.linear(temb, temb, true, 1);
        if self.add_embedding_in > 0 {
            w.linear(self.add_embedding_in, temb, true, 1);
            w.linear(temb, temb, true, 1);
        }
        // Down path: every resnet/attention output and every downsample is kept for the skip
        // connections of the up path.
        let mut skips = (px(0) * c0) as f64;
        let mut cin = c0;
        for (i, &c) in self.channels.iter().enumerate() {
            for j in 0..self.layers_per_block {
                resnet(&mut w, if j == 0 { cin } else { c }, c, temb, px(i));
                if self.depth[i] > 0 {
                    transformer_2d(
                        &mut w,
                        c,
                        self.depth[i],
                        self.heads[i],
                        self.cross_dim,
                        px(i),
                        m,
                    );
                }
                skips += (px(i) * c) as f64;
            }
            if i + 1 < n_levels {
                w.conv(3, c, c, px(i + 1)); // Downsample2D, stride 2
                skips += (px(i + 1) * c) as f64;
            }
            cin = c;
        }
        let last = n_levels - 1;
        let cl = self.channels[last];
        resnet(&mut w, cl, cl, temb, px(last));
        transformer_2d(
            &mut w,
            cl,
            self.depth[last].max(1),
            self.heads[last],
            self.cross_dim,
            px(last),
            m,
        );
        resnet(&mut w, cl, cl, temb, px(last));
        // Up path: level `last − i`, layers_per_block + 1 resnets each taking one skip.
        let mut out = cl;
        for i in 0..n_levels {
            let level = last - i;
            let prev = out;
            out = self.channels[level];
            let input = self.channels[level.saturating_sub(1)];
            let n = self.layers_per_block + 1;
            for j in 0..n {
                let skip = if j == n - 1 { input } else { out };
                let rin = if j == 0 { prev } else { out };
                // `torch.cat([hidden_states, res_hidden_states], dim=1)`.
                w.chain((rin + skip) * px(level), &[UNARY_PASSES], 0.0, 0.0);
                resnet(&mut w, rin + skip, out, temb, px(level));
                if self.depth[level] > 0 {
                    transformer_2d(
                        &mut w,
                        out,
                        self.depth[level],
                        self.heads[level],
                        self.cross_dim,
                        px(level),
                        m,
                    );
                }
            }
            if level > 0 {
                // Upsample2D: nearest ×2 (`F.interpolate`), then the convolution.
                w.chain(out * px(level - 1), &[UNARY_PASSES], 1.25, 1.0);
                w.conv(3, out, out, px(level - 1));
            }
        }
        w.norm(c0);
        w.chain(c0 * px(0), &[NORM_PASSES, UNARY_PASSES], 3.0, 2.0);
        w.conv(3, c0, self.out_channels, px(0));
        w.live_elements += skips;
        w
    }
}

/// `FluxTransformer2DModel`'s shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FluxShape {
    /// `num_attention_heads` × `attention_head_dim`.
    pub heads: u64,
    pub head_dim: u64,
    /// `num_layers` (double-stream blocks) and `num_single_layers`.
    pub double_blocks: u64,
    pub single_blocks: u64,
    /// `in_channels`: 16 latent channels packed 2 × 2 = 64.
    pub in_channels: u64,
    pub joint_attention_dim: u64,
    pub pooled_projection_dim: u64,
    /// `guidance_embeds`: FLUX.1-dev's distilled guidance input (schnell has none).
    pub guidance_embeds: bool,
}

impl FluxShape {
    /// One forward pass over `n_img` image tokens and `n_txt` text tokens.
    pub fn walk(&self, n_img: u64, n_txt: u64) -> Walk {
        let mut w = Walk::default();
        let d = self.heads * self.head_dim;
        let n = n_img + n_txt;
        w.linear(self.in_channels, d, true, n_img); // x_embedder
        w.linear(self.joint_attention_dim, d, true, n_txt); // context_embedder
        let embedders = if self.guidance_embeds { 2 } else { 1 };
        for _ in 0..embedders {
            w.linear(256, d, true, 1); // timestep / guidance embedder
            w.linear(d, d, true, 1);
        }
        w.linear(self.pooled_projection_dim, d, true, 1); // pooled text embedder
        w.linear(d, d, true, 1);
        for _ in 0..self.double_blocks {
            w.blocks += 1;
            for tokens in [n_img, n_txt] {
                let dt = d * tokens;
                w.small_ops(1.0); // SiLU of the embedding
                w.linear(d, 6 * d, true, 1); // AdaLayerNormZero
                // LayerNorm, `* (1 + scale)`, `+ shift`.
                w.chain(dt, &[NORM_PASSES, UNARY_PASSES, UNARY_PASSES], 2.0, 1.0);
                for _ in 0..3 {
                    w.linear(d, d, true, tokens); // q, k, v
                }
                w.params += 2 * self.head_dim; // RMSNorm of q and k
                w.tensors += 2;
                for _ in 0..2 {
                    w.chain(dt, &RMS_NORM, 0.0, 0.0); // fused into the concatenation below
                }
                w.linear(d, d, true, tokens); // out
                // `gate_msa * attn_output`, `+ hidden_states`, norm2, modulation.
                w.residual_then_norm(dt, &[UNARY_PASSES], true);
                w.linear(d, 4 * d, true, tokens); // ff
                w.chain(4 * dt, &[UNARY_PASSES], 2.0, 1.0); // GELU (tanh)
                w.linear(4 * d, d, true, tokens);
                // `gate_mlp * ff_output`, `+ hidden_states`.
                w.chain(dt, &[UNARY_PASSES, BINARY_PASSES], 3.0, 1.0);
            }
            self.joint_attention(&mut w, n);
            w.live(n as f64 * (d + d + 4 * d + 4 * d) as f64);
        }
        // `torch.cat([encoder_hidden_states, hidden_states], dim=1)` into the single stream.
        w.chain(d * n, &[UNARY_PASSES], 2.0, 1.0);
        for _ in 0..self.single_blocks {
            w.blocks += 1;
            let dn = d * n;
            w.small_ops(1.0);
            w.linear(d, 3 * d, true, 1); // AdaLayerNormZeroSingle
            w.chain(dn, &[NORM_PASSES, UNARY_PASSES, UNARY_PASSES], 2.0, 1.0);
            for _ in 0..3 {
                w.linear(d, d, true, n); // q, k, v
            }
            w.params += 2 * self.head_dim;
            w.tensors += 2;
            for _ in 0..2 {
                w.chain(dn, &RMS_NORM, 0.0, 0.0);
            }
            self.joint_attention(&mut w, n);
            w.linear(d, 4 * d, true, n); // proj_mlp
            w.chain(4 * dn, &[UNARY_PASSES], 2.0, 1.0); // GELU (tanh)
            // `torch.cat([attn_output, mlp_hidden_states], dim=2)` (a compiler writes both
            // into one buffer).
            w.chain(5 * dn, &[UNARY_PASSES], 0.0, 0.0);
            w.linear(5 * d, d, true, n); // proj_out over [attention, mlp]
            // `gate * proj_out(...)`, `residual +`.
            w.chain(dn, &[UNARY_PASSES, BINARY_PASSES], 3.0, 1.0);
            // Residual, q/k/v, the MLP and its GELU, the concatenation.
            w.live(n as f64 * (d + 3 * d + 4 * d + 4 * d + 5 * d) as f64);
        }
        w.linear(d, 2 * d, true, 1); // norm_out
        w.linear(d, self.in_channels, true, n_img); // proj_out
        w
    }
}

impl FluxShape {
    /// The joint attention over `n` tokens: q, k and v of both streams concatenated
    /// (`torch.cat` × 3), RoPE on q and k, SDPA. Fused, the RMS norms, the concatenation and
    /// the rotation are one kernel per tensor (read, write).
    fn joint_attention(&self, w: &mut Walk, n: u64) {
        let d = self.heads * self.head_dim;
        w.chain(3 * d * n, &[UNARY_PASSES], 2.0, 3.0);
        for _ in 0..2 {
            w.chain(d * n, &ROPE, 0.0, 0.0);
        }
        w.attention(n, n, d, self.heads);
    }
}

/// `SD3Transformer2DModel`'s shape (SD3 Medium, SD3.5 Medium and Large).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sd3Shape {
    pub heads: u64,
    pub head_dim: u64,
    pub layers: u64,
    /// Latent channels (16) and `patch_size` (2).
    pub in_channels: u64,
    pub patch: u64,
    pub joint_attention_dim: u64,
    pub pooled_projection_dim: u64,
    /// `qk_norm: "rms_norm"` (SD3.5).
    pub qk_norm: bool,
    /// `dual_attention_layers`: how many of the first blocks carry a second self-attention
    /// (SD3.5 Medium: 0 … 12).
    pub dual_attention_layers: u64,
    /// `pos_embed_max_size`: PatchEmbed's sin-cos table of max² × width, a persistent buffer the
    /// checkpoint stores and the GPU holds (not in `parameters()`).
    pub pos_embed_max_size: u64,
}

impl Sd3Shape {
    /// One forward pass over `n_img` image tokens and `n_txt` text tokens.
    pub fn walk(&self, n_img: u64, n_txt: u64) -> Walk {
        let mut w = Walk::default();
        let d = self.heads * self.head_dim;
        let n = n_img + n_txt;
        let patch_px = self.patch * self.patch;
        w.conv(self.patch, self.in_channels, d, n_img); // PatchEmbed proj (k = stride = patch)
        w.params += self.pos_embed_max_size * self.pos_embed_max_size * d;
        w.linear(256, d, true, 1);
        w.linear(d, d, true, 1);
        w.linear(self.pooled_projection_dim, d, true, 1);
        w.linear(d, d, true, 1);
        w.linear(self.joint_attention_dim, d, true, n_txt); // context_embedder
        let qk = if self.qk_norm { 2 * self.head_dim } else { 0 };
        for i in 0..self.layers {
            w.blocks += 1;
            let last = i + 1 == self.layers; // context_pre_only
            let dual = i < self.dual_attention_layers;
            let streams: &[u64] = if last { &[n_img] } else { &[n_img, n_txt] };
            w.small_ops(2.0); // SiLU of the embedding, per stream
            w.linear(d, if dual { 9 } else { 6 } * d, true, 1); // norm1
            w.linear(d, if last { 2 } else { 6 } * d, true, 1); // norm1_context
            // AdaLayerNormZero on both streams: LayerNorm, `* (1 + scale)`, `+ shift`.
            w.chain(d * n, &[NORM_PASSES, UNARY_PASSES, UNARY_PASSES], 2.0, 2.0);
            for _ in 0..3 {
                w.linear(d, d, true, n_img); // to_q, to_k, to_v
                w.linear(d, d, true, n_txt); // add_q, add_k, add_v
            }
            w.params += 2 * qk;
            if self.qk_norm {
                for _ in 0..2 {
                    w.chain(d * n, &RMS_NORM, 0.0, 0.0);
                }
            }
            // `torch.cat` of the two streams' q, k and v (JointAttnProcessor2_0).
            w.chain(3 * d * n, &[UNARY_PASSES], 2.0, 3.0);
            w.attention(n, n, d, self.heads);
            w.linear(d, d, true, n_img); // to_out
            if !last {
                w.linear(d, d, true, n_txt); // to_add_out
            }
            if dual {
                for _ in 0..4 {
                    w.linear(d, d, true, n_img);
                }
                w.params += qk;
                if self.qk_norm {
                    for _ in 0..2 {
                        w.chain(d * n_img, &RMS_NORM, 0.0, 0.0);
                    }
                }
                w.attention(n_img, n_img, d, self.heads);
                w.chain(d * n_img, &[UNARY_PASSES, BINARY_PASSES], 3.0, 1.0);
            }
            for &t in streams {
                // gate, `+ residual`, norm2, modulation; GELU (tanh) over 4d; gate, `+`.
                w.residual_then_norm(d * t, &[UNARY_PASSES], true);
                w.chain(4 * d * t, &[UNARY_PASSES], 2.0, 1.0);
                w.chain(d * t, &[UNARY_PASSES, BINARY_PASSES], 3.0, 1.0);
            }
            w.linear(d, 4 * d, true, n_img);
            w.linear(4 * d, d, true, n_img);
            if !last {
                w.linear(d, 4 * d, true, n_txt);
                w.linear(4 * d, d, true, n_txt);
            }
            w.live(n as f64 * (d + d + 3 * d + 4 * d + 4 * d) as f64);
        }
        w.linear(d, 2 * d, true, 1); // norm_out
        w.linear(d, patch_px * self.in_channels, true, n_img); // proj_out
        w
    }
}

/// A CLIP text tower (`CLIPTextModel`; with `projection` a `CLIPTextModelWithProjection`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClipTextShape {
    pub hidden: u64,
    pub layers: u64,
    pub heads: u64,
    pub intermediate: u64,
    pub vocab: u64,
    pub max_positions: u64,
    /// `projection_dim` of `text_projection` (no bias), 0 = none.
    pub projection: u64,
}

impl ClipTextShape {
    pub fn walk(&self, tokens: u64) -> Walk {
        let mut w = Walk::default();
        let h = self.hidden;
        w.weight(self.vocab * h);
        w.weight(self.max_positions * h);
        for _ in 0..self.layers {
            w.blocks += 1;
            let th = tokens * h;
            w.norm(h);
            w.chain(th, &[NORM_PASSES], 2.0, 1.0);
            for _ in 0..4 {
                w.linear(h, h, true, tokens);
            }
            w.attention(tokens, tokens, h, self.heads);
            w.norm(h);
            w.residual_then_norm(th, &[], false);
            w.linear(h, self.intermediate, true, tokens);
            // quick_gelu `x * sigmoid(1.702 x)`: scale, sigmoid, product.
            w.chain(
                tokens * self.intermediate,
                &[UNARY_PASSES, UNARY_PASSES, BINARY_PASSES],
                2.0,
                1.0,
            );
            w.linear(self.intermediate, h, true, tokens);
            w.chain(th, &[BINARY_PASSES], 3.0, 1.0);
            w.live(tokens as f64 * (2 * h + 2 * self.intermediate) as f64);
        }
        w.norm(h);
        if self.projection > 0 {
            w.linear(h, self.projection, false, 1);
        }
        w
    }
}

/// A T5 v1.1 encoder (`T5EncoderModel`: gated-GELU feed-forward, RMS norms without bias,
/// relative position buckets in the first layer only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct T5Shape {
    pub d_model: u64,
    pub d_ff: u64,
    pub layers: u64,
    pub heads: u64,
    pub d_kv: u64,
    pub vocab: u64,
    pub buckets: u64,
}

impl T5Shape {
    pub fn walk(&self, tokens: u64) -> Walk {
        let mut w = Walk::default();
        let (d, inner) = (self.d_model, self.heads * self.d_kv);
        w.weight(self.vocab * d);
        w.params += self.buckets * self.heads;
        for _ in 0..self.layers {
            w.blocks += 1;
            let td = tokens * d;
            w.params += d; // layer norm (weight only)
            w.tensors += 1;
            w.chain(td, &RMS_NORM, 2.0, 1.0); // T5LayerNorm: the same FP32 variance
            for _ in 0..3 {
                w.linear(d, inner, false, tokens);
            }
            w.attention(tokens, tokens, inner, self.heads);
            // The position bias is added to stored scores and softmaxed in FP32
            // (`T5Attention.forward`: matmul, `+= position_bias`, softmax, matmul).
            w.chain(
                self.heads * tokens * tokens,
                &[BINARY_PASSES, 3.0, UNARY_PASSES],
                3.0,
                2.0,
            );
            w.linear(inner, d, false, tokens);
            w.params += d;
            w.tensors += 1;
            w.chain(td, &[BINARY_PASSES], 0.0, 0.0);
            w.chain(td, &RMS_NORM, 3.0, 1.0);
            w.linear(d, self.d_ff, false, tokens); // wi_0
            w.linear(d, self.d_ff, false, tokens); // wi_1
            // gelu_new in Python (`NewGELUActivation`: pow, mul, add, mul, tanh, add, mul,
            // mul), then `* wi_1(x)`.
            w.chain(tokens * self.d_ff, &[UNARY_PASSES; 8], 3.0, 1.0);
            w.chain(tokens * self.d_ff, &[BINARY_PASSES], 0.0, 0.0);
            w.linear(self.d_ff, d, false, tokens); // wo
            w.chain(td, &[BINARY_PASSES], 0.0, 0.0);
            w.live(tokens as f64 * (2 * d + 3 * self.d_ff) as f64);
        }
        w.params += d; // final_layer_norm
        w
    }
}

/// `AutoencoderKL`'s shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VaeShape {
    /// `block_out_channels`.
    pub channels: Vec<u64>,
    pub layers_per_block: u64,
    pub latent_channels: u64,
    /// `use_quant_conv` / `use_post_quant_conv` (SD 1.x/2.x/XL: yes; SD3 and Flux: no).
    pub quant_convs: bool,
}

impl VaeShape {
    /// The encoder's weights (txt2img never runs it; it is loaded with the pipeline). FLOPs at
    /// `h × w` pixels.
    pub fn encoder(&self, h: u64, w_px: u64) -> Walk {
        let mut w = Walk::default();
        let px = |level: usize| (h >> level).max(1) * (w_px >> level).max(1);
        let n = self.channels.len();
        w.conv(3, 3, self.channels[0], px(0));
        let mut cin = self.channels[0];
        for (i, &c) in self.channels.iter().enumerate() {
            for j in 0..self.layers_per_block {
                resnet(&mut w, if j == 0 { cin } else { c }, c, 0, px(i));
            }
            if i + 1 < n {
                w.conv(3, c, c, px(i + 1));
            }
            cin = c;
        }
        self.mid(&mut w, cin, px(n - 1));
        w.norm(cin);
        w.conv(3, cin, 2 * self.latent_channels, px(n - 1));
        if self.quant_convs {
            w.conv(
                1,
                2 * self.latent_channels,
                2 * self.latent_channels,
                px(n - 1),
            );
        }
        w
    }

    /// The decoder from a latent to `h × w` pixels: what txt2img runs once per image.
    pub fn decoder(&self, h: u64, w_px: u64) -> Walk {
        let mut w = Walk::default();
        let n = self.channels.len();
        let px = |level: usize| (h >> level).max(1) * (w_px >> level).max(1);
        let cl = self.channels[n - 1];
        if self.quant_convs {
            w.conv(1, self.latent_channels, self.latent_channels, px(n - 1));
        }
        w.conv(3, self.latent_channels, cl, px(n - 1));
        self.mid(&mut w, cl, px(n - 1));
        let mut out = cl;
        for i in 0..n {
            let level = n - 1 - i;
            let prev = out;
            out = self.channels[level];
            for j in 0..=self.layers_per_block {
                resnet(&mut w, if j == 0 { prev } else { out }, out, 0, px(level));
            }
            if level > 0 {
                // Upsample2D: the nearest-neighbour copy at twice the size (Diffusers makes it
                // in float32 when the VAE runs in bfloat16), then the convolution.
                w.chain(out * px(level - 1), &[UNARY_PASSES], 1.25, 1.0);
                w.conv(3, out, out, px(level - 1));
                w.live((px(level) * out + 3 * px(level - 1) * out) as f64);
            }
        }
        w.norm(self.channels[0]);
        w.chain(
            self.channels[0] * px(0),
            &[NORM_PASSES, UNARY_PASSES],
            3.0,
            2.0,
        );
        w.conv(3, self.channels[0], 3, px(0));
        w
    }

    /// `UNetMidBlock2D`: resnet, single-head self-attention over every pixel, resnet.
    fn mid(&self, w: &mut Walk, c: u64, pixels: u64) {
        resnet(w, c, c, 0, pixels);
        w.blocks += 1;
        w.norm(c);
        // GroupNorm and the NCHW ↔ tokens copies around the attention, `+ residual`,
        // `/ rescale_output_factor`.
        w.chain(c * pixels, &[NORM_PASSES, UNARY_PASSES], 3.0, 2.0);
        for _ in 0..4 {
            w.linear(c, c, true, pixels);
        }
        w.attention(pixels, pixels, c, 1);
        w.chain(
            c * pixels,
            &[UNARY_PASSES, BINARY_PASSES, UNARY_PASSES],
            3.0,
            1.0,
        );
        resnet(w, c, c, 0, pixels);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `ResnetBlock2D` of 320 channels at 64 × 64 with SD's time embedding, as eager PyTorch
    /// runs it (diffusers `models/resnet.py`, `ResnetBlock2D.forward`): GroupNorm, SiLU, conv1
    /// and its bias add, the embedding's SiLU and Linear, `+ temb`, GroupNorm, SiLU, conv2 and
    /// its bias add, `+ input_tensor`, `/ output_scale_factor`: 13 kernels. Passes over the
    /// 320 × 4096 tensor: 3 + 2, 2, 2 + 3 + 2, 2, 3 + 2 = 21; fused, three chains of 3.
    #[test]
    fn a_resnet_block_launches_what_eager_pytorch_launches() {
        let mut w = Walk::default();
        resnet(&mut w, 320, 320, 1280, 4096);
        assert_eq!(w.kernels, 13.0);
        let t = 320.0 * 4096.0;
        assert_eq!(w.eager_elements, 21.0 * t);
        assert_eq!(w.fused_elements, 9.0 * t);
        assert_eq!(w.conv_flops, 2.0 * 2.0 * 9.0 * 320.0 * 320.0 * 4096.0);
        assert_eq!(w.linears, 1);
        // conv1, conv2 (weight and bias each), the embedding Linear's two, two norms' two.
        assert_eq!(w.tensors, 10);
    }

    /// A GEMM's tiles run in waves over the SMs: 2^b × √2 tiles per sample × the samples, over
    /// 108 SMs (A100). 90 tiles (bucket 6) fill 90 of 108; a thousand tiles all but a sliver.
    #[test]
    fn waves_leave_the_last_one_partly_idle() {
        let w = waves(6, 1.0, 108.0);
        assert!((w - 64.0 * std::f64::consts::SQRT_2 / 108.0).abs() < 1e-12);
        assert!(waves(10, 1.0, 108.0) > 0.9);
        assert_eq!(tile_bucket(4096, 320), 8); // 64 × 5 = 320 tiles
        assert_eq!(tile_bucket(1, 1), 0);
    }
}
