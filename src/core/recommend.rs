//! Recommendations: which machine to buy or rent for a scenario, per kind, and what would make
//! this machine run it. Computed only from the fit rows ([`FitResult`]) and the solvers of
//! [`super::fit`]; nothing here has its own memory or speed model.
//!
//! Per group (laptop, Apple, desktop/workstation, cloud instance) the picks are: the cheapest
//! machine that holds the workload in GPU (or unified) memory, the fastest (within the budget
//! when one is given), for cloud instances the lowest $ per 1M tokens, and the cheapest machine
//! that runs it with offload (or on the CPU) at a minimum speed. Each pick carries its reason
//! ([`Reason`]); a group where the constraints rule everything out says what would have to give
//! ([`Unmet`]); this machine gets its [`Outcome`] and its [`Upgrade`]s. They are values, like the
//! fit's notes: the sentences are written by their `Display`, the numbers in them by
//! [`super::format`], only when a surface shows them.
//! The rules are written down in docs/recommend.md.

use super::catalog::{Catalog, Machine, MachineKind, MemoryKind, Price, Vendor};
use super::estimate::estimate;
use super::fit::{
    EstimateCache, FitResult, FitSettings, Verdict, fit_all, fit_machine, solve_best_quality,
    solve_max_context, solve_precision,
};
use super::format;
use super::placement::note::Note;
use super::precision::WeightPrecision;
use super::quality::QualityTable;
use super::scenario::Scenario;
use super::units::{Bytes, GIB};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The lowest decode speed the "cheapest with offload" pick accepts when the buyer gives none:
/// about silent reading speed. Brysbaert (2019), "How many words do we read per minute?",
/// J. Memory and Language 109: 238 words/min for non-fiction ≈ 4 words/s; at OpenAI's rule of
/// thumb of ~0.75 words per token (https://help.openai.com/en/articles/4936856) that is ≈ 5.3
/// tokens/s. Rounded down to 5.
pub const DEFAULT_MIN_OFFLOAD_TOKENS_PER_S: f64 = 5.0;

/// RAM upgrades are quoted in whole multiples of this (DDR4/DDR5 modules come in 8 GB steps:
/// JEDEC JESD79-5 lists 8, 16, 24, 32, 48 and 64 Gb dies, making 8 GB-multiple modules).
const RAM_STEP: u64 = 8 * GIB;

/// The groups a buyer chooses between.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Every laptop (MacBooks included).
    Laptop,
    /// Every machine with an Apple GPU (MacBooks, Mac mini, Mac Studio, Mac Pro).
    Apple,
    /// Desktops, workstations and mini PCs.
    Desktop,
    /// Cloud instances (priced per hour).
    Cloud,
}

impl Group {
    pub const ALL: [Group; 4] = [Group::Laptop, Group::Apple, Group::Desktop, Group::Cloud];

    pub const fn cli_name(self) -> &'static str {
        match self {
            Group::Laptop => "laptop",
            Group::Apple => "apple",
            Group::Desktop => "desktop",
            Group::Cloud => "cloud",
        }
    }
    pub const fn label(self) -> &'static str {
        match self {
            Group::Laptop => "Laptop",
            Group::Apple => "Apple",
            Group::Desktop => "Desktop / workstation",
            Group::Cloud => "Cloud instance",
        }
    }
    /// The noun in reasons: "cheapest laptop …".
    pub const fn noun(self) -> &'static str {
        match self {
            Group::Laptop => "laptop",
            Group::Apple => "Apple machine",
            Group::Desktop => "desktop or workstation",
            Group::Cloud => "cloud instance",
        }
    }
    pub(crate) fn contains(self, m: &Machine, apple_gpu: bool) -> bool {
        match self {
            Group::Laptop => m.kind == MachineKind::Laptop,
            Group::Apple => apple_gpu || m.kind == MachineKind::Apple,
            Group::Desktop => matches!(
                m.kind,
                MachineKind::Desktop | MachineKind::Workstation | MachineKind::MiniPc
            ),
            Group::Cloud => m.kind == MachineKind::Cloud,
        }
    }
}

/// A `--kind` value: which groups to answer for, and which machines inside them. It names a
/// catalog kind (`laptop`, `apple`, `desktop`, `workstation`, `cloud`, `mini-pc`); written and
/// read by that name.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct KindFilter(pub MachineKind);

impl KindFilter {
    pub const ALL: [KindFilter; 6] = {
        let k = MachineKind::ALL;
        [
            KindFilter(k[0]),
            KindFilter(k[1]),
            KindFilter(k[2]),
            KindFilter(k[3]),
            KindFilter(k[4]),
            KindFilter(k[5]),
        ]
    };
    pub const fn cli_name(self) -> &'static str {
        self.0.cli_name()
    }
    pub fn from_cli(s: &str) -> Option<Self> {
        let t = s.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|k| k.cli_name() == t)
    }
    pub(crate) fn group(self) -> Group {
        match self.0 {
            MachineKind::Laptop => Group::Laptop,
            MachineKind::Apple => Group::Apple,
            MachineKind::Cloud => Group::Cloud,
            MachineKind::Desktop | MachineKind::Workstation | MachineKind::MiniPc => Group::Desktop,
        }
    }
    pub(crate) fn matches(self, m: &Machine, apple_gpu: bool) -> bool {
        match self.0 {
            MachineKind::Workstation | MachineKind::MiniPc => m.kind == self.0,
            _ => self.group().contains(m, apple_gpu),
        }
    }
}

impl Serialize for KindFilter {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.cli_name())
    }
}

impl<'de> Deserialize<'de> for KindFilter {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        let name = String::deserialize(de)?;
        KindFilter::from_cli(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown machine kind {name:?}")))
    }
}

/// What a buyer asks for. Every field is optional; the default asks for nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Constraints {
    /// Most a machine may cost to buy, USD (owned machines).
    pub budget_usd: Option<f64>,
    /// Most a cloud instance may cost per hour, USD.
    pub max_usd_per_hour: Option<f64>,
    /// Slowest acceptable decode (inference) or training throughput, tokens/s.
    pub min_tokens_per_s: Option<f64>,
    /// Shortest acceptable context: the machines are fitted at max(this, the scenario's).
    pub min_context: Option<u64>,
    /// Groups (and machines within them) to answer for; empty = all groups.
    pub kinds: Vec<KindFilter>,
    /// A quality floor for this machine's precision step: the largest mean KL divergence to the
    /// 16-bit model accepted (`core::quality::parse_max_kld`). With it the step proposes the
    /// best-quality precision within the floor that fits the GPU (`fit::solve_best_quality`),
    /// never an unmeasured one; without it, the highest-bit precision of the ladder that fits.
    pub max_kld: Option<f64>,
}

/// The question a pick answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Cheapest that holds it in GPU/unified memory (cloud: per hour).
    Cheapest,
    /// Fastest, within the budget when there is one.
    Fastest,
    /// Lowest $ per 1M tokens (cloud).
    BestValue,
    /// Cheapest that runs it with offload or on the CPU at the minimum speed.
    CheapestOffload,
}

impl Role {
    pub const fn label(self) -> &'static str {
        match self {
            Role::Cheapest => "Cheapest on the GPU",
            Role::Fastest => "Fastest",
            Role::BestValue => "Lowest $ per 1M tokens",
            Role::CheapestOffload => "Cheapest with offload",
        }
    }
}

/// What a pick costs: bought once, or rented by the hour (every cloud instance); `None` when the
/// catalog has no (finite) price.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PickPrice {
    Purchase(Option<f64>),
    PerHour(Option<f64>),
}

impl PickPrice {
    /// The amount in USD, when known.
    pub fn usd(self) -> Option<f64> {
        match self {
            PickPrice::Purchase(usd) | PickPrice::PerHour(usd) => usd,
        }
    }
    /// Whether the amount is per hour.
    pub fn is_hourly(self) -> bool {
        matches!(self, PickPrice::PerHour(_))
    }
    pub(crate) fn of(m: &Machine) -> PickPrice {
        let (usd, hourly) = match &m.price {
            Some(Price::Hourly { usd, .. }) => (Some(*usd), true),
            Some(Price::Purchase { usd, .. }) => (Some(*usd), false),
            None => (None, false),
        };
        let usd = usd.filter(|u| u.is_finite());
        if hourly || m.kind == MachineKind::Cloud {
            PickPrice::PerHour(usd)
        } else {
            PickPrice::Purchase(usd)
        }
    }
}

