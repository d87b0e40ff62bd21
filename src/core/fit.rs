//! Fit engine (stub, filled in next).
