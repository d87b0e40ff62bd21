//! Everything that touches the outside world: catalog files, model files, detection, export.