impl fmt::Display for PickPrice {
    /// "$1,599", "$1.86/h", "price unknown".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PickPrice::Purchase(Some(usd)) => f.write_str(&format::usd_coarse(*usd)),
            PickPrice::PerHour(Some(usd)) => write!(f, "{}/h", format::usd_coarse(*usd)),
            PickPrice::Purchase(None) | PickPrice::PerHour(None) => f.write_str("price unknown"),
        }
    }
}

/// Which memory a "cheapest on the GPU" pick fills.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryShown {
    /// One GPU's memory.
    Gpu,
    /// The memory of each of several GPUs.
    PerGpu,
    /// Unified memory (CPU and GPU share it).
    Unified,
}

impl MemoryShown {
    const fn text(self) -> &'static str {
        match self {
            MemoryShown::Gpu => "usable GPU memory",
            MemoryShown::PerGpu => "usable memory per GPU",
            MemoryShown::Unified => "usable unified memory",
        }
    }
}

/// How a machine runs a workload that is not all on its GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffloadHow {
    /// On the CPU only.
    Cpu,
    /// Layers (or experts) split between GPU and RAM: "20/80", "the experts of 12 of 32 layers in
    /// RAM".
    Offload { split: String },
}

impl fmt::Display for OffloadHow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OffloadHow::Cpu => f.write_str("on the CPU"),
            OffloadHow::Offload { split } => write!(f, "with offload ({split})"),
        }
    }
}

/// Why a machine is a pick: the question it answers, with its numbers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// "cheapest laptop with ≥ 5.96 GiB usable GPU memory; 38.2 tok/s".
    Cheapest {
        group: Group,
        need: Bytes,
        memory: MemoryShown,
        tokens_per_s: f64,
    },
    /// "fastest laptop under $3,000: 38.2 tok/s (GPU, $1,599)".
    Fastest {
        group: Group,
        /// The price limit it is the fastest under, if any.
        within: Option<PickPrice>,
        tokens_per_s: f64,
        verdict_text: String,
        price: PickPrice,
    },
    /// "lowest cost per 1M tokens generated among cloud instances that run it: $0.43 at $1.86/h;
    /// 38.2 tok/s".
    BestValue {
        /// Tokens trained (training) rather than generated.
        trained: bool,
        usd_per_million_tokens: f64,
        price: PickPrice,
        tokens_per_s: f64,
    },
    /// "cheapest laptop that runs it with offload (20/80) at ≥ 5.00 tok/s: 7.50 tok/s".
    CheapestOffload {
        group: Group,
        how: OffloadHow,
        /// The least speed asked for.
        floor_tokens_per_s: f64,
        tokens_per_s: f64,
    },
}

impl Why {
    /// The clause that says a pick also answers this question: "the fastest laptop under $3,000".
    fn also(&self) -> String {
        match self {
            Why::Cheapest {
                group: Group::Cloud,
                ..
            } => "the cheapest per hour that holds it on the GPU".to_string(),
            Why::Cheapest { group, .. } => {
                format!("the cheapest {} that holds it on the GPU", group.noun())
            }
            Why::Fastest { group, within, .. } => {
                format!("the fastest {}{}", group.noun(), under(within))
            }
            Why::BestValue { .. } => "the lowest cost per 1M tokens".to_string(),
            Why::CheapestOffload {
                floor_tokens_per_s, ..
            } => format!(
                "the cheapest that runs it at ≥ {} tok/s",
                format::rate_coarse(*floor_tokens_per_s)
            ),
        }
    }
}

/// " under $3,000", or nothing without a limit.
fn under(within: &Option<PickPrice>) -> String {
    within.map(|l| format!(" under {l}")).unwrap_or_default()
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Why::Cheapest {
                group,
                need,
                memory,
                tokens_per_s,
            } => {
                let per = if *group == Group::Cloud {
                    " per hour"
                } else {
                    ""
                };
                write!(
                    f,
                    "cheapest {}{per} with ≥ {} {}; {} tok/s",
                    group.noun(),
                    need.display_gib(),
                    memory.text(),
                    format::rate_coarse(*tokens_per_s)
                )
            }
            Why::Fastest {
                group,
                within,
                tokens_per_s,
                verdict_text,
                price,
            } => write!(
                f,
                "fastest {}{}: {} tok/s ({verdict_text}, {price})",
                group.noun(),
                under(within),
                format::rate_coarse(*tokens_per_s)
            ),
            Why::BestValue {
                trained,
                usd_per_million_tokens,
                price,
                tokens_per_s,
            } => write!(
                f,
                "lowest cost per 1M tokens {} among cloud instances that run it: {} at {price}; {} tok/s",
                if *trained { "trained" } else { "generated" },
                format::usd_coarse(*usd_per_million_tokens),
                format::rate_coarse(*tokens_per_s)
            ),
            Why::CheapestOffload {
                group,
                how,
                floor_tokens_per_s,
                tokens_per_s,
            } => write!(
                f,
                "cheapest {} that runs it {how} at ≥ {} tok/s: {} tok/s",
                group.noun(),
                format::rate_coarse(*floor_tokens_per_s),
                format::rate_coarse(*tokens_per_s)
            ),
        }
    }
}

/// Why a machine is a pick, and the other questions it also answers (a machine that answers two
/// is listed once).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    pub why: Why,
    pub also: Vec<Why>,
}

impl fmt::Display for Reason {
    /// "cheapest laptop with ≥ 5.96 GiB usable GPU memory; 38.2 tok/s; also the fastest laptop".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.why)?;
        for a in &self.also {
            write!(f, "; also {}", a.also())?;
        }
        Ok(())
    }
}

/// One recommended machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    pub role: Role,
    pub machine: String,
    pub name: String,
    /// Purchase price (owned) or price per hour (cloud).
    pub price: PickPrice,
    pub verdict: Verdict,
    /// "GPU", "offload 20/80", …
    pub verdict_text: String,
    /// Decode tokens/s (training: training tokens/s).
    pub tokens_per_s: f64,
    /// $ per 1M tokens (training: the run's cost per 1M trained tokens).
    pub usd_per_million_tokens: Option<f64>,
    pub reason: Reason,
    /// On unified memory: the raise of the GPU's limit that puts the whole model on the GPU,
    /// and the speed then (`None` where no raise would).
    #[serde(default)]
    pub limit_raise: Option<LimitRaisePick>,
}

/// A pick's GPU-limit raise: the command and the decode rate with it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LimitRaisePick {
    pub mib: u64,
    pub command: String,
    pub tokens_per_s: f64,
}

impl fmt::Display for LimitRaisePick {
    /// "with `sudo sysctl iogpu.wired_limit_mb=44236` the whole model is on the GPU: 5.54 tok/s".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "with `{}` the whole model is on the GPU: {} tok/s",
            self.command,
            format::rate_coarse(self.tokens_per_s)
        )
    }
}

impl Pick {
    /// "$1,599", "$1.86/h", "price unknown".
    pub fn price_text(&self) -> String {
        self.price.to_string()
    }
    /// "38.2 tok/s".
    pub fn speed_text(&self) -> String {
        format!("{} tok/s", format::rate_coarse(self.tokens_per_s))
    }
}

/// A machine named in what a group lacks: "Mac mini (M4 Pro, 64 GB) ($1,999, unified, 4.96
/// tok/s)".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Named {
    pub name: String,
    pub price: PickPrice,
    pub verdict_text: String,
    pub tokens_per_s: f64,
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, {}, {} tok/s)",
            self.name,
            self.price,
            self.verdict_text,
            format::rate_coarse(self.tokens_per_s)
        )
    }
}

