//! Which machine to buy or rent for an image pipeline (`recommend --mode image`, the window's
//! cards in image mode), read off the fit rows ([`ImageFit`]) alone — nothing here has a memory
//! or speed model of its own. Per group (laptop, Apple, desktop/workstation, cloud instance):
//!
//! - **cheapest**: the machine that runs the pipeline on its GPU for the least money — the
//!   lowest purchase price for owned machines, the lowest $ per 1000 images for cloud instances
//!   (an hour's price is only comparable with the images it makes);
//! - **fastest**: the most images per hour of the whole machine (one pipeline per GPU,
//!   [`super::speed::pipelines_on`]), within the budget when one is given.
//!
//! A machine that only runs the pipeline on its CPU is never picked (minutes per image). The
//! buyer's constraints are the text recommendations' ([`Constraints`]): the budget, the most per
//! hour and the kinds; the speed floor there is in tokens/s and does not apply.

use super::speed::{ImageFit, ImageVerdict};
use crate::core::catalog::{Catalog, Machine};
use crate::core::recommend::{Constraints, Group, PickPrice, is_apple_gpu};
use serde::Serialize;
use std::sync::Arc;

/// The question a pick answers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageRole {
    /// Lowest purchase price (owned) or $ per 1000 images (cloud) on the GPU.
    Cheapest,
    /// Most images per hour, within the budget.
    Fastest,
}

impl ImageRole {
    pub const fn cli_name(self) -> &'static str {
        match self {
            ImageRole::Cheapest => "cheapest",
            ImageRole::Fastest => "fastest",
        }
    }
    /// The label of the pick in `group`.
    pub const fn label(self, group: Group) -> &'static str {
        match (self, group) {
            (ImageRole::Cheapest, Group::Cloud) => "Lowest $ per 1000 images",
            (ImageRole::Cheapest, _) => "Cheapest on the GPU",
            (ImageRole::Fastest, _) => "Most images per hour",
        }
    }
}

/// One pick: the machine and the figures that chose it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImagePick {
    pub role: ImageRole,
    pub machine: Arc<str>,
    pub name: Arc<str>,
    pub verdict: ImageVerdict,
    pub price: PickPrice,
    pub seconds_per_image: f64,
    /// Every pipeline of the machine together.
    pub machine_images_per_hour: f64,
    pub pipelines: u64,
    pub usd_per_1000_images: Option<f64>,
}

/// A group's picks; empty when nothing in it runs the pipeline on a GPU within the
/// constraints.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImageGroupPicks {
    pub group: Group,
    pub picks: Vec<ImagePick>,
}

/// Whether `m` is within the buyer's price limits.
fn affordable(m: &Machine, c: &Constraints) -> bool {
    match PickPrice::of(m) {
        PickPrice::Purchase(Some(usd)) => c.budget_usd.is_none_or(|b| usd <= b),
        PickPrice::PerHour(Some(usd)) => c.max_usd_per_hour.is_none_or(|b| usd <= b),
        // A machine without a price meets no price limit that was given.
        PickPrice::Purchase(None) => c.budget_usd.is_none(),
        PickPrice::PerHour(None) => c.max_usd_per_hour.is_none(),
    }
}

fn pick(role: ImageRole, f: &ImageFit, m: &Machine) -> ImagePick {
    ImagePick {
        role,
        machine: f.machine.clone(),
        name: f.name.clone(),
        verdict: f.verdict,
        price: PickPrice::of(m),
        seconds_per_image: f.speed.as_ref().map_or(f64::NAN, |s| s.seconds_per_image),
        machine_images_per_hour: f.machine_images_per_hour,
        pipelines: f.pipelines,
        usd_per_1000_images: f.usd_per_1000_images,
    }
}

/// The cheapest and the fastest machine per group, for the groups the constraints ask for (all
/// when they name none). `fits` and `machines` are matched by id.
pub fn picks(
    fits: &[ImageFit],
    machines: &[&Machine],
    cat: &Catalog,
    c: &Constraints,
) -> Vec<ImageGroupPicks> {
    let groups: Vec<Group> = Group::ALL
        .into_iter()
        .filter(|g| c.kinds.is_empty() || c.kinds.iter().any(|k| k.group() == *g))
        .collect();
    groups
        .into_iter()
        .map(|g| {
            let cands: Vec<(&ImageFit, &Machine)> = fits
                .iter()
                .filter(|f| matches!(f.verdict, ImageVerdict::Gpu(_)))
                .filter_map(|f| {
                    let m = machines.iter().find(|m| m.id == f.machine)?;
                    let apple = is_apple_gpu(m, cat);
                    let kind_ok = g.contains(m, apple)
                        && (c.kinds.is_empty()
                            || c.kinds
                                .iter()
                                .any(|k| k.group() == g && k.matches(m, apple)));
                    (kind_ok && affordable(m, c)).then_some((f, *m))
                })
                .collect();
            let cost = |(f, m): &(&ImageFit, &Machine)| match PickPrice::of(m) {
                PickPrice::PerHour(_) => f.usd_per_1000_images.unwrap_or(f64::INFINITY),
                PickPrice::Purchase(p) => p.unwrap_or(f64::INFINITY),
            };
            let rate = |(f, _): &(&ImageFit, &Machine)| f.machine_images_per_hour;
            let cheapest = cands.iter().filter(|x| cost(x).is_finite()).min_by(|a, b| {
                cost(a)
                    .total_cmp(&cost(b))
                    .then(rate(b).total_cmp(&rate(a)))
            });
            let fastest = cands.iter().max_by(|a, b| {
                rate(a)
                    .total_cmp(&rate(b))
                    .then(cost(b).total_cmp(&cost(a)))
            });
            let mut picks = Vec::new();
            if let Some((f, m)) = cheapest {
                picks.push(pick(ImageRole::Cheapest, f, m));
            }
            if let Some((f, m)) = fastest {
                picks.push(pick(ImageRole::Fastest, f, m));
            }
            ImageGroupPicks { group: g, picks }
        })
        .collect()
}
