//! Launch files for a cluster plan, in each engine's own spelling:
//! - training with DeepSpeed: `ds_config.json` (ZeRO stage, bucket sizes, batch sizes; the keys
//!   of <https://www.deepspeed.ai/docs/config-json/>), a hostfile (`host slots=N`, DeepSpeed's
//!   multi-node launcher docs, <https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node>)
//!   and `torchrun` on every node (`--nnodes --nproc-per-node --node-rank --master-addr
//!   --master-port`, <https://pytorch.org/docs/stable/elastic/run.html>);
//! - training with FSDP: an accelerate config (`distributed_type: FSDP`, `fsdp_config` keys of
//!   accelerate's `FullyShardedDataParallelPlugin`, `num_machines`, `machine_rank`,
//!   `main_process_ip`; <https://huggingface.co/docs/accelerate/usage_guides/fsdp>) and
//!   `accelerate launch --config_file … --machine_rank …`;
//! - tensor/pipeline-parallel training: Megatron-LM's `pretrain_gpt.py` under `torchrun`
//!   (`--tensor-model-parallel-size`, `--pipeline-model-parallel-size`, `--sequence-parallel`,
//!   `--use-distributed-optimizer`; megatron/training/arguments.py);
//! - serving with vLLM: `ray start --head` / `ray start --address` and `vllm serve
//!   --tensor-parallel-size --pipeline-parallel-size --distributed-executor-backend ray`
//!   (<https://docs.vllm.ai/en/latest/serving/distributed_serving.html>);
//! - serving with llama.cpp: `rpc-server -H 0.0.0.0 -p 50052` on the other machines and
//!   `llama-server --rpc host:port,…` (llama.cpp tools/rpc/README.md).

use super::launch::{LaunchSetting, Launcher, model_arg};
use super::launch_serving::serving_launch;
use super::text::shell;
use crate::core::catalog::Machine;
use crate::core::cluster::{
    ClusterCurvePoint, ClusterPick, Layout, ServeEngine, Sharding, TrainPlan,
};
use crate::core::precision::WeightPrecision;
use crate::core::scenario::{Checkpointing, Mode, Offload, Scenario};
use serde_json::json;

/// The port torchrun's rendezvous and Ray's head listen on in the emitted lines (defaults of
/// torch.distributed and Ray).
const MASTER_PORT: u16 = 29500;
const RAY_PORT: u16 = 6379;
const RPC_PORT: u16 = 50052;

/// The launch files of `point` (a node count of `pick`) for the scenario `s`.
pub fn cluster_launch(
    s: &Scenario,
    m: &Machine,
    pick: &ClusterPick,
    point: &ClusterCurvePoint,
) -> Vec<LaunchSetting> {
    if let Some(t) = &point.train {
        return training(s, m, pick, t);
    }
    match &point.serve {
        Some(p) if p.runs() => match p.engine {
            ServeEngine::Vllm => p
                .serving
                .as_ref()
                .and_then(|plan| serving_launch(s, plan))
                .map(|l| ray(p.nodes, l))
                .into_iter()
                .collect(),
            ServeEngine::LlamaRpc => vec![rpc(s, p.nodes)],
        },
        _ => Vec::new(),
    }
}

fn training(s: &Scenario, m: &Machine, pick: &ClusterPick, t: &TrainPlan) -> Vec<LaunchSetting> {
    // The plan's activation checkpointing (the planner may have turned it on to fit).
    let s = &Scenario {
        checkpointing: t.checkpointing,
        ..s.clone()
    };
    let l = t.layout;
    let gpn = pick.gpus_per_node;
    if l.tp > 1 || l.pp > 1 || l.ep > 1 {
        return vec![megatron(s, t, gpn)];
    }
    match l.sharding {
        Sharding::Fsdp | Sharding::Hsdp => vec![
            accelerate_fsdp(s, t, gpn),
            LaunchSetting {
                runtime: Launcher::AccelerateLaunch,
                title: "accelerate launch on every node".into(),
                text: "accelerate launch --config_file fsdp.yaml --machine_rank \"$NODE_RANK\" train.py".into(),
                note: format!(
                    "Run on each of the {} machines with NODE_RANK 0 … {}; set main_process_ip in fsdp.yaml to node 0's address ({}).",
                    t.nodes,
                    t.nodes - 1,
                    m.name
                ),
            },
        ],
        _ => vec![
            deepspeed_config(s, t),
            hostfile(t.nodes, gpn),
            torchrun(
                t.nodes,
                gpn,
                "train.py --deepspeed ds_config.json",
                "train.py is your training script (HF Trainer: TrainingArguments(deepspeed=\"ds_config.json\")).",
            ),
        ],
    }
}

