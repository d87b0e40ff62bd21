//! The headless command line over the core.
