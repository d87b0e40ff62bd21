//! Launch lines from a serving plan: `vllm serve`, SGLang's `launch_server` and `llama-server`
//! with the plan's parallelism, context, sequence limit, token budget and memory share.

use super::launch::{
    LaunchSetting, Launcher, hub_revision, llama_cpp_draft, model_arg, vllm_kv_dtype,
    vllm_speculative,
};
use super::text::shell;
use crate::core::format::group_digits;
use crate::core::scenario::Scenario;
use crate::core::serving::{Engine, EngineSettings, ServingPlan};

/// The engine's launch line for `plan` (`None`: the machine cannot serve the model).
pub fn serving_launch(s: &Scenario, plan: &ServingPlan) -> Option<LaunchSetting> {
    let set = plan.settings?;
    let sc = s.clamped();
    let replicas = plan
        .asked
        .map(|a| {
            format!(
                " The asked load needs {} on {}: run this on each and balance requests across them.",
                crate::core::format::count(a.replicas, "replica", "replicas"),
                crate::core::format::count(a.machines, "machine", "machines")
            )
        })
        .unwrap_or_default();
    let (model, placeholder) = model_arg(s, plan.engine == Engine::LlamaServer);
    let mut note = if placeholder {
        format!(
            "Replace MODEL with the Hugging Face repo id or local path of {}.",
            s.model.name
        )
    } else {
        String::new()
    };
    let l = PlanLaunch {
        s,
        sc: &sc,
        plan,
        set: &set,
        model: &model,
        dp: plan.replicas_per_machine.max(1),
    };
    let (title, runtime, text) = match plan.engine {
        Engine::Vllm | Engine::Auto => ("vLLM server (serving plan)", Launcher::Vllm, l.vllm()),
        Engine::Sglang => ("SGLang server (serving plan)", Launcher::Vllm, l.sglang()),
        Engine::LlamaServer => {
            let slots = set.max_num_seqs.max(1);
            let mut lines = vec![
                format!("llama-server -m {} -ngl 99", shell(&model)),
                format!(
                    "--parallel {slots} -c {} --kv-unified -b {} --cont-batching",
                    slots.saturating_mul(sc.context),
                    set.max_num_batched_tokens
                ),
            ];
            if plan.speculative.is_some() {
                let mut notes = Vec::new();
                lines.extend(llama_cpp_draft(&sc, &mut notes));
                for n in notes {
                    note.push(' ');
                    note.push_str(&n);
                }
            }
            note.push_str(&format!(
                " -c is the whole KV pool: {slots} slots × {} tokens each.",
                group_digits(sc.context)
            ));
            (
                "llama.cpp server (serving plan)",
                Launcher::LlamaCpp,
                lines.join(" \\\n  "),
            )
        }
        Engine::Transformers => {
            note.push_str(" generate() serves static batches: use vLLM or SGLang for many users.");
            (
                "transformers (static batches)",
                Launcher::Accelerate,
                format!(
                    "model.generate(**tokenizer(prompts, return_tensors=\"pt\", padding=True), max_new_tokens={})  # batches of {}",
                    sc.serving.output_tokens, set.max_num_seqs
                ),
            )
        }
    };
    Some(LaunchSetting {
        runtime,
        title: title.to_string(),
        text,
        note: format!("{}{replicas}", note.trim()).trim().to_string(),
    })
}

/// What the engines' launch lines are written from.
struct PlanLaunch<'a> {
    s: &'a Scenario,
    sc: &'a Scenario,
    plan: &'a ServingPlan,
    set: &'a EngineSettings,
    model: &'a str,
    /// Data-parallel replicas on one machine.
    dp: u64,
}

impl PlanLaunch<'_> {
    /// `vllm serve` with the plan's parallelism, limits and memory share.
    fn vllm(&self) -> String {
        let dp = self.dp;
        let mut lines = vec![format!("vllm serve {}", shell(self.model))];
        if let Some(rev) = hub_revision(self.s) {
            lines[0].push_str(&format!(" --revision {}", shell(&rev)));
        }
        lines.push(format!(
            "--tensor-parallel-size {}{}{} --max-model-len {}",
            self.plan.tp,
            if self.plan.pp > 1 {
                format!(
                    " --pipeline-parallel-size {} --distributed-executor-backend ray",
                    self.plan.pp
                )
            } else {
                String::new()
            },
            if dp > 1 {
                format!(" --data-parallel-size {dp}")
            } else {
                String::new()
            },
            self.sc.context
        ));
        lines.push(format!(
            "--max-num-seqs {} --max-num-batched-tokens {} --gpu-memory-utilization {}",
            self.set.max_num_seqs, self.set.max_num_batched_tokens, self.sc.gpu_memory_utilization
        ));
        let (kv, _) = vllm_kv_dtype(self.sc);
        if kv != "auto" {
            lines.push(format!("--kv-cache-dtype {kv}"));
        }
        if self.plan.speculative.is_some() {
            lines.extend(vllm_speculative(self.sc));
        }
        lines.push(if self.set.prefix_caching {
            "--enable-prefix-caching".into()
        } else {
            "--no-enable-prefix-caching".into()
        });
        lines.join(" \\\n  ")
    }

    /// SGLang's speculative decoding flags (python/sglang/srt/server_args.py: a chain of `γ`
    /// steps is `--speculative-eagle-topk 1` with `γ + 1` draft tokens; a separate draft model is
    /// the `STANDALONE` algorithm, MTP layers run as `EAGLE` from the checkpoint's own NextN
    /// layers).
    fn sglang_speculative(&self) -> Option<String> {
        use crate::core::speculative::SpecMethod;
        self.plan.speculative.as_ref()?;
        let sp = self.sc.speculative.as_ref()?;
        let g = sp.tokens();
        let algorithm = match sp.method {
            SpecMethod::DraftModel => format!(
                "STANDALONE --speculative-draft-model-path {}",
                shell(sp.draft_id.as_deref().unwrap_or("DRAFT_MODEL"))
            ),
            SpecMethod::Eagle3 => "EAGLE3 --speculative-draft-model-path EAGLE3_HEAD".into(),
            SpecMethod::Mtp => "EAGLE".into(),
        };
        Some(format!(
            "--speculative-algorithm {algorithm} --speculative-num-steps {g} --speculative-eagle-topk 1 --speculative-num-draft-tokens {}",
            g + 1
        ))
    }

    /// SGLang's `launch_server` with the plan's parallelism and limits.
    fn sglang(&self) -> String {
        let dp = self.dp;
        let lines = [
            format!(
                "python -m sglang.launch_server --model-path {}{}",
                shell(self.model),
                hub_revision(self.s)
                    .map(|r| format!(" --revision {}", shell(&r)))
                    .unwrap_or_default()
            ),
            format!(
                "--tp {} --dp {dp} --context-length {}",
                self.plan.tp, self.sc.context
            ),
            format!(
                "--max-running-requests {} --chunked-prefill-size {}",
                self.set.max_num_seqs, self.set.max_num_batched_tokens
            ),
            if self.set.prefix_caching {
                String::new()
            } else {
                "--disable-radix-cache".into()
            },
            self.sglang_speculative().unwrap_or_default(),
        ];
        lines
            .iter()
            .filter(|l| !l.is_empty())
            .cloned()
            .collect::<Vec<_>>()
            .join(" \\\n  ")
    }
}
