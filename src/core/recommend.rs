//! Recommendations: which machine to buy or rent for a scenario, per kind, and what would make
//! this machine run it. Computed only from the fit rows ([`FitResult`]) and the solvers of
//! [`super::fit`]; nothing here has its own memory or speed model.
//!
//! Per group (laptop, Apple, desktop/workstation, cloud instance) the picks are: the cheapest
//! machine that holds the workload in GPU (or unified) memory, the fastest (within the budget
//! when one is given), for cloud instances the lowest $ per 1M tokens, and the cheapest machine
//! that runs it with offload (or on the CPU) at a minimum speed. Each pick carries a one-line
//! reason; a group where the constraints rule everything out says what would have to give.
//! The rules are written down in docs/recommend.md.

use super::catalog::{Catalog, Machine, MachineKind, MemoryKind, Price, Vendor};
use super::estimate::{estimate, group_digits};
use super::fit::{
    EstimateCache, FitResult, FitSettings, Verdict, fit_all, fit_machine, solve_max_context,
    solve_precision,
};
use super::scenario::Scenario;
use super::units::{Bytes, GIB};
use serde::{Deserialize, Serialize};

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
    fn contains(self, m: &Machine, apple_gpu: bool) -> bool {
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

/// A `--kind` value: which groups to answer for, and which machines inside them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KindFilter {
    Laptop,
    Apple,
    Desktop,
    Workstation,
    Cloud,
    MiniPc,
}

impl KindFilter {
    pub const ALL: [KindFilter; 6] = [
        KindFilter::Laptop,
        KindFilter::Apple,
        KindFilter::Desktop,
        KindFilter::Workstation,
        KindFilter::Cloud,
        KindFilter::MiniPc,
    ];
    pub const fn cli_name(self) -> &'static str {
        match self {
            KindFilter::Laptop => "laptop",
            KindFilter::Apple => "apple",
            KindFilter::Desktop => "desktop",
            KindFilter::Workstation => "workstation",
            KindFilter::Cloud => "cloud",
            KindFilter::MiniPc => "mini-pc",
        }
    }
    pub fn from_cli(s: &str) -> Option<Self> {
        let t = s.trim().to_ascii_lowercase();
        Self::ALL.into_iter().find(|k| k.cli_name() == t)
    }
    fn group(self) -> Group {
        match self {
            KindFilter::Laptop => Group::Laptop,
            KindFilter::Apple => Group::Apple,
            KindFilter::Cloud => Group::Cloud,
            _ => Group::Desktop,
        }
    }
    fn matches(self, m: &Machine, apple_gpu: bool) -> bool {
        match self {
            KindFilter::Workstation => m.kind == MachineKind::Workstation,
            KindFilter::MiniPc => m.kind == MachineKind::MiniPc,
            k => k.group().contains(m, apple_gpu),
        }
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

/// One recommended machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    pub role: Role,
    pub machine: String,
    pub name: String,
    /// Purchase price (owned) or price per hour (cloud), USD.
    pub price_usd: Option<f64>,
    /// Whether `price_usd` is per hour.
    pub hourly: bool,
    pub verdict: Verdict,
    /// "GPU", "offload 20/80", …
    pub verdict_text: String,
    /// Decode tokens/s (training: training tokens/s).
    pub tokens_per_s: f64,
    /// $ per 1M tokens (training: the run's cost per 1M trained tokens).
    pub usd_per_million_tokens: Option<f64>,
    /// "cheapest laptop with ≥ 5.96 GiB usable GPU memory; 38.2 tok/s".
    pub reason: String,
}

