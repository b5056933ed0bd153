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

/// A sweep file is read only if it is a regular file of at most 16 MiB: a device or a FIFO
/// would never end or never start (`check /dev/zero` used to grow without bound).
#[test]
fn only_regular_files_of_at_most_16_mib_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    let big = tmp.path().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(16 * 1024 * 1024 + 1)
        .unwrap();
    let fifo = tmp.path().join("fifo.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    let mut cases = vec![
        (
            "/dev/zero".to_string(),
            "error: cannot read sweep file /dev/zero: not a regular file\nhint: pass the path of a .toml sweep file, e.g. sweeps/quickstart.toml\n".to_string(),
        ),
        (
            big.display().to_string(),
            format!("error: cannot read sweep file {}: 16777217 bytes, more than the 16 MiB an input file may have\nhint: pass the path of a .toml sweep file, e.g. sweeps/quickstart.toml\n", big.display()),
        ),
        (
            tmp.path().display().to_string(),
            format!("error: cannot read sweep file {}: not a regular file\nhint: pass the path of a .toml sweep file, e.g. sweeps/quickstart.toml\n", tmp.path().display()),
        ),
    ];
    if made {
        cases.push((
            fifo.display().to_string(),
            format!("error: cannot read sweep file {}: not a regular file\nhint: pass the path of a .toml sweep file, e.g. sweeps/quickstart.toml\n", fifo.display()),
        ));
    }
    for (path, expected) in cases {
        let out = run_in(&root(), &["check", &path]);
        assert_eq!(out.status.code(), Some(1), "{path}");
        assert_eq!(stderr(&out), expected);
    }
}
