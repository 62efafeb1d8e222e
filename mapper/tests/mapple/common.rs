//! Shared helpers: loading the fixtures.

use std::path::PathBuf;

/// The fixture directory.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mapple/fixtures")
}

/// Every fixture as (file name, text), sorted by name.
pub fn fixtures() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let entries = std::fs::read_dir(fixture_dir()).expect("fixture directory exists");
    for entry in entries {
        let path = entry.expect("readable directory entry").path();
        if path.extension().and_then(|e| e.to_str()) == Some("mapple") {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("UTF-8 file name")
                .to_string();
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            out.push((name, text));
        }
    }
    out.sort();
    out
}

/// The text of one fixture.
pub fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(name)).expect("fixture exists")
}
