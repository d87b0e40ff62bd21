//! llama.cpp's `--tensor-split a,b,…` (`-ts`): each GPU's share of the GPU layers, so each GPU's
//! memory is its own layers, not an even share.
//!
//! llama.cpp `src/llama-model.cpp` `llama_model::load_tensors`: the proportions are made
//! cumulative and normalised (`splits[i] = Σ_{j≤i} ts[j] ÷ Σ ts`; all zero: by each device's free
//! memory, an even split over identical GPUs), and GPU slot `j` of the `act_gpu_layers` slots
//! (the offloaded repeating layers in order, then the output layer) goes to device
//! `upper_bound(splits, j ÷ act_gpu_layers)`: the first device whose cumulative share exceeds the
//! slot's position. headroom keeps its own `-ngl k` convention (k repeating layers on the GPUs,
//! the output layer with them only when every layer is), so the slots are those k layers and,
//! with all of them, the output layer.
//!
//! With llama.cpp's default `--split-mode layer` the GPUs run their layers one after another,
//! so on a machine of identical GPUs the split moves memory between them, not the decode time.

use super::capacity::{offload_host_bytes, per_layer_bytes};
use super::note::Note;
use super::{Job, Placement, Run};
use crate::core::estimate::Estimate;
use crate::core::fit::{OffloadStyle, Verdict};
use crate::core::scenario::SplitStyle;
use crate::core::units::Bytes;

/// What one GPU holds under a tensor split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceShare {
    /// Repeating layers on this GPU.
    pub layers: u64,
    /// Whether the output layer (and the other outer weights) is on it.
    pub output: bool,
}

/// The split over `devices` GPUs as llama.cpp normalises it: the first `devices` proportions
/// (missing ones 0), cumulative and divided by their sum; an even split when they sum to 0.
pub fn cumulative(split: &[f32], devices: usize) -> Vec<f64> {
    let n = devices.max(1);
    let mut w: Vec<f64> = (0..n)
        .map(|i| split.get(i).map_or(0.0, |x| f64::from(*x).max(0.0)))
        .collect();
    if !w.iter().any(|x| *x > 0.0 && x.is_finite()) {
        w = vec![1.0; n];
    }
    let sum: f64 = w.iter().sum();
    let mut acc = 0.0;
    w.iter()
        .map(|x| {
            acc += x;
            acc / sum
        })
        .collect()
}

/// Each GPU's layers when `k` of the model's `layers` repeating layers are on `devices` GPUs
/// split by `split` (the output layer with them when `k ≥ layers`).
pub fn shares(split: &[f32], devices: usize, layers: u64, k: u64) -> Vec<DeviceShare> {
    let splits = cumulative(split, devices);
    let mut out = vec![
        DeviceShare {
            layers: 0,
            output: false,
        };
        splits.len()
    ];
    let k = k.min(layers);
    let output = k >= layers;
    let slots = k + u64::from(output);
    for j in 0..slots {
        let x = j as f64 / slots as f64;
        // upper_bound: the first cumulative share greater than the slot's position.
        let d = splits
            .iter()
            .position(|c| *c > x)
            .unwrap_or(splits.len() - 1);
        if output && j == slots - 1 {
            out[d].output = true;
        } else {
            out[d].layers += 1;
        }
    }
    out
}

/// What each GPU needs for its share: the per-device fixed costs (runtime, compute buffers) on
/// every GPU that holds anything, its layers with their KV cache, and the outer weights on the
/// GPU with the output layer. `e1` is the one-GPU estimate.
pub fn device_bytes(e1: &Estimate, shares: &[DeviceShare]) -> Vec<Bytes> {
    let per = per_layer_bytes(e1);
    shares
        .iter()
        .map(|s| {
            if s.layers == 0 && !s.output {
                return Bytes::ZERO;
            }
            let outer = if s.output {
                e1.workload.outer_weights
            } else {
                Bytes::ZERO
            };
            e1.workload
                .fixed_per_device
                .saturating_add(per.saturating_mul(s.layers))
                .saturating_add(outer)
        })
        .collect()
}