/// DeepSpeed's configuration for the plan: batch sizes that multiply out (train_batch_size =
/// micro × accumulation × data-parallel ranks, which DeepSpeed checks), the ZeRO stage and its
/// buckets.
pub fn deepspeed_config(s: &Scenario, t: &TrainPlan) -> LaunchSetting {
    let l = t.layout;
    let stage = l.sharding.zero_stage();
    let mut zero = json!({ "stage": stage, "overlap_comm": true });
    // Buckets: DeepSpeed's defaults are 5e8 elements; 2e8 keeps the last (unhidden) bucket small
    // at the cost of more collectives (the DeepSpeed config docs' recommended range).
    if stage >= 1 {
        zero["reduce_bucket_size"] = json!(200_000_000_u64);
    }
    if stage == 1 || stage == 2 {
        zero["allgather_bucket_size"] = json!(200_000_000_u64);
        zero["contiguous_gradients"] = json!(true);
    }
    if stage == 3 {
        zero["stage3_prefetch_bucket_size"] = json!(50_000_000_u64);
        zero["stage3_param_persistence_threshold"] = json!(100_000_u64);
        zero["stage3_gather_16bit_weights_on_model_save"] = json!(true);
    }
    // ZeRO-Offload (DeepSpeed config docs: `offload_optimizer`, and `offload_param` under
    // stage 3 only), as the plan's memory and step time count it.
    let host = json!({ "device": "cpu", "pin_memory": true });
    if s.offload != Offload::None && stage >= 1 {
        zero["offload_optimizer"] = host.clone();
    }
    if s.offload == Offload::OptimizerParams && stage == 3 {
        zero["offload_param"] = host;
    }
    let accumulation = t.micro_batches.max(1);
    let mut cfg = json!({
        "train_batch_size": t.micro_batch * accumulation * l.dp,
        "train_micro_batch_size_per_gpu": t.micro_batch,
        "gradient_accumulation_steps": accumulation,
        "gradient_clipping": 1.0,
        "zero_optimization": zero,
    });
    match s.weights {
        WeightPrecision::Fp16 => cfg["fp16"] = json!({ "enabled": true }),
        WeightPrecision::Fp32 => {}
        _ => cfg["bf16"] = json!({ "enabled": true }),
    }
    LaunchSetting {
        runtime: Launcher::DeepSpeed,
        title: "DeepSpeed config (ds_config.json)".into(),
        text: serde_json::to_string_pretty(&cfg).unwrap_or_default() + "\n",
        note: format!(
            "Save as ds_config.json on every node. {} × {} micro-batches × {} data-parallel ranks = {} sequences per step.",
            l.sharding.label(),
            accumulation,
            l.dp,
            t.micro_batch * accumulation * l.dp
        ),
    }
}

/// DeepSpeed's hostfile: one line per node.
pub fn hostfile(nodes: u64, gpus_per_node: u64) -> LaunchSetting {
    let text = (0..nodes)
        .map(|i| format!("node{i} slots={gpus_per_node}"))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    LaunchSetting {
        runtime: Launcher::Hostfile,
        title: "DeepSpeed hostfile".into(),
        text,
        note: "Replace node0 … with the machines' host names (passwordless ssh between them, for the deepspeed launcher; torchrun below needs none).".into(),
    }
}

/// `torchrun` on every node.
pub fn torchrun(nodes: u64, gpus_per_node: u64, script: &str, note: &str) -> LaunchSetting {
    let text = [
        format!("torchrun --nnodes {nodes} --nproc-per-node {gpus_per_node}"),
        "--node-rank \"$NODE_RANK\" --master-addr node0".to_string(),
        format!("--master-port {MASTER_PORT} {script}"),
    ]
    .join(" \\\n  ");
    LaunchSetting {
        runtime: Launcher::Torchrun,
        title: "torchrun on every node".into(),
        text,
        note: format!(
            "Run on each machine with NODE_RANK 0 … {}; node0 is the first machine's address. {note}",
            nodes.saturating_sub(1)
        ),
    }
}

/// accelerate's FSDP config across the nodes.
fn accelerate_fsdp(s: &Scenario, t: &TrainPlan, gpus_per_node: u64) -> LaunchSetting {
    let strategy = if t.layout.sharding == Sharding::Hsdp {
        "HYBRID_SHARD"
    } else {
        "FULL_SHARD"
    };
    let precision = match s.weights {
        WeightPrecision::Fp16 => "fp16",
        WeightPrecision::Fp32 => "no",
        _ => "bf16",
    };
    let text = format!(
        "compute_environment: LOCAL_MACHINE
distributed_type: FSDP
mixed_precision: {precision}
num_machines: {nodes}
num_processes: {procs}
machine_rank: 0
main_process_ip: node0
main_process_port: {MASTER_PORT}
rdzv_backend: static
same_network: true
fsdp_config:
  fsdp_version: 1
  fsdp_sharding_strategy: {strategy}
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch: BACKWARD_PRE
  fsdp_forward_prefetch: false
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_use_orig_params: true
  fsdp_cpu_ram_efficient_loading: true
  fsdp_sync_module_states: true
  fsdp_offload_params: {offload}
  fsdp_activation_checkpointing: {ckpt}
",
        nodes = t.nodes,
        procs = t.nodes * gpus_per_node,
        ckpt = s.checkpointing != Checkpointing::None,
        // FSDP's CPUOffload moves parameters, gradients and the optimizer step to the host.
        offload = s.offload != Offload::None,
    );
    LaunchSetting {
        runtime: Launcher::AccelerateConfig,
        title: "accelerate config (fsdp.yaml)".into(),
        text,
        note: format!(
            "Save as fsdp.yaml on every node; machine_rank is overridden per node on the command line. {} over {} GPUs, micro-batch {} per GPU.",
            t.layout.sharding.label(),
            t.gpus,
            t.micro_batch
        ),
    }
}

