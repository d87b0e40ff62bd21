//! What a view asks the app to do: drawing pushes [`Command`]s, the app applies them after the
//! frame's drawing is done (views never do side effects themselves).

use super::jobs::FileAction;
use std::path::PathBuf;

/// A side effect requested while drawing, applied after the frame's drawing is done.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Open the file dialog for this action (on a job thread).
    Dialog(FileAction),
    /// Do the action on this path without a dialog (typed path, dropped file, tests).
    AtPath(FileAction, PathBuf),
    /// Detect this machine again.
    Redetect,
    /// Measure this machine's memory bandwidth (`io::detect::probe`, on a job thread).
    ProbeBandwidth,
    ResetScenario,
    /// Open "Verify with llama-bench" (`gui::verify`).
    OpenVerify,
    /// Put text on the clipboard.
    Copy(String),
}
