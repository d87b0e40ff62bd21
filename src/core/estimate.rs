//! Memory estimate (stub, filled in next).
use super::scenario::Scenario;
use super::units::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentKind { Weights, KvCache, Activations, Gradients, Optimizer, MasterWeights, Overhead }
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance { Exact, Derived, Heuristic }
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement { Gpu, Host }
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Component { pub kind: ComponentKind, pub name: String, pub bytes: Bytes, pub per_device: Bytes, pub placement: Placement, pub provenance: Provenance, pub formula: String }
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate { pub components: Vec<Component> }
pub fn estimate(_s: &Scenario) -> Estimate { Estimate::default() }