/// What the constraints ruled out in a group and what would have to give.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unmet {
    /// A GPU holds the need but the machine lacks the RAM beside it.
    NoRamBeside {
        group: Group,
        machine: String,
        usable: Bytes,
        need: Bytes,
    },
    /// No GPU of the group holds the need.
    GpuTooSmall {
        group: Group,
        need: Bytes,
        most: Bytes,
        machine: String,
    },
    /// No machine of the group has a GPU.
    NoGpu { group: Group },
    /// The runtime runs only on Apple silicon and no machine of the group has an Apple GPU
    /// (MLX).
    NeedsApple { group: Group },
    /// The machines that hold it on the GPU have no price.
    Unpriced { group: Group },
    /// None reaches the least speed asked for on the GPU.
    TooSlow {
        group: Group,
        min_tokens_per_s: f64,
        fastest: Named,
    },
    /// None fits under the price limit.
    OverBudget {
        limit: Option<PickPrice>,
        cheapest: Named,
    },
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unmet::NoRamBeside {
                group,
                machine,
                usable,
                need,
            } => write!(
                f,
                "no {} holds it in GPU memory: {machine} has {} usable for the {} it needs, but not the RAM beside it",
                group.noun(),
                usable.display_gib(),
                need.display_gib()
            ),
            Unmet::GpuTooSmall {
                group,
                need,
                most,
                machine,
            } => write!(
                f,
                "no {} holds it in GPU memory: it needs {} per GPU, the most any has usable is {} ({machine})",
                group.noun(),
                need.display_gib(),
                most.display_gib()
            ),
            Unmet::NoGpu { group } => write!(f, "no {} has a GPU for it", group.noun()),
            Unmet::NeedsApple { group } => write!(
                f,
                "no {} runs MLX: it runs only on Apple silicon (Metal GPU); --runtime llama.cpp or vllm for these machines",
                group.noun()
            ),
            Unmet::Unpriced { group } => write!(
                f,
                "no {} that holds it on the GPU has a price in the catalog",
                group.noun()
            ),
            Unmet::TooSlow {
                group,
                min_tokens_per_s,
                fastest,
            } => write!(
                f,
                "no {} reaches {} tok/s on the GPU; the fastest is {fastest}",
                group.noun(),
                format::rate_coarse(*min_tokens_per_s)
            ),
            Unmet::OverBudget { limit, cheapest } => {
                let limit = limit.map(|l| l.to_string()).unwrap_or_default();
                write!(f, "nothing fits under {limit}; the cheapest is {cheapest}")
            }
        }
    }
}

/// The answer for one group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupPicks {
    pub group: Group,
    /// Most useful first: the first is the group's headline pick.
    pub picks: Vec<Pick>,
    /// What the constraints ruled out and what would have to give ("nothing fits under $1,000;
    /// the cheapest is …").
    pub unmet: Vec<Unmet>,
}

impl GroupPicks {
    /// The headline pick.
    pub fn best(&self) -> Option<&Pick> {
        self.picks.first()
    }
}

/// What a change to the scenario or the hardware does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Lower-bit weights.
    Precision,
    /// A shorter context.
    Context,
    /// More system RAM (for offload or the CPU).
    Ram,
    /// A GPU with more memory.
    Gpu,
    /// Another machine of the same kind (unified memory cannot be upgraded).
    Machine,
    /// A training technique that trades speed for memory (checkpointing, adapters, offload).
    Technique,
}

/// A training technique the upgrade path tries before bigger hardware, each with what it costs.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Technique {
    /// Full activation checkpointing: the forward pass runs again in the backward, about 8 FLOPs
    /// per parameter and token instead of 6 (Chen et al. 2016, "Training Deep Nets with
    /// Sublinear Memory Cost"; Korthikanti et al. 2022, §4).
    Checkpointing,
    /// LoRA adapters instead of a full fine-tune: no optimiser states or gradients for the
    /// frozen weights (Hu et al. 2021).
    Lora,
    /// QLoRA: the frozen weights in 4-bit NF4 (Dettmers et al. 2023), dequantised in every
    /// matmul.
    Qlora,
    /// ZeRO-Offload: the optimiser states and step on the CPU (Ren et al. 2021), gradients and
    /// parameters over PCIe every step.
    ZeroOffload,
}

impl Technique {
    /// What to set, in words and as the command line's flag.
    pub const fn what(self) -> &'static str {
        match self {
            Technique::Checkpointing => "gradient checkpointing (--checkpointing full)",
            Technique::Lora => "LoRA instead of a full fine-tune (--mode lora)",
            Technique::Qlora => "QLoRA: the frozen weights in 4-bit (--mode qlora)",
            Technique::ZeroOffload => {
                "the optimiser states on the CPU, ZeRO-Offload (--offload optimizer)"
            }
        }
    }
    /// What it costs.
    pub const fn cost(self) -> &'static str {
        match self {
            Technique::Checkpointing => "the forward pass runs twice, about 1/3 more compute",
            Technique::Lora => "trains adapters only, not every weight",
            Technique::Qlora => "4-bit weights cost some quality and a dequantisation per matmul",
            Technique::ZeroOffload => "the optimiser step runs on the CPU, over PCIe",
        }
    }
}

/// How a machine runs a scenario (or that it does not).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Gpu {
        tokens_per_s: f64,
    },
    Unified {
        tokens_per_s: f64,
    },
    Offload {
        /// "20/80", "the experts of 12 of 32 layers in RAM".
        split: String,
        tokens_per_s: f64,
    },
    Cpu {
        tokens_per_s: f64,
    },
    Disk {
        /// What is read from the disk for every token.
        from_disk: Bytes,
        tokens_per_s: f64,
    },
    DoesNotFit {
        /// (needed, usable) per GPU, when the machine has one.
        gpu: Option<(Bytes, Bytes)>,
        ram_needed: Bytes,
        ram_usable: Bytes,
    },
    /// The runtime does not run on this machine at all (MLX without an Apple GPU).
    NeedsApple,
}

impl Outcome {
    fn of(f: &FitResult) -> Outcome {
        let tokens_per_s = speed(f);
        match f.verdict {
            Verdict::Gpu => Outcome::Gpu { tokens_per_s },
            Verdict::Unified => Outcome::Unified { tokens_per_s },
            Verdict::Offload => Outcome::Offload {
                split: f.offload_split_text(),
                tokens_per_s,
            },
            Verdict::Cpu => Outcome::Cpu { tokens_per_s },
            Verdict::Disk => Outcome::Disk {
                from_disk: f.disk_bytes,
                tokens_per_s,
            },
            Verdict::None if f.notes.contains(&Note::NeedsAppleSilicon) => Outcome::NeedsApple,
            Verdict::None => Outcome::DoesNotFit {
                gpu: (f.gpu_capacity.0 > 0).then_some((f.gpu_required, f.gpu_capacity)),
                ram_needed: f.ram_required,
                ram_usable: f.ram_capacity,
            },
        }
    }

    /// As the machine's summary says it: "runs it on the GPU at 38.2 tok/s".
    fn write_now(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = format::rate_coarse;
        match self {
            Outcome::Gpu { tokens_per_s } => {
                write!(f, "runs it on the GPU at {} tok/s", rate(*tokens_per_s))
            }
            Outcome::Unified { tokens_per_s } => write!(
                f,
                "runs it in unified memory at {} tok/s",
                rate(*tokens_per_s)
            ),
            Outcome::Offload {
                split,
                tokens_per_s,
            } => write!(
                f,
                "runs it with offload ({split}) at {} tok/s",
                rate(*tokens_per_s)
            ),
            Outcome::Cpu { tokens_per_s } => write!(
                f,
                "runs it on the CPU only, at {} tok/s",
                rate(*tokens_per_s)
            ),
            Outcome::Disk {
                from_disk,
                tokens_per_s,
            } => write!(
                f,
                "runs it only by reading {} from the disk, at {} tok/s",
                from_disk.display_gib(),
                rate(*tokens_per_s)
            ),
            Outcome::DoesNotFit {
                gpu: Some((needed, usable)),
                ram_needed,
                ram_usable,
            } => write!(
                f,
                "does not fit: the GPU needs {} and has {} usable; RAM needs {} and has {} usable",
                needed.display_gib(),
                usable.display_gib(),
                ram_needed.display_gib(),
                ram_usable.display_gib()
            ),
            Outcome::DoesNotFit {
                gpu: None,
                ram_needed,
                ram_usable,
            } => write!(
                f,
                "does not fit: it needs {} of RAM and {} is usable",
                ram_needed.display_gib(),
                ram_usable.display_gib()
            ),
            Outcome::NeedsApple => f.write_str(
                "does not run it: MLX runs only on Apple silicon (Metal GPU); --runtime llama.cpp or vllm here",
            ),
        }
    }

