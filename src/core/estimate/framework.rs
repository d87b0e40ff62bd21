//! What the training framework changes in the memory of one training step: the loss path, how
//! 4-bit layers keep activations, where checkpoints live, the sharding buffers and the caching
//! allocator's reserve. Every constant names its source; `docs/memory.md` explains the choices.

use crate::core::scenario::Framework;
use crate::core::units::Bytes;

/// Hugging Face transformers' causal-LM loss (src/transformers/loss/loss_utils.py,
/// `ForCausalLMLoss`): the 16-bit logits (2 B) are upcast with `logits.float()` (4 B), the
/// cross-entropy keeps its FP32 log-softmax (4 B), and backward materialises the FP32 gradient
/// of the log-softmax (4 B) and of the upcast logits (4 B): 18 B per logit element.
pub(super) const HF_LOSS_BYTES_PER_LOGIT: f64 = 18.0;
/// torchtune: labels are shifted in the dataset and the chunked loss
/// (torchtune/modules/loss/ce_chunked_output_loss.py, `CEWithChunkedOutputLoss`) upcasts one
/// chunk at a time: 16-bit logits (2 B) + one FP32 copy (4 B) + its log-softmax (4 B).
pub(super) const TORCHTUNE_LOSS_BYTES_PER_LOGIT: f64 = 10.0;
/// Unsloth computes the loss from the hidden states in chunks without materialising the logits
/// (unsloth_zoo/loss_utils.py, `fused_linear_cross_entropy`, on by default through
/// `UNSLOTH_ENABLE_CCE`): no per-token logits stay alive.
pub(super) const UNSLOTH_LOSS_BYTES_PER_LOGIT: f64 = 0.0;

/// bitsandbytes' 4-bit matmul keeps its own 16-bit copy of each adapted layer's input for
/// backward (bitsandbytes/autograd/_functions.py, `MatMul4Bit.forward` saves `A`, the input cast
/// to `bnb_4bit_compute_dtype`), a tensor of its own when PEFT's FP32 upcast (below) makes the
/// norms hand FP32 activations to the layer, which the adapter keeps as well
/// (peft/tuners/lora/bnb.py `Linear4bit.forward`).
pub(super) const BNB_SAVED_INPUT_BYTES: f64 = 2.0;
/// PEFT's `prepare_model_for_kbit_training` (peft/utils/other.py), which TRL's SFTTrainer
/// calls for a 4-bit model, casts every parameter that is not 4-bit (embedding, output head,
/// norms) from 16-bit to FP32: 2 more bytes per such parameter.
pub(super) const KBIT_FP32_UPCAST_EXTRA_BYTES: f64 = 2.0;

/// FSDP with `BackwardPrefetch.BACKWARD_PRE` (the default) holds the current and the next
/// unit's unsharded parameters and the current unit's unsharded gradients
/// (torch/distributed/fsdp/api.py, `BackwardPrefetch` docstring).
pub(super) const FSDP_UNSHARDED_PARAM_UNITS: u64 = 2;
pub(super) const FSDP_UNSHARDED_GRAD_UNITS: u64 = 1;

/// The CUDA context with cuBLAS/cuDNN handles, outside what PyTorch's allocator counts (the
/// 0.3–0.5 GiB CUDA context plus library workspaces; heuristic, see docs/memory.md).
pub const CUDA_CONTEXT: Bytes = Bytes(512 * 1024 * 1024);
/// What PyTorch's caching allocator reserves beyond what is allocated, as a fraction of the
/// allocated peak: blocks are rounded up and cached in 2 MiB / 20 MiB segments
/// (c10/cuda/CUDACachingAllocator.cpp, `kSmallBuffer`, `kLargeBuffer`), so freed activations
/// leave holes (heuristic, see docs/memory.md).
pub(super) const ALLOCATOR_RESERVE_FRACTION: f64 = 0.10;
/// With `expandable_segments:True`, which Unsloth sets in `PYTORCH_CUDA_ALLOC_CONF` on import
/// (unsloth/__init__.py, "Reduce VRAM usage by reducing fragmentation"), segments grow in place
/// and little is left unused.
pub(super) const EXPANDABLE_SEGMENTS_RESERVE_FRACTION: f64 = 0.03;

