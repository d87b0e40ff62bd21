//! A plausible dense shape for a model known only by its parameter count.

use super::{ModelSpec, ShapeSource};

impl ModelSpec {
    /// A plausible dense shape for a model known only by its parameter count, derived from the
    /// Llama 3 / Qwen 2.5 families (GQA, head_dim 128, SwiGLU with I ≈ 3.5·h, vocab 128k).
    /// Marked [`ShapeSource::Estimated`]; `nominal_params` keeps the asked P as the total.
    ///
    /// Layers L are interpolated log-linearly in P between real models' (P, L) anchors; the width
    /// solves `P = L·(2 + 2g + 10.5)·h² + e·V·h` for h (g = 1/8, the GQA ratio; e = 1 while the
    /// embedding is tied, 2 untied, ramped from 1 to 2 between 1.5B and 3B), rounded to heads of
    /// 128 (64 below h = 96): KV heads 1 below 16 heads, 2 below 32, 4 below 60, then 8 (Llama 3
    /// 70B/405B), the query heads a multiple of them. Every dimension (layers, heads, KV heads,
    /// width, MLP width) is non-decreasing in P, so a bigger model never needs less memory; the
    /// shape sums to within 12 % of P from 0.5B up (coarser below, where one head is a large part
    /// of the width). generic(70B) is Llama-3-70B's shape.
    pub fn generic(params: u64) -> ModelSpec {
        // (params, layers) anchors from real models: Qwen2.5-0.5B 24, Qwen2.5-1.5B 28,
        // Llama-3.2-3B 28, Llama-3-8B 32, Qwen2.5-14B 48, Qwen2.5-32B 64, Llama-3-70B 80,
        // Llama-3.1-405B 126 (monotone, so that depth never shrinks as P grows).
        const ANCHORS: [(f64, f64); 8] = [
            (0.5e9, 24.0),
            (1.5e9, 28.0),
            (3.0e9, 28.0),
            (8.0e9, 32.0),
            (14.0e9, 48.0),
            (32.0e9, 64.0),
            (70.0e9, 80.0),
            (405.0e9, 126.0),
        ];
        let p = (params.max(1_000_000)) as f64;
        let lp = p.ln();
        let l_cont = if p <= ANCHORS[0].0 {
            ANCHORS[0].1 * (p / ANCHORS[0].0).powf(0.25)
        } else if p >= ANCHORS[7].0 {
            ANCHORS[7].1 * (p / ANCHORS[7].0).powf(0.25)
        } else {
            let mut l = ANCHORS[7].1;
            for w in ANCHORS.windows(2) {
                let (p0, l0) = w[0];
                let (p1, l1) = w[1];
                if p >= p0 && p <= p1 {
                    let t = (lp - p0.ln()) / (p1.ln() - p0.ln());
                    l = l0 + t * (l1 - l0);
                    break;
                }
            }
            l
        };
        let layers = (l_cont.round() as u64).clamp(2, 4096);
        // One vocabulary for every size (the Llama 3 family's, 1B to 405B), so that a bigger model
        // never gets a smaller one (and smaller logits).
        let vocab: u64 = 128_256;
        let tied = p < 2e9;
        // Per layer: attention (2 + 2g)·h², gated MLP 3·3.5·h²; embeddings e·V·h. The continuous
        // depth and a smooth e keep h increasing with P.
        let g = 0.125;
        let a = l_cont * (2.0 + 2.0 * g + 3.0 * 3.5);
        let ramp = ((p / 1.5e9).ln() / 2f64.ln()).clamp(0.0, 1.0);
        let emb = (1.0 + ramp) * vocab as f64;
        let h = ((-emb + (emb * emb + 4.0 * a * p).sqrt()) / (2.0 * a)).max(64.0);
        let head_dim = 128u64.min(((h / 64.0).round() as u64 * 64).max(64));
        let x = h / head_dim as f64;
        let kv_heads: u64 = match x {
            x if x < 16.0 => 1,
            x if x < 32.0 => 2,
            x if x < 60.0 => 4,
            _ => 8,
        };
        let heads = ((x / kv_heads as f64).round() as u64).max(1) * kv_heads;
        let hidden = heads * head_dim;
        let intermediate = ((3.5 * hidden as f64 / 256.0).round() as u64 * 256).max(256);
        ModelSpec {
            name: format!("Generic {} model", crate::core::format::params(params)),
            arch: "generic".into(),
            layers,
            hidden,
            heads,
            kv_heads,
            head_dim,
            intermediate,
            vocab,
            tied_embeddings: tied,
            max_context: 131_072,
            source: ShapeSource::Estimated,
            nominal_params: Some(params),
            ..ModelSpec::default()
        }
    }
}