impl Pick {
    /// "$1,599", "$1.86/h", "price unknown".
    pub fn price_text(&self) -> String {
        price_text(self.price_usd, self.hourly)
    }
    /// "38.2 tok/s".
    pub fn speed_text(&self) -> String {
        format!("{} tok/s", rate_text(self.tokens_per_s))
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
    pub unmet: Vec<String>,
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
}

/// One step on this machine's upgrade path.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Upgrade {
    pub change: ChangeKind,
    /// The weight precision to use (CLI name), for `precision`.
    pub weights: Option<String>,
    /// The context to use, tokens, for `context`.
    pub context: Option<u64>,
    /// System RAM to have, bytes, for `ram`.
    pub ram_bytes: Option<u64>,
    /// GPU memory to have, bytes, for `gpu`.
    pub gpu_memory_bytes: Option<u64>,
    /// A catalog accelerator (`gpu`) or machine (`machine`) that has it.
    pub example: Option<String>,
    /// The verdict after the change.
    pub verdict: Verdict,
    pub tokens_per_s: f64,
    /// "Q4_K_M weights instead of BF16: runs on the GPU at 38.2 tok/s".
    pub text: String,
}

/// This machine: its verdict and the smallest changes that would make it fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThisMachine {
    pub machine: String,
    pub name: String,
    pub verdict: Verdict,
    pub verdict_text: String,
    pub tokens_per_s: f64,
    /// "runs it on the GPU at 38.2 tok/s", "does not fit: …".
    pub summary: String,
    /// Changes that make it run on the GPU (or at all), smallest first: settings before
    /// hardware. Empty when it already runs on the GPU.
    pub upgrades: Vec<Upgrade>,
}

