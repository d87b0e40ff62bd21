//! Speed model (stub, filled in next).
