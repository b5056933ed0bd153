//! Every file in tests/specs/invalid/ is a broken sweep; `racksweep check` must reject it with
//! exit code 1 and exactly the message recorded in the matching `.expected` file.

mod common;

use common::{assert_snapshot, root, run_in, stderr};

#[test]
fn invalid_specs_fail_with_their_recorded_message() {
    let dir = root().join("tests/specs/invalid");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "only {} invalid specs", files.len());
    for file in files {
        let name = file.file_name().unwrap().to_str().unwrap();
        let out = run_in(&dir, &["check", name]);
        let code = out.status.code().expect("exit code");
        let actual = format!("exit: {code}\n{}", stderr(&out));
        assert_eq!(code, 1, "{name}: {actual}");
        assert!(!stderr(&out).contains("panicked"), "{name} panicked");
        assert_snapshot(&file.with_extension("expected"), &actual);
    }
}