impl ThisMachine {
    /// "This machine (RTX 4090 desktop)", or the detected name when it already says so.
    pub fn title(&self) -> String {
        if self.name.starts_with("This machine") {
            self.name.clone()
        } else {
            format!("This machine ({})", self.name)
        }
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

// ---- Formatting (the one formatter every surface uses for these numbers) ----

/// Tokens per second: "1,234", "56.7", "3.21", "0.012"; "–" when zero or not finite.
pub fn rate_text(x: f64) -> String {
    if !x.is_finite() || x <= 0.0 {
        "–".into()
    } else if x >= 1000.0 {
        group_digits(x.round() as u64)
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Dollars: "$1,599", "$500", "$12.50", "$0.43", "$0.0420".
pub fn usd_text(x: f64) -> String {
    if !x.is_finite() || x < 0.0 {
        "–".into()
    } else if x >= 100.0 {
        format!("${}", group_digits(x.round() as u64))
    } else if x >= 0.1 {
        format!("${x:.2}")
    } else {
        format!("${x:.4}")
    }
}

/// A machine price: "$1,599", "$1.86/h", "price unknown".
pub fn price_text(usd: Option<f64>, hourly: bool) -> String {
    match usd {
        Some(u) if hourly => format!("{}/h", usd_text(u)),
        Some(u) => usd_text(u),
        None => "price unknown".into(),
    }
}

// ---- The computation ----

fn is_apple_gpu(m: &Machine, cat: &Catalog) -> bool {
    m.gpu
        .as_deref()
        .and_then(|g| cat.accelerator(g))
        .is_some_and(|a| a.vendor == Vendor::Apple)
}

fn on_gpu(f: &FitResult) -> bool {
    matches!(f.verdict, Verdict::Gpu | Verdict::Unified)
}

/// Decode tok/s, or training tokens/s.
fn speed(f: &FitResult) -> f64 {
    match &f.training {
        Some(t) => t.tokens_per_s,
        None => f.decode_tokens_per_s,
    }
    .max(0.0)
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

/// A candidate: a fit row and the machine it belongs to.
#[derive(Clone, Copy)]
struct Cand<'a> {
    f: &'a FitResult,
    price: Option<f64>,
    hourly: bool,
}

fn price_of(m: &Machine) -> (Option<f64>, bool) {
    match &m.price {
        Some(Price::Hourly { usd, .. }) => (Some(*usd).filter(|u| u.is_finite()), true),
        Some(Price::Purchase { usd, .. }) => (Some(*usd).filter(|u| u.is_finite()), false),
        None => (None, false),
    }
}

/// The price limit that applies to `c` (cloud: per hour; owned: the budget).
fn price_limit(c: &Cand, k: &Constraints) -> Option<f64> {
    if c.hourly {
        k.max_usd_per_hour
    } else {
        k.budget_usd
    }
}

fn within_price(c: &Cand, k: &Constraints) -> bool {
    match price_limit(c, k) {
        Some(lim) => c.price.is_some_and(|p| p <= lim),
        None => true,
    }
}

fn limit_text(group: Group, k: &Constraints) -> Option<String> {
    if group == Group::Cloud {
        k.max_usd_per_hour.map(|l| format!("{}/h", usd_text(l)))
    } else {
        k.budget_usd.map(usd_text)
    }
}

fn pick(role: Role, c: &Cand, s: &Scenario, reason: String) -> Pick {
    Pick {
        role,
        machine: c.f.machine.to_string(),
        name: c.f.name.to_string(),
        price_usd: c.price,
        hourly: c.hourly,
        verdict: c.f.verdict,
        verdict_text: c.f.verdict_text(),
        tokens_per_s: speed(c.f),
        usd_per_million_tokens: cost_per_million(c.f, s),
        reason,
    }
}

fn by_price(a: &Cand, b: &Cand) -> std::cmp::Ordering {
    a.price
        .unwrap_or(f64::INFINITY)
        .total_cmp(&b.price.unwrap_or(f64::INFINITY))
        .then(speed(b.f).total_cmp(&speed(a.f)))
}

fn short(c: &Cand) -> String {
    format!(
        "{} ({}, {}, {} tok/s)",
        c.f.name,
        price_text(c.price, c.hourly),
        c.f.verdict_text(),
        rate_text(speed(c.f))
    )
}

/// The picks of one group from its candidates.
fn group_picks(group: Group, cands: &[Cand], s: &Scenario, k: &Constraints) -> GroupPicks {
    let mut picks = Vec::new();
    let mut unmet = Vec::new();
    let noun = group.noun();
    let min_speed = k.min_tokens_per_s.filter(|x| x.is_finite() && *x > 0.0);
    let fast_enough = |c: &Cand| min_speed.is_none_or(|m| speed(c.f) >= m);
    let limit = limit_text(group, k);
    let training = s.mode.is_training();

    // Cheapest that holds it in GPU memory.
    let gpu: Vec<Cand> = cands.iter().filter(|c| on_gpu(c.f)).copied().collect();
    let gpu_priced: Vec<Cand> = gpu.iter().filter(|c| c.price.is_some()).copied().collect();
    let gpu_fast: Vec<Cand> = gpu_priced
        .iter()
        .filter(|c| fast_enough(c))
        .copied()
        .collect();
    let gpu_ok: Vec<Cand> = gpu_fast
        .iter()
        .filter(|c| within_price(c, k))
        .copied()
        .collect();
    if let Some(c) = gpu_ok.iter().min_by(|a, b| by_price(a, b)) {
        let per = if group == Group::Cloud {
            " per hour"
        } else {
            ""
        };
        let mem = if c.f.verdict == Verdict::Unified {
            "usable unified memory"
        } else if c.f.gpus > 1 {
            "usable memory per GPU"
        } else {
            "usable GPU memory"
        };
        picks.push(pick(
            Role::Cheapest,
            c,
            s,
            format!(
                "cheapest {noun}{per} with ≥ {} {mem}; {} tok/s",
                c.f.gpu_required.display_gib(),
                rate_text(speed(c.f))
            ),
        ));
    } else if gpu.is_empty() {
        let most = cands
            .iter()
            .filter(|c| c.f.gpu_capacity.0 > 0)
            .max_by_key(|c| c.f.gpu_capacity.0);
        match most {
            Some(m) if m.f.gpu_capacity >= m.f.gpu_required => unmet.push(format!(
                "no {noun} holds it in GPU memory: {} has {} usable for the {} it needs, but not the RAM beside it",
                m.f.name,
                m.f.gpu_capacity.display_gib(),
                m.f.gpu_required.display_gib()
            )),
            Some(m) => unmet.push(format!(
                "no {noun} holds it in GPU memory: it needs {} per GPU, the most any has usable is {} ({})",
                m.f.gpu_required.display_gib(),
                m.f.gpu_capacity.display_gib(),
                m.f.name
            )),
            None if !cands.is_empty() => unmet.push(format!("no {noun} has a GPU for it")),
            None => {}
        }
    } else if gpu_priced.is_empty() {
        unmet.push(format!(
            "no {noun} that holds it on the GPU has a price in the catalog"
        ));
    } else if gpu_fast.is_empty() {
        let best = gpu_priced
            .iter()
            .max_by(|a, b| speed(a.f).total_cmp(&speed(b.f)));
        if let (Some(b), Some(m)) = (best, min_speed) {
            unmet.push(format!(
                "no {noun} reaches {} tok/s on the GPU; the fastest is {}",
                rate_text(m),
                short(b)
            ));
        }
    } else if let Some(c) = gpu_fast.iter().min_by(|a, b| by_price(a, b)) {
        unmet.push(format!(
            "nothing fits under {}; the cheapest is {}",
            limit.clone().unwrap_or_default(),
            short(c)
        ));
    }

    // Fastest that runs it (any verdict), within the price limit.
    let mut fastest_within = String::new();
    let runs: Vec<Cand> = cands.iter().filter(|c| c.f.fits()).copied().collect();
    if let Some(c) = runs
        .iter()
        .filter(|c| within_price(c, k) && fast_enough(c))
        .max_by(|a, b| speed(a.f).total_cmp(&speed(b.f)).then(by_price(b, a)))
    {
        let within = limit
            .as_ref()
            .map(|l| format!(" under {l}"))
            .unwrap_or_default();
        fastest_within = within;
        picks.push(pick(
            Role::Fastest,
            c,
            s,
            format!(
                "fastest {noun}{fastest_within}: {} tok/s ({}, {})",
                rate_text(speed(c.f)),
                c.f.verdict_text(),
                price_text(c.price, c.hourly)
            ),
        ));
    }

    // Cloud: lowest $ per 1M tokens.
    if group == Group::Cloud
        && let Some(c) = runs
            .iter()
            .filter(|c| c.price.is_some() && within_price(c, k) && fast_enough(c))
            .filter(|c| cost_per_million(c.f, s).is_some())
            .min_by(|a, b| {
                cost_per_million(a.f, s)
                    .unwrap_or(f64::INFINITY)
                    .total_cmp(&cost_per_million(b.f, s).unwrap_or(f64::INFINITY))
            })
    {
        let what = if training { "trained" } else { "generated" };
        let cost = usd_text(cost_per_million(c.f, s).unwrap_or(0.0));
        picks.push(pick(
            Role::BestValue,
            c,
            s,
            format!(
                "lowest cost per 1M tokens {what} among cloud instances that run it: {cost} at {}; {} tok/s",
                price_text(c.price, c.hourly),
                rate_text(speed(c.f))
            ),
        ));
    }

    // Cheapest that runs it with offload (or on the CPU) at the minimum speed, when cheaper than
    // the cheapest on the GPU.
    let mut floor_used = DEFAULT_MIN_OFFLOAD_TOKENS_PER_S;
    if !training {
        let floor = min_speed.unwrap_or(DEFAULT_MIN_OFFLOAD_TOKENS_PER_S);
        floor_used = floor;
        let gpu_price = picks
            .iter()
            .find(|p| p.role == Role::Cheapest)
            .and_then(|p| p.price_usd);
        if let Some(c) = runs
            .iter()
            .filter(|c| matches!(c.f.verdict, Verdict::Offload | Verdict::Cpu))
            .filter(|c| c.price.is_some() && within_price(c, k) && speed(c.f) >= floor)
            .filter(|c| gpu_price.is_none_or(|g| c.price.unwrap_or(f64::INFINITY) < g))
            .min_by(|a, b| by_price(a, b))
        {
            let how = if c.f.verdict == Verdict::Cpu {
                "on the CPU".to_string()
            } else {
                format!("with offload ({})", c.f.offload_split_text())
            };
            picks.push(pick(
                Role::CheapestOffload,
                c,
                s,
                format!(
                    "cheapest {noun} that runs it {how} at ≥ {} tok/s: {} tok/s",
                    rate_text(floor),
                    rate_text(speed(c.f))
                ),
            ));
        }
    }
    // Headline first: for the cloud what a token costs, elsewhere the cheapest on the GPU, then
    // the cheapest that runs it at all. A machine that answers two questions is listed once,
    // its reason saying what else it is.
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
            Some(q) => {
                let also = match p.role {
                    Role::Cheapest if group == Group::Cloud => {
                        "the cheapest per hour that holds it on the GPU".to_string()
                    }
                    Role::Cheapest => format!("the cheapest {noun} that holds it on the GPU"),
                    Role::Fastest => format!("the fastest {noun}{fastest_within}"),
                    Role::BestValue => "the lowest cost per 1M tokens".to_string(),
                    Role::CheapestOffload => format!(
                        "the cheapest that runs it at ≥ {} tok/s",
                        rate_text(floor_used)
                    ),
                };
                q.reason.push_str(&format!("; also {also}"));
            }
            None => out.push(p),
        }
    }
    GroupPicks {
        group,
        picks: out,
        unmet,
    }
}

/// Recommendations from fit rows already made: `fits[i]` is the fit of `machines[i]` for
/// scenario `s` (the GUI's cached rows). `this` is this machine when detected (it is never a
/// pick). Machines whose id equals `this`'s are skipped as candidates.
pub fn recommend_from_fits(
    s: &Scenario,
    machines: &[Machine],
    fits: &[FitResult],
    this: Option<&Machine>,
    cat: &Catalog,
    st: &FitSettings,
    k: &Constraints,
) -> Recommendations {
    let this_id = this.map(|m| &*m.id);
    let groups: Vec<Group> = if k.kinds.is_empty() {
        Group::ALL.to_vec()
    } else {
        Group::ALL
            .into_iter()
            .filter(|g| k.kinds.iter().any(|f| f.group() == *g))
            .collect()
    };
    let mut out = Vec::with_capacity(groups.len());
    for g in groups {
        let cands: Vec<Cand> = machines
            .iter()
            .zip(fits)
            .filter(|(m, _)| Some(&*m.id) != this_id)
            .filter(|(m, _)| {
                let apple = is_apple_gpu(m, cat);
                g.contains(m, apple)
                    && (k.kinds.is_empty()
                        || k.kinds
                            .iter()
                            .any(|f| f.group() == g && f.matches(m, apple)))
            })
            .map(|(m, f)| {
                let (price, hourly) = price_of(m);
                Cand {
                    f,
                    price,
                    hourly: hourly || m.kind == MachineKind::Cloud,
                }
            })
            .collect();
        if cands.is_empty() {
            continue;
        }
        out.push(group_picks(g, &cands, s, k));
    }
    let this_machine = this.map(|m| {
        let f = fits
            .iter()
            .zip(machines)
            .find(|(_, x)| x.id == m.id)
            .map(|(f, _)| f.clone())
            .unwrap_or_else(|| fit_all(s, [m], cat, st).remove(0));
        this_machine(s, m, &f, cat, st, k, &out)
    });
    Recommendations {
        groups: out,
        this_machine,
        context: s.context,
        constraints: k.clone(),
    }
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
) -> Recommendations {
    let s = scenario_for(s, k);
    let fits = fit_all(&s, machines, cat, st);
    recommend_from_fits(&s, machines, &fits, this, cat, st, k)
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

fn summary(f: &FitResult) -> String {
    let sp = rate_text(speed(f));
    match f.verdict {
        Verdict::Gpu => format!("runs it on the GPU at {sp} tok/s"),
        Verdict::Unified => format!("runs it in unified memory at {sp} tok/s"),
        Verdict::Offload => format!(
            "runs it with offload ({}) at {sp} tok/s",
            f.offload_split_text()
        ),
        Verdict::Cpu => format!("runs it on the CPU only, at {sp} tok/s"),
        Verdict::Disk => format!(
            "runs it only by reading {} from the disk, at {sp} tok/s",
            f.disk_bytes.display_gib()
        ),
        Verdict::None => {
            if f.gpu_capacity.0 > 0 {
                format!(
                    "does not fit: the GPU needs {} and has {} usable; RAM needs {} and has {} usable",
                    f.gpu_required.display_gib(),
                    f.gpu_capacity.display_gib(),
                    f.ram_required.display_gib(),
                    f.ram_capacity.display_gib()
                )
            } else {
                format!(
                    "does not fit: it needs {} of RAM and {} is usable",
                    f.ram_required.display_gib(),
                    f.ram_capacity.display_gib()
                )
            }
        }
    }
}

fn after(f: &FitResult) -> String {
    match f.verdict {
        Verdict::Gpu => format!("runs on the GPU at {} tok/s", rate_text(speed(f))),
        Verdict::Unified => format!("runs in unified memory at {} tok/s", rate_text(speed(f))),
        Verdict::Offload => format!(
            "runs with offload ({}) at {} tok/s",
            f.offload_split_text(),
            rate_text(speed(f))
        ),
        Verdict::Cpu => format!("runs on the CPU at {} tok/s", rate_text(speed(f))),
        Verdict::Disk => format!("runs from the disk at {} tok/s", rate_text(speed(f))),
        Verdict::None => "still does not fit".into(),
    }
}

/// This machine's verdict and the changes that would make it run on the GPU (or at all).
fn this_machine(
    s: &Scenario,
    m: &Machine,
    f: &FitResult,
    cat: &Catalog,
    st: &FitSettings,
    k: &Constraints,
    groups: &[GroupPicks],
) -> ThisMachine {
    let mut ups = Vec::new();
    let acc = m.gpu.as_deref().and_then(|g| cat.accelerator(g));
    let unified = acc.is_some_and(|a| a.memory_kind == MemoryKind::Unified);
    let training = s.mode.is_training();
    if !on_gpu(f) {
        // 1. Lower-bit weights (inference only: training precision is the optimizer's choice).
        if !training
            && acc.is_some()
            && let Some(p) = solve_precision(s, m, cat, st)
            && p.bits_per_weight() < s.weights.bits_per_weight()
        {
            let g = fit_one(
                &Scenario {
                    weights: p,
                    ..s.clone()
                },
                m,
                cat,
                st,
            );
            ups.push(Upgrade {
                change: ChangeKind::Precision,
                weights: Some(p.cli_name().to_string()),
                context: None,
                ram_bytes: None,
                gpu_memory_bytes: None,
                example: None,
                verdict: g.verdict,
                tokens_per_s: speed(&g),
                text: format!(
                    "{} weights instead of {}: {}",
                    p.label(),
                    s.weights.label(),
                    after(&g)
                ),
            });
        }
        // 2. A shorter context (no shorter than the minimum asked for).
        let floor = k.min_context.unwrap_or(0).max(256);
        if acc.is_some()
            && let Some(c) = solve_max_context(s, m, cat, st)
            && c < s.context
            && c >= floor
        {
            let g = fit_one(
                &Scenario {
                    context: c,
                    prompt_tokens: s.prompt_tokens.min(c),
                    ..s.clone()
                },
                m,
                cat,
                st,
            );
            ups.push(Upgrade {
                change: ChangeKind::Context,
                weights: None,
                context: Some(c),
                ram_bytes: None,
                gpu_memory_bytes: None,
                example: None,
                verdict: g.verdict,
                tokens_per_s: speed(&g),
                text: format!(
                    "a context of {} tokens instead of {}: {}",
                    group_digits(c),
                    group_digits(s.context),
                    after(&g)
                ),
            });
        }
        // 3. More RAM, so offload (or the CPU) can run it (discrete GPUs and CPU-only machines).
        if !f.fits()
            && !training
            && !unified
            && let Some((ram, g)) = min_ram(s, m, cat, st)
        {
            ups.push(Upgrade {
                change: ChangeKind::Ram,
                weights: None,
                context: None,
                ram_bytes: Some(ram.0),
                gpu_memory_bytes: None,
                example: None,
                verdict: g.verdict,
                tokens_per_s: speed(&g),
                text: format!(
                    "{} of RAM instead of {}: {}",
                    ram.display_gib(),
                    m.ram.display_gib(),
                    after(&g)
                ),
            });
        }
        // 4. A GPU with enough memory (a discrete card), or another Mac (unified memory).
        if unified {
            if let Some(p) = groups
                .iter()
                .find(|g| g.group == Group::Apple)
                .and_then(|g| g.picks.iter().find(|p| p.role == Role::Cheapest))
            {
                ups.push(Upgrade {
                    change: ChangeKind::Machine,
                    weights: None,
                    context: None,
                    ram_bytes: None,
                    gpu_memory_bytes: None,
                    example: Some(p.machine.clone()),
                    verdict: p.verdict,
                    tokens_per_s: p.tokens_per_s,
                    text: format!(
                        "a Mac with more memory: {} ({}) runs it in unified memory at {} tok/s",
                        p.name,
                        p.price_text(),
                        rate_text(p.tokens_per_s)
                    ),
                });
            }
        } else {
            let gpus = if acc.is_some() {
                m.gpu_count.max(1) as u64
            } else {
                1
            };
            let need = if acc.is_some() && f.gpu_required.0 > 0 {
                f.gpu_required
            } else {
                estimate(&Scenario { gpus, ..s.clone() }).per_gpu_total()
            };
            let example = cat
                .accelerators
                .iter()
                .filter(|a| a.memory_kind == MemoryKind::Discrete && a.memory >= need)
                .min_by(|a, b| {
                    a.memory
                        .cmp(&b.memory)
                        .then(b.bandwidth.0.total_cmp(&a.bandwidth.0))
                });
            let each = if gpus > 1 {
                format!(" each ({gpus} GPUs)")
            } else {
                String::new()
            };
            let ex = example
                .map(|a| format!(" (e.g. {}, {})", a.name, a.memory.display_gib()))
                .unwrap_or_else(|| " (no single GPU in the catalog has that much)".into());
            let (verdict, tps) = match example {
                Some(a) => {
                    let mut m2 = m.clone();
                    m2.gpu = Some(a.id.clone());
                    m2.gpu_count = gpus as u32;
                    let g = fit_one(s, &m2, cat, st);
                    (g.verdict, speed(&g))
                }
                None => (Verdict::None, 0.0),
            };
            ups.push(Upgrade {
                change: ChangeKind::Gpu,
                weights: None,
                context: None,
                ram_bytes: None,
                gpu_memory_bytes: Some(need.0),
                example: example.map(|a| a.id.clone()),
                verdict,
                tokens_per_s: tps,
                text: format!("a GPU with ≥ {} of memory{each}{ex}", need.display_gib()),
            });
        }
    }
    let mut sum = summary(f);
    if let Some(u) = ups.first() {
        sum.push_str(&format!("; smallest change: {}", u.text));
    }
    ThisMachine {
        machine: m.id.to_string(),
        name: m.name.to_string(),
        verdict: f.verdict,
        verdict_text: f.verdict_text(),
        tokens_per_s: speed(f),
        summary: sum,
        upgrades: ups,
    }
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
        let mut m2 = m.clone();
        m2.ram = Bytes(steps.saturating_mul(RAM_STEP));
        fit_one(s, &m2, cat, st)
    };
    let lo0 = m.ram.0 / RAM_STEP;
    let hi_cap = m.ram.0.saturating_mul(64).clamp(64 * GIB, 16 * 1024 * GIB) / RAM_STEP;
    if hi_cap <= lo0 {
        return None;
    }
    let mut hi = hi_cap;
    let top = at(hi);
    if !top.fits() {
        return None;
    }
    let mut lo = lo0; // does not fit at lo (the machine's own RAM)
    let mut best = top;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let f = at(mid);
        if f.fits() {
            hi = mid;
            best = f;
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
        assert_eq!(rate_text(9.61), "9.61");
        assert_eq!(rate_text(38.24), "38.2");
        assert_eq!(usd_text(1599.0), "$1,599");
        assert_eq!(price_text(Some(1.86), true), "$1.86/h");
        assert_eq!(price_text(None, false), "price unknown");
        assert_eq!(KindFilter::from_cli("Mini-PC"), Some(KindFilter::MiniPc));
        assert_eq!(KindFilter::from_cli("phone"), None);
    }
}