    /// As an upgrade's result says it: "runs on the GPU at 38.2 tok/s".
    fn write_after(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = format::rate_coarse;
        match self {
            Outcome::Gpu { tokens_per_s } => {
                write!(f, "runs on the GPU at {} tok/s", rate(*tokens_per_s))
            }
            Outcome::Unified { tokens_per_s } => {
                write!(f, "runs in unified memory at {} tok/s", rate(*tokens_per_s))
            }
            Outcome::Offload {
                split,
                tokens_per_s,
            } => write!(
                f,
                "runs with offload ({split}) at {} tok/s",
                rate(*tokens_per_s)
            ),
            Outcome::Cpu { tokens_per_s } => {
                write!(f, "runs on the CPU at {} tok/s", rate(*tokens_per_s))
            }
            Outcome::Disk { tokens_per_s, .. } => {
                write!(f, "runs from the disk at {} tok/s", rate(*tokens_per_s))
            }
            Outcome::DoesNotFit { .. } => f.write_str("still does not fit"),
            Outcome::NeedsApple => f.write_str("still does not run (MLX needs Apple silicon)"),
        }
    }
}

/// A catalog GPU that has the memory an upgrade asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuExample {
    pub id: String,
    pub name: String,
    pub memory: Bytes,
}

/// One change on this machine's upgrade path, with what it leads to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Lower-bit weights: `to` instead of `from`.
    Precision {
        to: WeightPrecision,
        from: WeightPrecision,
        after: Outcome,
        /// The mean KLD of `to` on this model (measured or carried over, `core::quality`);
        /// `None` when none is published.
        #[serde(default)]
        kld: Option<f64>,
    },
    /// A shorter context, tokens.
    Context { to: u64, from: u64, after: Outcome },
    /// More system RAM.
    Ram {
        to: Bytes,
        from: Bytes,
        after: Outcome,
    },
    /// A GPU with at least `memory` (each, of `gpus`), and a catalog card that has it — with a
    /// training technique turned on first where that makes the GPU it needs smaller.
    Gpu {
        memory: Bytes,
        gpus: u64,
        example: Option<GpuExample>,
        #[serde(default)]
        with: Option<Technique>,
    },
    /// Another machine (unified memory cannot be upgraded): the cheapest that holds it.
    Machine {
        id: String,
        name: String,
        price: PickPrice,
    },
    /// Training techniques, together (before any hardware): the fewest of the ladder that fit.
    Technique {
        techniques: Vec<Technique>,
        after: Outcome,
    },
}

/// One step on this machine's upgrade path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Upgrade {
    pub change: Change,
    /// The verdict after the change.
    pub verdict: Verdict,
    pub tokens_per_s: f64,
}

impl Upgrade {
    pub fn kind(&self) -> ChangeKind {
        match self.change {
            Change::Precision { .. } => ChangeKind::Precision,
            Change::Context { .. } => ChangeKind::Context,
            Change::Ram { .. } => ChangeKind::Ram,
            Change::Gpu { .. } => ChangeKind::Gpu,
            Change::Machine { .. } => ChangeKind::Machine,
            Change::Technique { .. } => ChangeKind::Technique,
        }
    }
    /// The weight precision to use (CLI name), for `precision`.
    pub fn weights(&self) -> Option<&'static str> {
        match self.change {
            Change::Precision { to, .. } => Some(to.cli_name()),
            _ => None,
        }
    }
    /// The mean KLD of the precision a precision step proposes, for `kld`.
    pub fn kld(&self) -> Option<f64> {
        match self.change {
            Change::Precision { kld, .. } => kld,
            _ => None,
        }
    }
    /// The context to use, tokens, for `context`.
    pub fn context(&self) -> Option<u64> {
        match self.change {
            Change::Context { to, .. } => Some(to),
            _ => None,
        }
    }
    /// System RAM to have, bytes, for `ram`.
    pub fn ram_bytes(&self) -> Option<u64> {
        match self.change {
            Change::Ram { to, .. } => Some(to.0),
            _ => None,
        }
    }
    /// GPU memory to have, bytes, for `gpu`.
    pub fn gpu_memory_bytes(&self) -> Option<u64> {
        match self.change {
            Change::Gpu { memory, .. } => Some(memory.0),
            _ => None,
        }
    }
    /// A catalog accelerator (`gpu`) or machine (`machine`) that has it.
    pub fn example(&self) -> Option<&str> {
        match &self.change {
            Change::Gpu { example, .. } => example.as_ref().map(|a| a.id.as_str()),
            Change::Machine { id, .. } => Some(id),
            _ => None,
        }
    }
}

impl fmt::Display for Upgrade {
    /// "Q4_K_M weights instead of BF16: runs on the GPU at 38.2 tok/s".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.change {
            Change::Precision {
                to,
                from,
                after,
                kld,
            } => {
                write!(f, "{} weights instead of {}", to.label(), from.label())?;
                if let Some(k) = kld {
                    write!(f, " (KLD {})", format::sig3(*k))?;
                }
                f.write_str(": ")?;
                after.write_after(f)
            }
            Change::Context { to, from, after } => {
                write!(
                    f,
                    "a context of {} tokens instead of {}: ",
                    format::group_digits(*to),
                    format::group_digits(*from)
                )?;
                after.write_after(f)
            }
            Change::Ram { to, from, after } => {
                write!(
                    f,
                    "{} of RAM instead of {}: ",
                    to.display_gib(),
                    from.display_gib()
                )?;
                after.write_after(f)
            }
            Change::Gpu {
                memory,
                gpus,
                example,
                with,
            } => {
                if let Some(t) = with {
                    write!(f, "{} and ", t.what())?;
                }
                write!(f, "a GPU with ≥ {} of memory", memory.display_gib())?;
                if *gpus > 1 {
                    write!(f, " each ({gpus} GPUs)")?;
                }
                match example {
                    Some(a) => write!(f, " (e.g. {}, {})", a.name, a.memory.display_gib()),
                    None => f.write_str(" (no single GPU in the catalog has that much)"),
                }
            }
            Change::Technique { techniques, after } => {
                for (i, t) in techniques.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" and ")?;
                    }
                    write!(f, "{} ({})", t.what(), t.cost())?;
                }
                f.write_str(": ")?;
                after.write_after(f)
            }
            Change::Machine { name, price, .. } => write!(
                f,
                "a Mac with more memory: {name} ({price}) runs it in unified memory at {} tok/s",
                format::rate_coarse(self.tokens_per_s)
            ),
        }
    }
}

/// This machine: its verdict and the smallest changes that would make it fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThisMachine {
    pub machine: String,
    pub name: String,
    pub verdict: Verdict,
    pub verdict_text: String,
    pub tokens_per_s: f64,
    /// How it runs the scenario now.
    pub now: Outcome,
    /// Changes that make it run on the GPU (or at all), smallest first: settings before
    /// hardware. Empty when it already runs on the GPU.
    pub upgrades: Vec<Upgrade>,
    /// With a quality floor that no precision fitting its GPU meets: the precision that would
    /// fit (the best-quality one, else the ladder's) and what it costs in quality.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub past_floor: Option<PastFloor>,
}

/// What running on this machine's GPU would cost in quality when the floor rules it out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PastFloor {
    /// The precision that would fit.
    pub weights: WeightPrecision,
    /// Its mean KLD on this model (measured or carried over), `None` when not published.
    pub kld: Option<f64>,
    /// The floor it is past.
    pub max_kld: f64,
}

impl PastFloor {
    /// The card's sentence: "No precision within … (KLD 0.445, past the floor)."
    pub fn sentence(&self) -> String {
        let t = self.to_string();
        format!("N{}.", t.strip_prefix('n').unwrap_or(&t))
    }
}

impl fmt::Display for PastFloor {
    /// "no precision within the quality floor (good (KLD ≤ 0.05)) fits its GPU; GGUF Q2_K
    /// would (KLD 0.445, past the floor)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no precision within the quality floor ({}) fits its GPU; {} would (",
            super::quality::floor_label(Some(self.max_kld)),
            self.weights.label()
        )?;
        match self.kld {
            Some(k) => write!(f, "KLD {}, past the floor)", format::sig3(k)),
            None => f.write_str("quality not measured as a KLD)"),
        }
    }
}

/// What a machine does with the scenario now, as its summary begins ([`Outcome::write_now`]).
struct NowText<'a>(&'a Outcome);

impl fmt::Display for NowText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.write_now(f)
    }
}

/// [`ThisMachine::summary`].
pub struct Summary<'a>(&'a ThisMachine);

