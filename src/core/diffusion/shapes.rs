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
}

impl Walk {
    fn weight(&mut self, w: u64) {
        self.params += w;
        self.largest_tensor = self.largest_tensor.max(w);
    }
    fn bias(&mut self, b: u64) {
        self.params += b;
    }
    /// A k×k convolution `cin → cout` (with bias) producing `pixels` outputs per channel.
    fn conv(&mut self, k: u64, cin: u64, cout: u64, pixels: u64) {
        let w = k * k * cin * cout;
        self.weight(w);
        self.bias(cout);
        self.flops += 2.0 * w as f64 * pixels as f64;
    }
    /// A linear layer over `tokens` rows.
    fn linear(&mut self, i: u64, o: u64, bias: bool, tokens: u64) {
        self.weight(i * o);
        if bias {
            self.bias(o);
        }
        self.flops += 2.0 * (i * o) as f64 * tokens as f64;
    }
    /// A norm with weight and bias of width `c` (GroupNorm, LayerNorm).
    fn norm(&mut self, c: u64) {
        self.params += 2 * c;
    }
    /// Scaled dot-product attention: `QKᵀ` and `softmax · V` over `width` channels.
    fn attention(&mut self, nq: u64, nkv: u64, width: u64, heads: u64) {
        self.flops += 4.0 * nq as f64 * nkv as f64 * width as f64;
        let scores = heads as f64 * nq as f64 * nkv as f64;
        self.score_elements = self.score_elements.max(scores);
        self.score_traffic_elements += scores;
    }
    fn live(&mut self, elements: f64) {
        self.live_elements = self.live_elements.max(elements);
    }
}

/// `ResnetBlock2D` (`cin → cout` at `pixels`, with a time-embedding projection of width `temb`
/// when non-zero). Alive at its widest: its input (kept for the residual), the norm and SiLU
/// outputs and the first convolution's output.
fn resnet(w: &mut Walk, cin: u64, cout: u64, temb: u64, pixels: u64) {
    w.blocks += 1;
    w.norm(cin);
    w.conv(3, cin, cout, pixels);
    if temb > 0 {
        w.linear(temb, cout, true, 1);
    }
    w.norm(cout);
    w.conv(3, cout, cout, pixels);
    if cin != cout {
        w.conv(1, cin, cout, pixels);
    }
    w.live(pixels as f64 * (3 * cin + cout) as f64);
}

/// `Transformer2DModel` with `depth` `BasicTransformerBlock`s of width `c` over `n` tokens,
/// cross-attending to `m` text tokens of width `cross` (GEGLU feed-forward, inner 4c).
fn transformer_2d(w: &mut Walk, c: u64, depth: u64, heads: u64, cross: u64, n: u64, m: u64) {
    w.norm(c);
    w.linear(c, c, true, n); // proj_in
    for _ in 0..depth {
        w.blocks += 1;
        w.norm(c);
        for _ in 0..3 {
            w.linear(c, c, false, n); // attn1 q, k, v
        }
        w.attention(n, n, c, heads);
        w.linear(c, c, true, n); // attn1 out
        w.norm(c);
        w.linear(c, c, false, n); // attn2 q
        w.linear(cross, c, false, m); // attn2 k
        w.linear(cross, c, false, m); // attn2 v
        w.attention(n, m, c, heads);
        w.linear(c, c, true, n); // attn2 out
        w.norm(c);
        w.linear(c, 8 * c, true, n); // GEGLU proj (value and gate)
        w.linear(4 * c, c, true, n); // ff out
        // Residual, normed input, the GEGLU projection and its gated half.
        w.live(n as f64 * (c + c + 8 * c + 4 * c) as f64);
    }
    w.linear(c, c, true, n); // proj_out
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
                w.conv(3, out, out, px(level - 1)); // Upsample2D: nearest ×2, then conv
            }
        }
        w.norm(c0);
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
                w.linear(d, 6 * d, true, 1); // AdaLayerNormZero
                for _ in 0..4 {
                    w.linear(d, d, true, tokens); // q, k, v, out
                }
                w.params += 2 * self.head_dim; // RMSNorm of q and k
                w.linear(d, 4 * d, true, tokens); // ff
                w.linear(4 * d, d, true, tokens);
            }
            w.attention(n, n, d, self.heads);
            w.live(n as f64 * (d + d + 4 * d + 4 * d) as f64);
        }
        for _ in 0..self.single_blocks {
            w.blocks += 1;
            w.linear(d, 3 * d, true, 1); // AdaLayerNormZeroSingle
            for _ in 0..3 {
                w.linear(d, d, true, n); // q, k, v
            }
            w.params += 2 * self.head_dim;
            w.attention(n, n, d, self.heads);
            w.linear(d, 4 * d, true, n); // proj_mlp
            w.linear(5 * d, d, true, n); // proj_out over [attention, mlp]
            // Residual, q/k/v, the MLP and its GELU, the concatenation.
            w.live(n as f64 * (d + 3 * d + 4 * d + 4 * d + 5 * d) as f64);
        }
        w.linear(d, 2 * d, true, 1); // norm_out
        w.linear(d, self.in_channels, true, n_img); // proj_out
        w
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
            w.linear(d, if dual { 9 } else { 6 } * d, true, 1); // norm1
            w.linear(d, if last { 2 } else { 6 } * d, true, 1); // norm1_context
            for _ in 0..3 {
                w.linear(d, d, true, n_img); // to_q, to_k, to_v
                w.linear(d, d, true, n_txt); // add_q, add_k, add_v
            }
            w.params += 2 * qk;
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
                w.attention(n_img, n_img, d, self.heads);
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
            w.norm(h);
            for _ in 0..4 {
                w.linear(h, h, true, tokens);
            }
            w.attention(tokens, tokens, h, self.heads);
            w.norm(h);
            w.linear(h, self.intermediate, true, tokens);
            w.linear(self.intermediate, h, true, tokens);
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
            w.params += d; // layer norm (weight only)
            for _ in 0..3 {
                w.linear(d, inner, false, tokens);
            }
            w.attention(tokens, tokens, inner, self.heads);
            w.linear(inner, d, false, tokens);
            w.params += d;
            w.linear(d, self.d_ff, false, tokens); // wi_0
            w.linear(d, self.d_ff, false, tokens); // wi_1
            w.linear(self.d_ff, d, false, tokens); // wo
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
                w.conv(3, out, out, px(level - 1));
                w.live((px(level) * out + 3 * px(level - 1) * out) as f64);
            }
        }
        w.norm(self.channels[0]);
        w.conv(3, self.channels[0], 3, px(0));
        w
    }

    /// `UNetMidBlock2D`: resnet, single-head self-attention over every pixel, resnet.
    fn mid(&self, w: &mut Walk, c: u64, pixels: u64) {
        resnet(w, c, c, 0, pixels);
        w.blocks += 1;
        w.norm(c);
        for _ in 0..4 {
            w.linear(c, c, true, pixels);
        }
        w.attention(pixels, pixels, c, 1);
        resnet(w, c, c, 0, pixels);
    }
}
