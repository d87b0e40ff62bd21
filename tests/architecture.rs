//! docs/architecture.md draws the source tree: every folder and every file under `src/` is
//! named there (a file by its name inside its folder's entry), so a module added without its
//! line in the drawing fails here. Test-only modules (`tests.rs`) are left out.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.push(p.clone());
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn every_source_file_and_folder_is_in_the_drawing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    assert!(paths.len() > 100, "only {} paths under src/", paths.len());
    let missing: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?;
            if name == "tests.rs" {
                return None;
            }
            let needle = if p.is_dir() {
                format!("{name}/")
            } else {
                name.to_string()
            };
            (!doc.contains(&needle)).then(|| p.strip_prefix(root).unwrap().display().to_string())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/architecture.md does not name: {missing:?}"
    );
    // A name that several folders use (verify.rs, quality.rs, …) is named once for each.
    let mut by_name = std::collections::BTreeMap::<String, Vec<String>>::new();
    for p in paths.iter().filter(|p| p.is_file()) {
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if name != "mod.rs" && name != "tests.rs" {
            let shown = p.strip_prefix(root).unwrap().display().to_string();
            by_name.entry(name).or_default().push(shown);
        }
    }
    let short: Vec<String> = by_name
        .iter()
        .filter(|(name, files)| doc.matches(name.as_str()).count() < files.len())
        .map(|(name, files)| format!("{name}: {files:?}"))
        .collect();
    assert!(
        short.is_empty(),
        "docs/architecture.md names these fewer times than src/ has them: {short:?}"
    );
}