impl fmt::Display for Summary<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.now.write_now(f)?;
        if let Some(u) = self.0.upgrades.first() {
            write!(f, "; smallest change: {u}")?;
        }
        if let Some(p) = &self.0.past_floor {
            write!(f, "; {p}")?;
        }
        Ok(())
    }
}

impl ThisMachine {
    /// The card's line when no change is offered: "Runs it on the GPU as it is." where it runs
    /// on the GPU, else what it does now, as a sentence ("Does not run it: MLX runs only on
    /// Apple silicon …").
    pub fn as_it_is(&self) -> String {
        if matches!(self.now, Outcome::Gpu { .. } | Outcome::Unified { .. }) {
            return "Runs it on the GPU as it is.".into();
        }
        let now = NowText(&self.now).to_string();
        let mut c = now.chars();
        match c.next() {
            Some(first) => format!("{}{}.", first.to_uppercase(), c.as_str()),
            None => now,
        }
    }
    /// "This machine (RTX 4090 desktop)", or the detected name when it already says so.
    pub fn title(&self) -> String {
        if self.name.starts_with("This machine") {
            self.name.clone()
        } else {
            format!("This machine ({})", self.name)
        }
    }
    /// "runs it on the GPU at 38.2 tok/s", "does not fit: …; smallest change: …".
    pub fn summary(&self) -> Summary<'_> {
        Summary(self)
    }
}

/// Every recommendation for one scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Recommendations {
    pub groups: Vec<GroupPicks>,
    pub this_machine: Option<ThisMachine>,
    /// The context the machines were fitted at (the scenario's, or the minimum asked for).
    pub context: u64,
    pub constraints: Constraints,
    /// Cloud costs are per 1M output tokens at this serving load (`core::serving`): the most
    /// users that meet the target, or the asked load.
    #[serde(default)]
    pub cloud_cost_load: Option<String>,
    /// For an asked serving load: the cheapest cloud and owned machines that meet the target.
    #[serde(default)]
    pub serving: Option<crate::core::serving::ServingPicks>,
    /// When no cloud instance runs the scenario on its own: the cheapest cluster of one cloud
    /// machine that does (`core::cluster::cluster_picks`).
    #[serde(default)]
    pub cluster: Option<crate::core::cluster::ClusterPick>,
}

impl Recommendations {
    /// The machine ids of every pick, headline picks first, without repeats.
    pub fn machine_ids(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let firsts = self.groups.iter().filter_map(|g| g.best());
        let rest = self.groups.iter().flat_map(|g| g.picks.iter().skip(1));
        for p in firsts.chain(rest) {
            if !out.contains(&p.machine) {
                out.push(p.machine.clone());
            }
        }
        out
    }
}

// ---- The computation ----

pub(crate) fn is_apple_gpu(m: &Machine, cat: &Catalog) -> bool {
    m.gpu
        .as_deref()
        .and_then(|g| cat.accelerator(g))
        .is_some_and(|a| a.vendor == Vendor::Apple)
}

fn on_gpu(f: &FitResult) -> bool {
    matches!(f.verdict, Verdict::Gpu | Verdict::Unified)
}

/// Decode tok/s, embedded tokens/s or training tokens/s ([`FitResult::throughput`]).
fn speed(f: &FitResult) -> f64 {
    f.throughput()
}

/// $ per 1M tokens generated (inference) or trained (the run's cost over its tokens).
fn cost_per_million(f: &FitResult, s: &Scenario) -> Option<f64> {
    match &f.training {
        Some(t) => t
            .run_usd
            .filter(|_| s.train_tokens > 0)
            .map(|u| u * 1e6 / s.train_tokens as f64),
        None => f.usd_per_million_tokens,
    }
    .filter(|x| x.is_finite())
}

/// A candidate: a fit row and what its machine costs.
#[derive(Clone, Copy)]
struct Cand<'a> {
    f: &'a FitResult,
    price: PickPrice,
}

impl Cand<'_> {
    fn usd(&self) -> Option<f64> {
        self.price.usd()
    }
    /// The price limit that applies (cloud: per hour; owned: the budget).
    fn limit(&self, k: &Constraints) -> Option<f64> {
        if self.price.is_hourly() {
            k.max_usd_per_hour
        } else {
            k.budget_usd
        }
    }
    fn within_price(&self, k: &Constraints) -> bool {
        match self.limit(k) {
            Some(lim) => self.usd().is_some_and(|p| p <= lim),
            None => true,
        }
    }
    fn named(&self) -> Named {
        Named {
            name: self.f.name.to_string(),
            price: self.price,
            verdict_text: self.f.verdict_text(),
            tokens_per_s: speed(self.f),
        }
    }
    fn pick(&self, role: Role, s: &Scenario, why: Why) -> Pick {
        Pick {
            role,
            machine: self.f.machine.to_string(),
            name: self.f.name.to_string(),
            price: self.price,
            verdict: self.f.verdict,
            verdict_text: self.f.verdict_text(),
            tokens_per_s: speed(self.f),
            usd_per_million_tokens: cost_per_million(self.f, s),
            reason: Reason {
                why,
                also: Vec::new(),
            },
            limit_raise: None,
        }
    }
}

/// The group's price limit, as a price ("$3,000", "$2.00/h").
fn group_limit(group: Group, k: &Constraints) -> Option<PickPrice> {
    if group == Group::Cloud {
        k.max_usd_per_hour.map(|l| PickPrice::PerHour(Some(l)))
    } else {
        k.budget_usd.map(|l| PickPrice::Purchase(Some(l)))
    }
}

fn by_price(a: &Cand, b: &Cand) -> std::cmp::Ordering {
    a.usd()
        .unwrap_or(f64::INFINITY)
        .total_cmp(&b.usd().unwrap_or(f64::INFINITY))
        .then(speed(b.f).total_cmp(&speed(a.f)))
}

/// What one group is asked: its candidates, the scenario and the constraints.
struct Ask<'a> {
    group: Group,
    cands: &'a [Cand<'a>],
    scenario: &'a Scenario,
    constraints: &'a Constraints,
    /// The least speed asked for, when one is (finite and positive).
    min_speed: Option<f64>,
}

impl Ask<'_> {
    fn fast_enough(&self, c: &Cand) -> bool {
        self.min_speed.is_none_or(|m| speed(c.f) >= m)
    }
}

/// The cheapest machine that holds it in GPU (or unified) memory, or what rules every one out.
fn cheapest_on_gpu(ask: &Ask) -> Result<Pick, Option<Unmet>> {
    let group = ask.group;
    let k = ask.constraints;
    let gpu: Vec<Cand> = ask.cands.iter().filter(|c| on_gpu(c.f)).copied().collect();
    let priced: Vec<Cand> = gpu.iter().filter(|c| c.usd().is_some()).copied().collect();
    let fast: Vec<Cand> = priced
        .iter()
        .filter(|c| ask.fast_enough(c))
        .copied()
        .collect();
    if let Some(cand) = fast
        .iter()
        .filter(|c| c.within_price(k))
        .min_by(|a, b| by_price(a, b))
    {
        let memory = if cand.f.verdict == Verdict::Unified {
            MemoryShown::Unified
        } else if cand.f.gpus > 1 {
            MemoryShown::PerGpu
        } else {
            MemoryShown::Gpu
        };
        let why = Why::Cheapest {
            group,
            need: cand.f.gpu_required,
            memory,
            tokens_per_s: speed(cand.f),
        };
        return Ok(cand.pick(Role::Cheapest, ask.scenario, why));
    }
    if gpu.is_empty()
        && !ask.cands.is_empty()
        && ask
            .cands
            .iter()
            .all(|c| c.f.notes.contains(&Note::NeedsAppleSilicon))
    {
        return Err(Some(Unmet::NeedsApple { group }));
    }
    if gpu.is_empty() {
        let most = ask
            .cands
            .iter()
            .filter(|c| c.f.gpu_capacity.0 > 0)
            .max_by_key(|c| c.f.gpu_capacity.0);
        return Err(match most {
            Some(m) if m.f.gpu_capacity >= m.f.gpu_required => Some(Unmet::NoRamBeside {
                group,
                machine: m.f.name.to_string(),
                usable: m.f.gpu_capacity,
                need: m.f.gpu_required,
            }),
            Some(m) => Some(Unmet::GpuTooSmall {
                group,
                need: m.f.gpu_required,
                most: m.f.gpu_capacity,
                machine: m.f.name.to_string(),
            }),
            None if !ask.cands.is_empty() => Some(Unmet::NoGpu { group }),
            None => None,
        });
    }
    if priced.is_empty() {
        return Err(Some(Unmet::Unpriced { group }));
    }
    if fast.is_empty() {
        let fastest = priced
            .iter()
            .max_by(|a, b| speed(a.f).total_cmp(&speed(b.f)));
        return Err(match (fastest, ask.min_speed) {
            (Some(b), Some(m)) => Some(Unmet::TooSlow {
                group,
                min_tokens_per_s: m,
                fastest: b.named(),
            }),
            _ => None,
        });
    }
    Err(fast
        .iter()
        .min_by(|a, b| by_price(a, b))
        .map(|c| Unmet::OverBudget {
            limit: group_limit(group, k),
            cheapest: c.named(),
        }))
}

