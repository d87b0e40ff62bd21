//! headroom: what hardware do I need for this LLM, and will it run on mine?
//!
//! `core` is pure (no GUI, detection or file IO); `io`, `gui` and `cli` depend on it.

pub mod cli;
pub mod core;
#[cfg(feature = "gui")]
pub mod gui;
pub mod io;
#[cfg(feature = "mcp")]
pub mod mcp;