/// `k` of the layers on the machine's discrete GPUs split by `split`, the rest run by the CPU:
/// fits when every GPU holds its share and RAM the rest; otherwise verdict `None` with the
/// fullest GPU's shortfall. `None` on one GPU or unified memory, where there is nothing to split.
pub fn place(job: &Job, k: u64, split: &[f32]) -> Option<Placement> {
    let g = job.gpus.as_ref().filter(|g| !g.unified && g.count > 1)?;
    let e1 = job.one_gpu();
    let l = e1.workload.layers.max(1);
    let k = k.min(l);
    let shares = shares(split, g.count.max(1) as usize, l, k);
    let need = device_bytes(e1, &shares);
    let fullest = need.iter().copied().max().unwrap_or(Bytes::ZERO);
    let ram_need = if k >= l {
        e1.host_total()
    } else {
        offload_host_bytes(e1, k)
    };
    let headroom = g
        .capacity
        .signed_sub(fullest)
        .min(job.ram.signed_sub(ram_need));
    let split_note = Note::TensorSplit {
        layers: shares.iter().map(|s| s.layers).collect(),
        bytes: need.clone(),
        output: shares.iter().position(|s| s.output),
        usable: g.capacity,
    };
    if fullest > g.capacity || ram_need > job.ram {
        let mut p = Placement::new(Verdict::None, k, ram_need, headroom, Run::Nothing);
        p.notes.push(split_note);
        p.notes.push(Note::AskedSplitShort {
            gpu_need: fullest,
            gpu_usable: g.capacity,
            ram_need,
            ram_usable: job.ram,
        });
        return Some(p);
    }
    let (speed, backend) = job.speed_as(e1, k, SplitStyle::CpuLayers);
    let run = Run::Inference { speed, backend };
    let mut p = if k >= l {
        Placement::new(Verdict::Gpu, l, ram_need, headroom, run)
    } else {
        let mut p = Placement::new(Verdict::Offload, k, ram_need, headroom, run);
        p.offload_style = Some(OffloadStyle::Layers);
        p.notes.push(Note::LayerOffload {
            gpu: k,
            layers: l,
            streamed: false,
        });
        p
    };
    p.notes.insert(0, split_note);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layers(v: &[DeviceShare]) -> Vec<u64> {
        v.iter().map(|s| s.layers).collect()
    }

    #[test]
    fn cumulative_shares_as_llama_cpp_normalises_them() {
        assert_eq!(cumulative(&[3.0, 1.0], 2), [0.75, 1.0]);
        // Missing entries are 0; entries past the devices are ignored; all zero is even.
        assert_eq!(cumulative(&[1.0], 2), [1.0, 1.0]);
        assert_eq!(cumulative(&[1.0, 1.0, 5.0], 2), [0.5, 1.0]);
        assert_eq!(cumulative(&[0.0, 0.0], 2), [0.5, 1.0]);
    }

    #[test]
    fn layers_follow_the_cumulative_split() {
        // 32 layers and the output layer on 2 GPUs, -ts 3,1: 33 slots, splits [0.75, 1.0];
        // slot j goes to GPU 0 while j/33 < 0.75, i.e. j ≤ 24: layers 0–24 (25) on GPU 0,
        // layers 25–31 (7) and the output layer (slot 32) on GPU 1.
        let s = shares(&[3.0, 1.0], 2, 32, 32);
        assert_eq!(layers(&s), [25, 7]);
        assert_eq!((s[0].output, s[1].output), (false, true));
        // Even: 33 slots, j/33 < 0.5 ⇔ j ≤ 16: 17 on GPU 0, 15 and the output on GPU 1.
        assert_eq!(layers(&shares(&[], 2, 32, 32)), [17, 15]);
        // -ngl 20 with -ts 1,1: 20 slots (no output), j/20 < 0.5 ⇔ j ≤ 9: 10 and 10.
        let h = shares(&[1.0, 1.0], 2, 32, 20);
        assert_eq!(layers(&h), [10, 10]);
        assert!(!h[0].output && !h[1].output);
        // -ts 1,0: everything on GPU 0.
        let one = shares(&[1.0, 0.0], 2, 32, 32);
        assert_eq!(layers(&one), [32, 0]);
        assert!(one[0].output);
        // Four GPUs, 80 layers, -ts 1,2,3,4: 81 slots, splits [0.1, 0.3, 0.6, 1.0]:
        // j < 8.1 → 9 (0–8), j < 24.3 → 16 (9–24), j < 48.6 → 24 (25–48), the rest 31 + output.
        assert_eq!(
            layers(&shares(&[1.0, 2.0, 3.0, 4.0], 4, 80, 80)),
            [9, 16, 24, 31]
        );
    }

    #[test]
    fn every_layer_is_placed_once() {
        for (split, n) in [
            (&[1.0f32, 1.0][..], 2),
            (&[0.3, 0.1, 0.6][..], 3),
            (&[][..], 8),
        ] {
            for k in [0u64, 1, 7, 31, 32, 40] {
                let s = shares(split, n, 32, k);
                assert_eq!(s.iter().map(|d| d.layers).sum::<u64>(), k.min(32));
                assert_eq!(s.iter().filter(|d| d.output).count(), usize::from(k >= 32));
            }
        }
    }
}