/// The fastest machine that runs it (any verdict), within the price limit.
fn fastest(ask: &Ask, runs: &[Cand]) -> Option<Pick> {
    let k = ask.constraints;
    let cand = runs
        .iter()
        .filter(|c| c.within_price(k) && ask.fast_enough(c))
        .max_by(|a, b| speed(a.f).total_cmp(&speed(b.f)).then(by_price(b, a)))?;
    let why = Why::Fastest {
        group: ask.group,
        within: group_limit(ask.group, k),
        tokens_per_s: speed(cand.f),
        verdict_text: cand.f.verdict_text(),
        price: cand.price,
    };
    Some(cand.pick(Role::Fastest, ask.scenario, why))
}

/// Cloud: the lowest $ per 1M tokens among the instances that run it.
fn best_value(ask: &Ask, runs: &[Cand]) -> Option<Pick> {
    let (s, k) = (ask.scenario, ask.constraints);
    let cost = |c: &Cand| cost_per_million(c.f, s);
    let cand = runs
        .iter()
        .filter(|c| c.usd().is_some() && c.within_price(k) && ask.fast_enough(c))
        .filter(|c| cost(c).is_some())
        .min_by(|a, b| {
            cost(a)
                .unwrap_or(f64::INFINITY)
                .total_cmp(&cost(b).unwrap_or(f64::INFINITY))
        })?;
    let why = Why::BestValue {
        trained: s.mode.is_training(),
        usd_per_million_tokens: cost(cand).unwrap_or(0.0),
        price: cand.price,
        tokens_per_s: speed(cand.f),
    };
    Some(cand.pick(Role::BestValue, s, why))
}

/// The cheapest machine that runs it with offload (or on the CPU) at the least speed, when it
/// is cheaper than the cheapest on the GPU (`gpu_price`). Inference only.
fn cheapest_offload(ask: &Ask, runs: &[Cand], gpu_price: Option<f64>) -> Option<Pick> {
    let floor = ask.min_speed.unwrap_or(DEFAULT_MIN_OFFLOAD_TOKENS_PER_S);
    let cand = runs
        .iter()
        .filter(|c| matches!(c.f.verdict, Verdict::Offload | Verdict::Cpu))
        .filter(|c| c.usd().is_some() && c.within_price(ask.constraints) && speed(c.f) >= floor)
        .filter(|c| gpu_price.is_none_or(|g| c.usd().unwrap_or(f64::INFINITY) < g))
        .min_by(|a, b| by_price(a, b))?;
    let how = if cand.f.verdict == Verdict::Cpu {
        OffloadHow::Cpu
    } else {
        OffloadHow::Offload {
            split: cand.f.offload_split_text(),
        }
    };
    let why = Why::CheapestOffload {
        group: ask.group,
        how,
        floor_tokens_per_s: floor,
        tokens_per_s: speed(cand.f),
    };
    Some(cand.pick(Role::CheapestOffload, ask.scenario, why))
}

/// Headline first: for the cloud what a token costs, elsewhere the cheapest on the GPU, then the
/// cheapest that runs it at all. A machine that answers two questions is listed once, its
/// reason saying what else it is.
fn order_and_merge(group: Group, mut picks: Vec<Pick>) -> Vec<Pick> {
    let order: &[Role] = if group == Group::Cloud {
        &[
            Role::BestValue,
            Role::Cheapest,
            Role::Fastest,
            Role::CheapestOffload,
        ]
    } else {
        &[
            Role::Cheapest,
            Role::CheapestOffload,
            Role::Fastest,
            Role::BestValue,
        ]
    };
    picks.sort_by_key(|p| order.iter().position(|r| *r == p.role));
    let mut out: Vec<Pick> = Vec::with_capacity(picks.len());
    for p in picks {
        match out.iter_mut().find(|q| q.machine == p.machine) {
            Some(q) => q.reason.also.push(p.reason.why),
            None => out.push(p),
        }
    }
    out
}

/// The picks of one group from its candidates.
fn group_picks(group: Group, cands: &[Cand], s: &Scenario, k: &Constraints) -> GroupPicks {
    let ask = Ask {
        group,
        cands,
        scenario: s,
        constraints: k,
        min_speed: k.min_tokens_per_s.filter(|x| x.is_finite() && *x > 0.0),
    };
    let mut picks = Vec::new();
    let mut unmet = Vec::new();
    match cheapest_on_gpu(&ask) {
        Ok(p) => picks.push(p),
        Err(why_not) => unmet.extend(why_not),
    }
    let runs: Vec<Cand> = cands.iter().filter(|c| c.f.fits()).copied().collect();
    picks.extend(fastest(&ask, &runs));
    if group == Group::Cloud {
        picks.extend(best_value(&ask, &runs));
    }
    if !s.mode.is_training() {
        let gpu_price = picks
            .iter()
            .find(|p| p.role == Role::Cheapest)
            .and_then(|p| p.price.usd());
        picks.extend(cheapest_offload(&ask, &runs, gpu_price));
    }
    GroupPicks {
        group,
        picks: order_and_merge(group, picks),
        unmet,
    }
}

/// The groups to answer for: all, or those the `--kind` filters name.
fn groups_asked(k: &Constraints) -> Vec<Group> {
    if k.kinds.is_empty() {
        Group::ALL.to_vec()
    } else {
        Group::ALL
            .into_iter()
            .filter(|g| k.kinds.iter().any(|f| f.group() == *g))
            .collect()
    }
}

/// Recommendations from fit rows already made: `fits[i]` is the fit of `machines[i]` for
/// scenario `s` (the GUI's cached rows). `this` is this machine when detected (it is never a
/// pick). Machines whose id equals `this`'s are skipped as candidates.
#[allow(clippy::too_many_arguments)] // the GUI's cached rows plus what `recommend` takes
pub fn recommend_from_fits(
    s: &Scenario,
    machines: &[Machine],
    fits: &[FitResult],
    this: Option<&Machine>,
    cat: &Catalog,
    st: &FitSettings,
    k: &Constraints,
    quality: &QualityTable,
) -> Recommendations {
    let this_id = this.map(|m| &*m.id);
    let groups = groups_asked(k);
    let mut out = Vec::with_capacity(groups.len());
    for group in groups {
        let cands: Vec<Cand> = machines
            .iter()
            .zip(fits)
            .filter(|(m, _)| Some(&*m.id) != this_id)
            .filter(|(m, _)| {
                let apple = is_apple_gpu(m, cat);
                group.contains(m, apple)
                    && (k.kinds.is_empty()
                        || k.kinds
                            .iter()
                            .any(|f| f.group() == group && f.matches(m, apple)))
            })
            .map(|(m, f)| Cand {
                f,
                price: PickPrice::of(m),
            })
            .collect();
        if cands.is_empty() {
            continue;
        }
        let mut g = group_picks(group, &cands, s, k);
        for p in &mut g.picks {
            p.limit_raise = limit_raise_pick(s, &p.machine, machines, fits, cat, st);
        }
        out.push(g);
    }
    let this_machine = this.map(|m| {
        let fit = fits
            .iter()
            .zip(machines)
            .find(|(_, x)| x.id == m.id)
            .map(|(f, _)| f.clone())
            .unwrap_or_else(|| fit_all(s, [m], cat, st).remove(0));
        let ctx = Upgrading {
            s,
            m,
            cat,
            st,
            k,
            quality,
            groups: &out,
        };
        this_machine(&ctx, &fit)
    });
    Recommendations {
        groups: out,
        this_machine,
        context: s.context,
        constraints: k.clone(),
        cloud_cost_load: None,
        serving: None,
        cluster: None,
    }
}