/// Megatron-LM's GPT pretraining script with the plan's layout, under torchrun.
fn megatron(s: &Scenario, t: &TrainPlan, gpus_per_node: u64) -> LaunchSetting {
    let m = &s.model;
    let l: Layout = t.layout;
    let mut args = vec![
        format!(
            "--tensor-model-parallel-size {} --pipeline-model-parallel-size {}",
            l.tp, l.pp
        ),
        format!(
            "--num-layers {} --hidden-size {} --num-attention-heads {} --ffn-hidden-size {}",
            m.layers, m.hidden, m.heads, m.intermediate
        ),
        format!(
            "--seq-length {} --max-position-embeddings {} --micro-batch-size {} --global-batch-size {}",
            s.context, s.context, t.micro_batch, t.global_batch
        ),
        "--bf16 --use-flash-attn --swiglu --normalization RMSNorm --untie-embeddings-and-output-weights".into(),
    ];
    if m.kv_heads > 0 && m.kv_heads != m.heads {
        args.push(format!(
            "--group-query-attention --num-query-groups {}",
            m.kv_heads
        ));
    }
    if l.tp > 1 {
        args.push("--sequence-parallel".into());
    }
    // Mixture of experts: Megatron-Core's MoE flags (`megatron/core/transformer/moe/README.md`),
    // the routed experts split over the plan's expert-parallel ranks.
    if let Some(moe) = m.moe.as_ref().filter(|x| x.experts > 1) {
        args.push(format!(
            "--num-experts {} --moe-router-topk {} --moe-ffn-hidden-size {} --expert-model-parallel-size {} --moe-token-dispatcher-type alltoall",
            moe.experts, moe.active_experts, moe.expert_ffn, l.ep
        ));
        if l.ep > 1 {
            args.push("--expert-tensor-parallel-size 1".into());
        }
        if moe.shared_experts > 0 {
            let w = if moe.shared_ffn > 0 {
                moe.shared_ffn
            } else {
                moe.expert_ffn
            };
            args.push(format!(
                "--moe-shared-expert-intermediate-size {}",
                w * moe.shared_experts
            ));
        }
    }
    if l.sharding == Sharding::Zero1 {
        args.push(
            "--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather".into(),
        );
    }
    if s.checkpointing == Checkpointing::Full {
        args.push(
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
                .into(),
        );
    } else if s.checkpointing == Checkpointing::Selective {
        args.push("--recompute-granularity selective".into());
    }
    if s.mode != Mode::Full {
        args.push(
            "# LoRA/QLoRA: Megatron-LM trains full weights; use NeMo's PEFT recipes for adapters"
                .into(),
        );
    }
    let script = format!("pretrain_gpt.py \\\n  {}", args.join(" \\\n  "));
    let mut r = torchrun(
        t.nodes,
        gpus_per_node,
        &script,
        "Add --data-path, --tokenizer-type and --save/--load for your data and checkpoints.",
    );
    r.title = "Megatron-LM under torchrun on every node".into();
    r
}

/// `ray start` on each node, then the plan's `vllm serve` on the head.
fn ray(nodes: u64, serve: LaunchSetting) -> LaunchSetting {
    let text = format!(
        "# on the head node\nray start --head --port {RAY_PORT}\n# on each of the other {} nodes\nray start --address HEAD_IP:{RAY_PORT}\n# then on the head node\n{}",
        nodes.saturating_sub(1),
        serve.text
    );
    LaunchSetting {
        runtime: Launcher::Ray,
        title: "Ray cluster + vLLM".into(),
        text,
        note: format!(
            "Replace HEAD_IP with the head node's address; every node needs the same vLLM version and the model files (or Hub access). {}",
            serve.note
        ),
    }
}

/// `rpc-server` on the other machines and `llama-server --rpc` on the host.
fn rpc(s: &Scenario, nodes: u64) -> LaunchSetting {
    let (model, _) = model_arg(s, true);
    let hosts = (1..nodes.max(2))
        .map(|i| format!("HOST{i}:{RPC_PORT}"))
        .collect::<Vec<_>>()
        .join(",");
    let text = format!(
        "# on each of the other {} machines\nrpc-server -H 0.0.0.0 -p {RPC_PORT}\n# on the host\nllama-server -m {} --rpc {hosts} -ngl 999 -c {}",
        nodes.saturating_sub(1),
        shell(&model),
        s.context
    );
    LaunchSetting {
        runtime: Launcher::LlamaRpc,
        title: "llama.cpp RPC".into(),
        text,
        note: "Replace HOST1 … with the machines' addresses. rpc-server has no authentication: run it on a trusted network only (llama.cpp tools/rpc/README.md).".into(),
    }
}
