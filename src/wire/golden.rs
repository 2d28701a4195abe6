//! Golden files: the exact bytes of every message shape the crate writes,
//! kept in `src/wire/golden/` and compared byte for byte. Run the tests with
//! `UPDATE_GOLDEN=1` to rewrite them after an intended change, then review
//! the diff.

use std::path::PathBuf;

/// Compares `actual` with the golden file `name`, or rewrites the file when
/// `UPDATE_GOLDEN` is set.
pub(crate) fn check(name: &str, actual: &[u8]) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("src/wire/golden")
        .join(format!("{name}.json"));
    let mut actual = actual.to_vec();
    actual.push(b'\n');
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read(&path).unwrap_or_else(|err| {
        panic!(
            "{}: {err}; run with UPDATE_GOLDEN=1 to create it",
            path.display()
        )
    });
    assert_eq!(
        String::from_utf8_lossy(&actual),
        String::from_utf8_lossy(&expected),
        "{name} differs from its golden file; run with UPDATE_GOLDEN=1 if the change is intended"
    );
}