/// The raise of the GPU's limit a unified-memory pick's fit offers, and the speed with it.
fn limit_raise_pick(
    s: &Scenario,
    id: &str,
    machines: &[Machine],
    fits: &[FitResult],
    cat: &Catalog,
    st: &FitSettings,
) -> Option<LimitRaisePick> {
    use crate::core::placement::note::Note;
    let (m, f) = machines.iter().zip(fits).find(|(m, _)| *m.id == *id)?;
    let r = f.notes.iter().find_map(|n| match n {
        Note::GpuLimitRaise(r) => Some(*r),
        _ => None,
    })?;
    let raised = FitSettings {
        raise_gpu_limit: true,
        ..st.clone()
    };
    let after = fit_one(s, m, cat, &raised);
    on_gpu(&after).then(|| LimitRaisePick {
        mib: r.mib(),
        command: r.command(),
        tokens_per_s: speed(&after),
    })
}

/// Recommendations for scenario `s` over `machines` (fitted here, at the minimum context when
/// that is longer than the scenario's).
pub fn recommend(
    s: &Scenario,
    machines: &[Machine],
    this: Option<&Machine>,
    cat: &Catalog,
    st: &FitSettings,
    k: &Constraints,
    quality: &QualityTable,
) -> Recommendations {
    let s = scenario_for(s, k);
    let mut fits = fit_all(&s, machines, cat, st);
    let plans = crate::core::serving::price_cloud_at_load(&s, &mut fits, cat, st);
    let mut r = recommend_from_fits(&s, machines, &fits, this, cat, st, k, quality);
    if !plans.is_empty() {
        r.cloud_cost_load = Some(crate::core::serving::load_text(&s));
    }
    if s.serving.load.is_some() {
        r.serving = Some(crate::core::serving::serving_picks(&plans, cat));
    }
    r.cluster = cluster_answer(&s, &r, cat, st);
    r
}

/// When the cloud group has no pick (no instance runs the scenario on its own): the cheapest
/// cluster of one cloud machine that does (`core::cluster::cluster_picks`); else `None`.
pub fn cluster_answer(
    s: &Scenario,
    r: &Recommendations,
    cat: &Catalog,
    st: &FitSettings,
) -> Option<crate::core::cluster::ClusterPick> {
    let cloud_has_pick = !r
        .groups
        .iter()
        .any(|g| g.group == Group::Cloud && g.picks.is_empty());
    // MLX is one Mac's runtime: the cluster plans are vLLM and llama.cpp RPC.
    if cloud_has_pick || s.runtime == crate::core::scenario::Runtime::Mlx {
        return None;
    }
    crate::core::cluster::cluster_picks(s, cat, &s.cluster, st)
        .into_iter()
        .find(|p| p.kind == MachineKind::Cloud)
}

/// The scenario the machines are fitted at: the context raised to the minimum asked for.
pub fn scenario_for(s: &Scenario, k: &Constraints) -> Scenario {
    let mut s = s.clone();
    if let Some(c) = k.min_context
        && c > s.context
    {
        s.context = c;
    }
    s
}

fn fit_one(s: &Scenario, m: &Machine, cat: &Catalog, st: &FitSettings) -> FitResult {
    let mut c = EstimateCache::new(s);
    fit_machine(&mut c, m, cat, st)
}

/// What the upgrade path of this machine is worked out from.
struct Upgrading<'a> {
    s: &'a Scenario,
    m: &'a Machine,
    cat: &'a Catalog,
    st: &'a FitSettings,
    k: &'a Constraints,
    /// The published quality figures (the precision step's KLD and floor).
    quality: &'a QualityTable,
    /// The groups' picks (a Mac's upgrade is the cheapest Apple pick).
    groups: &'a [GroupPicks],
}

impl Upgrading<'_> {
    fn fit(&self, s: &Scenario, m: &Machine) -> FitResult {
        fit_one(s, m, self.cat, self.st)
    }
    fn upgrade(change: Change, after: &FitResult) -> Upgrade {
        Upgrade {
            change,
            verdict: after.verdict,
            tokens_per_s: speed(after),
        }
    }
}

/// 1. Lower-bit weights (inference only: training precision is the optimizer's choice): with a
///    quality floor the best-quality precision within it that fits the GPU, else the highest-bit
///    one of the ladder; said with its KLD.
fn lower_precision(u: &Upgrading) -> Option<Upgrade> {
    let p = match u.k.max_kld {
        Some(max) => solve_best_quality(u.s, u.m, u.cat, u.st, u.quality, Some(max))?.0,
        None => solve_precision(u.s, u.m, u.cat, u.st)?,
    };
    if p.bits_per_weight() >= u.s.weights.bits_per_weight() {
        return None;
    }
    let scenario = Scenario {
        weights: p,
        ..u.s.clone()
    };
    let kld = u.quality.of_weights(&scenario).kld();
    let after = u.fit(&scenario, u.m);
    let change = Change::Precision {
        to: p,
        from: u.s.weights,
        after: Outcome::of(&after),
        kld,
    };
    Some(Upgrading::upgrade(change, &after))
}

/// 1b. Training: the techniques people reach for before bigger hardware, as a ladder —
/// checkpointing; then for a full fine-tune the optimiser on the CPU, or LoRA; then 4-bit
/// QLoRA — each rung with those before it. The first rung on which the run fits the GPU is the
/// change (none when no rung fits).
fn techniques(u: &Upgrading) -> Option<Upgrade> {
    use crate::core::scenario::{Checkpointing, Mode, Offload};
    let s = u.s;
    let mut ladder: Vec<(Vec<Technique>, Scenario)> = Vec::new();
    let mut base = (Vec::new(), s.clone());
    if s.checkpointing != Checkpointing::Full {
        base.0.push(Technique::Checkpointing);
        base.1.checkpointing = Checkpointing::Full;
        ladder.push(base.clone());
    }
    if s.mode == Mode::Full && s.offload == Offload::None {
        let mut r = base.clone();
        r.0.push(Technique::ZeroOffload);
        r.1.offload = Offload::Optimizer;
        ladder.push(r);
    }
    if s.mode == Mode::Full {
        base.0.push(Technique::Lora);
        base.1.mode = Mode::Lora;
        ladder.push(base.clone());
    }
    if base.1.mode == Mode::Lora {
        base.0.push(Technique::Qlora);
        base.1.mode = Mode::Qlora;
        ladder.push(base);
    }
    ladder.into_iter().find_map(|(techniques, scenario)| {
        let after = u.fit(&scenario, u.m);
        on_gpu(&after).then(|| {
            let change = Change::Technique {
                techniques,
                after: Outcome::of(&after),
            };
            Upgrading::upgrade(change, &after)
        })
    })
}

/// 2. A shorter context (no shorter than the minimum asked for).
fn shorter_context(u: &Upgrading) -> Option<Upgrade> {
    let floor = u.k.min_context.unwrap_or(0).max(256);
    let context = solve_max_context(u.s, u.m, u.cat, u.st)?;
    if context >= u.s.context || context < floor {
        return None;
    }
    let scenario = Scenario {
        context,
        prompt_tokens: u.s.prompt_tokens.min(context),
        ..u.s.clone()
    };
    let after = u.fit(&scenario, u.m);
    let change = Change::Context {
        to: context,
        from: u.s.context,
        after: Outcome::of(&after),
    };
    Some(Upgrading::upgrade(change, &after))
}

/// 3. More RAM, so offload (or the CPU) can run it (discrete GPUs and CPU-only machines).
fn more_ram(u: &Upgrading) -> Option<Upgrade> {
    let (ram, after) = min_ram(u.s, u.m, u.cat, u.st)?;
    let change = Change::Ram {
        to: ram,
        from: u.m.ram,
        after: Outcome::of(&after),
    };
    Some(Upgrading::upgrade(change, &after))
}

/// 4a. Another Mac (unified memory cannot be upgraded): the cheapest Apple pick on the GPU.
fn another_mac(u: &Upgrading) -> Option<Upgrade> {
    let p = u
        .groups
        .iter()
        .find(|g| g.group == Group::Apple)
        .and_then(|g| g.picks.iter().find(|p| p.role == Role::Cheapest))?;
    Some(Upgrade {
        change: Change::Machine {
            id: p.machine.clone(),
            name: p.name.clone(),
            price: p.price,
        },
        verdict: p.verdict,
        tokens_per_s: p.tokens_per_s,
    })
}