/// The behaviour of one framework.
pub(super) struct FrameworkProfile {
    /// Bytes per logit element (sequence × batch × vocab) of the loss path.
    pub(super) loss_bytes_per_logit: f64,
    /// How the loss path is counted, for the formula text.
    pub(super) loss_text: &'static str,
    /// QLoRA through bitsandbytes: each adapted layer's input is kept once more in 16-bit.
    pub(super) bnb_saves_layer_inputs: bool,
    /// QLoRA through PEFT's `prepare_model_for_kbit_training`: non-4-bit weights in FP32.
    pub(super) upcasts_unquantised_weights: bool,
    /// Activation checkpoints in host RAM (Unsloth's offloaded gradient checkpointing,
    /// unsloth/models/_utils.py `Unsloth_Offloaded_Gradient_Checkpointer`).
    pub(super) checkpoints_in_host_ram: bool,
    /// Distributed runs shard with FSDP FULL_SHARD (everything sharded, unsharded units in
    /// flight): accelerate's FSDP, and torchtune's distributed recipes (FSDP2 `fully_shard`).
    pub(super) shards_with_fsdp: bool,
    /// Model states counted the way DeepSpeed's estimators count them.
    pub(super) deepspeed_convention: bool,
    /// Caching-allocator reserve as a fraction of the allocated peak.
    pub(super) allocator_reserve: f64,
    pub(super) allocator_text: &'static str,
}

pub(super) fn profile(f: Framework) -> FrameworkProfile {
    let hf_loss = "2 B logits + 4 B FP32 upcast + 4 B log-softmax + 4 B its gradient + 4 B FP32 logits gradient (transformers ForCausalLMLoss)";
    let caching = "PyTorch caching allocator";
    match f {
        Framework::Transformers => FrameworkProfile {
            loss_bytes_per_logit: HF_LOSS_BYTES_PER_LOGIT,
            loss_text: hf_loss,
            bnb_saves_layer_inputs: true,
            upcasts_unquantised_weights: true,
            checkpoints_in_host_ram: false,
            shards_with_fsdp: false,
            deepspeed_convention: false,
            allocator_reserve: ALLOCATOR_RESERVE_FRACTION,
            allocator_text: caching,
        },
        Framework::Torchtune => FrameworkProfile {
            loss_bytes_per_logit: TORCHTUNE_LOSS_BYTES_PER_LOGIT,
            loss_text: "2 B logits + 4 B FP32 copy + 4 B log-softmax (torchtune chunked cross-entropy)",
            bnb_saves_layer_inputs: false,
            upcasts_unquantised_weights: false,
            checkpoints_in_host_ram: false,
            shards_with_fsdp: true,
            deepspeed_convention: false,
            allocator_reserve: ALLOCATOR_RESERVE_FRACTION,
            allocator_text: caching,
        },
        Framework::Unsloth => FrameworkProfile {
            loss_bytes_per_logit: UNSLOTH_LOSS_BYTES_PER_LOGIT,
            loss_text: "fused linear cross-entropy: logits never held whole (Unsloth)",
            bnb_saves_layer_inputs: false,
            upcasts_unquantised_weights: false,
            checkpoints_in_host_ram: true,
            shards_with_fsdp: false,
            deepspeed_convention: false,
            allocator_reserve: EXPANDABLE_SEGMENTS_RESERVE_FRACTION,
            allocator_text: "PyTorch caching allocator with expandable segments (set by Unsloth)",
        },
        // DeepSpeed runs through the HF Trainer (transformers/integrations/deepspeed.py):
        // transformers' loss, PEFT and bitsandbytes; only the model states are counted its way.
        Framework::DeepSpeed => FrameworkProfile {
            deepspeed_convention: true,
            ..profile(Framework::Transformers)
        },
        // Plain FSDP shards like torchtune, with transformers' loss.
        Framework::Fsdp => FrameworkProfile {
            loss_bytes_per_logit: HF_LOSS_BYTES_PER_LOGIT,
            loss_text: hf_loss,
            ..profile(Framework::Torchtune)
        },
    }
}