/// 4b. A discrete GPU with the memory it needs (as many as the machine has), and the smallest
/// catalog card that has it.
fn bigger_gpu(u: &Upgrading, fit: &FitResult, has_gpu: bool) -> Upgrade {
    // Training: with checkpointing on, when the run does not have it, the GPU can be smaller.
    if let Some(lean) = leaner_training(u) {
        let lean_u = Upgrading { s: &lean, ..*u };
        let lean_fit = lean_u.fit(&lean, u.m);
        let mut g = bigger_gpu_for(&lean_u, &lean_fit, has_gpu);
        let plain = bigger_gpu_for(u, fit, has_gpu);
        if let (
            Change::Gpu {
                memory: m1, with, ..
            },
            Change::Gpu { memory: m0, .. },
        ) = (&mut g.change, &plain.change)
            && *m1 < *m0
        {
            *with = Some(Technique::Checkpointing);
            return g;
        }
        return plain;
    }
    bigger_gpu_for(u, fit, has_gpu)
}

/// A training scenario with full checkpointing, when it does not have it.
fn leaner_training(u: &Upgrading) -> Option<Scenario> {
    use crate::core::scenario::Checkpointing;
    (u.s.mode.is_training() && u.s.checkpointing != Checkpointing::Full).then(|| Scenario {
        checkpointing: Checkpointing::Full,
        ..u.s.clone()
    })
}

/// [`bigger_gpu`] for the scenario as it is.
fn bigger_gpu_for(u: &Upgrading, fit: &FitResult, has_gpu: bool) -> Upgrade {
    let gpus = if has_gpu {
        u.m.gpu_count.max(1) as u64
    } else {
        1
    };
    let need = if has_gpu && fit.gpu_required.0 > 0 {
        fit.gpu_required
    } else {
        estimate(&Scenario {
            gpus,
            ..u.s.clone()
        })
        .per_gpu_total()
    };
    let card = u
        .cat
        .accelerators
        .iter()
        .filter(|a| a.memory_kind == MemoryKind::Discrete && a.memory >= need)
        .min_by(|a, b| {
            a.memory
                .cmp(&b.memory)
                .then(b.bandwidth.0.total_cmp(&a.bandwidth.0))
        });
    let (verdict, tokens_per_s) = match card {
        Some(a) => {
            let mut with_card = u.m.clone();
            with_card.gpu = Some(a.id.clone());
            with_card.gpu_count = gpus as u32;
            let after = u.fit(u.s, &with_card);
            (after.verdict, speed(&after))
        }
        None => (Verdict::None, 0.0),
    };
    Upgrade {
        change: Change::Gpu {
            memory: need,
            gpus,
            example: card.map(|a| GpuExample {
                id: a.id.to_string(),
                name: a.name.clone(),
                memory: a.memory,
            }),
            with: None,
        },
        verdict,
        tokens_per_s,
    }
}

/// This machine's verdict and the changes that would make it run on the GPU (or at all).
fn this_machine(u: &Upgrading, fit: &FitResult) -> ThisMachine {
    let mut upgrades = Vec::new();
    let acc = u.m.gpu.as_deref().and_then(|g| u.cat.accelerator(g));
    let unified = acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified);
    let training = u.s.mode.is_training();
    // MLX off Apple silicon: no setting or part of this machine changes that.
    let refused = fit.notes.contains(&Note::NeedsAppleSilicon);
    if !on_gpu(fit) && !refused {
        if !training && acc.is_some() {
            upgrades.extend(lower_precision(u));
        }
        if training && acc.is_some() {
            upgrades.extend(techniques(u));
        }
        if acc.is_some() {
            upgrades.extend(shorter_context(u));
        }
        if !fit.fits() && !training && !unified {
            upgrades.extend(more_ram(u));
        }
        if unified {
            upgrades.extend(another_mac(u));
        } else {
            upgrades.push(bigger_gpu(u, fit, acc.is_some()));
        }
    }
    let past_floor = (!on_gpu(fit) && !training && acc.is_some())
        .then(|| past_floor(u))
        .flatten();
    ThisMachine {
        machine: u.m.id.to_string(),
        name: u.m.name.to_string(),
        verdict: fit.verdict,
        verdict_text: fit.verdict_text(),
        tokens_per_s: speed(fit),
        now: Outcome::of(fit),
        upgrades,
        past_floor,
    }
}

/// With a quality floor within which no precision fits the GPU: the precision that would fit
/// without it (the best-quality one with a figure, else the highest-bit one of the ladder) when
/// it is lower than the scenario's, with its KLD.
fn past_floor(u: &Upgrading) -> Option<PastFloor> {
    let max = u.k.max_kld?;
    if solve_best_quality(u.s, u.m, u.cat, u.st, u.quality, Some(max)).is_some() {
        return None;
    }
    let p = solve_best_quality(u.s, u.m, u.cat, u.st, u.quality, None)
        .map(|(p, _)| p)
        .or_else(|| solve_precision(u.s, u.m, u.cat, u.st))?;
    if p.bits_per_weight() >= u.s.weights.bits_per_weight() {
        return None;
    }
    let kld = u
        .quality
        .of_weights(&Scenario {
            weights: p,
            ..u.s.clone()
        })
        .kld();
    Some(PastFloor {
        weights: p,
        kld,
        max_kld: max,
    })
}

/// The least RAM (a multiple of [`RAM_STEP`], up to 64× the machine's or 16 TiB) with which `m`
/// runs the scenario at all, and the fit then. Fits are monotone in RAM, so a binary search.
fn min_ram(
    s: &Scenario,
    m: &Machine,
    cat: &Catalog,
    st: &FitSettings,
) -> Option<(Bytes, FitResult)> {
    let at = |steps: u64| {
        let mut with_ram = m.clone();
        with_ram.ram = Bytes(steps.saturating_mul(RAM_STEP));
        fit_one(s, &with_ram, cat, st)
    };
    let own_steps = m.ram.0 / RAM_STEP;
    let most_steps = m.ram.0.saturating_mul(64).clamp(64 * GIB, 16 * 1024 * GIB) / RAM_STEP;
    if most_steps <= own_steps {
        return None;
    }
    let mut hi = most_steps;
    let top = at(hi);
    if !top.fits() {
        return None;
    }
    let mut lo = own_steps; // does not fit at lo (the machine's own RAM)
    let mut best = top;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let fit = at(mid);
        if fit.fits() {
            hi = mid;
            best = fit;
        } else {
            lo = mid;
        }
    }
    Some((Bytes(hi * RAM_STEP), best))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(format::rate_coarse(9.61), "9.61");
        assert_eq!(format::rate_coarse(38.24), "38.2");
        assert_eq!(format::usd_coarse(1599.0), "$1,599");
        assert_eq!(PickPrice::PerHour(Some(1.86)).to_string(), "$1.86/h");
        assert_eq!(PickPrice::Purchase(None).to_string(), "price unknown");
        assert_eq!(
            KindFilter::from_cli("Mini-PC"),
            Some(KindFilter(MachineKind::MiniPc))
        );
        assert_eq!(KindFilter::from_cli("phone"), None);
    }

    #[test]
    fn a_reason_lists_what_else_the_pick_answers() {
        let r = Reason {
            why: Why::Cheapest {
                group: Group::Laptop,
                need: Bytes::gib(6),
                memory: MemoryShown::Gpu,
                tokens_per_s: 38.24,
            },
            also: vec![
                Why::Fastest {
                    group: Group::Laptop,
                    within: Some(PickPrice::Purchase(Some(3000.0))),
                    tokens_per_s: 38.24,
                    verdict_text: "GPU".into(),
                    price: PickPrice::Purchase(Some(1599.0)),
                },
                Why::CheapestOffload {
                    group: Group::Laptop,
                    how: OffloadHow::Cpu,
                    floor_tokens_per_s: 5.0,
                    tokens_per_s: 38.24,
                },
            ],
        };
        assert_eq!(
            r.to_string(),
            "cheapest laptop with ≥ 6.00 GiB usable GPU memory; 38.2 tok/s; also the fastest \
             laptop under $3,000; also the cheapest that runs it at ≥ 5.00 tok/s"
        );
    }
}
