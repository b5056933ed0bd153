//! The largest inputs racksweep accepts, each with its reason, in one place. The spec, the
//! catalog checks and `validate` reject what lies beyond them with a message that names the key,
//! and the bounds are chosen so that every count the models form from them (GPUs of a cluster,
//! `tp x pp x cp`, `dp x microbatch`, ...) fits the `u32` it is kept in. The [`Bounds`] of each
//! integer key and grid axis (the axis tables name theirs) live here too. docs/sweep-format.md
//! states each one.

/// Racks in one cluster: 100,000 racks of 72 GPUs is 7.2 million GPUs, several gigawatts, more
/// than any single deployment plans. Also where `racks = "auto"` gives up.
pub const MAX_RACKS: u32 = 100_000;
pub const MAX_RACKS_WHY: &str =
    "100,000 racks of 72 GPUs is 7.2 million GPUs, more than any single deployment plans";

/// GPUs of one rack (`gpus_per_server x servers_per_rack`): the largest announced rack-scale
/// system, NVIDIA's NVL576, has 576.
pub const MAX_RACK_GPUS: u32 = 4_096;
pub const MAX_RACK_GPUS_WHY: &str =
    "NVIDIA's largest announced rack-scale system, NVL576, has 576 GPUs";

/// GPUs of one cluster: the most racks of the largest racks.
pub const MAX_CLUSTER_GPUS: u32 = MAX_RACKS * MAX_RACK_GPUS;
pub const MAX_CLUSTER_GPUS_WHY: &str =
    "409,600,000 GPUs is 100,000 racks of 4,096, more than any deployment plans";

/// A parallel degree or split (`tp`, `pp`, `ep`, `cp`, `virtual_stages`): no model has more
/// than 1,024 attention heads, experts or layers to split.
pub const MAX_DEGREE: u32 = 1_024;
pub const MAX_DEGREE_WHY: &str = "no model has more than 1,024 heads, experts or layers to split";

/// Sequences of one batch or microbatch: serving engines hold at most thousands per instance,
/// training microbatches a few.
pub const MAX_BATCH: u32 = 1_048_576;
pub const MAX_BATCH_WHY: &str =
    "serving engines hold at most thousands of sequences at once, training microbatches a few";

/// Values an integer key or grid axis accepts, and why the largest is the largest.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub min: u32,
    pub max: u32,
    /// The reason for `max`, given as the hint of the error (`None` where it is plain).
    pub why: Option<&'static str>,
}

/// Whole numbers from 1 that the model never multiplies (sequence lengths, a range's step).
pub const COUNT: Bounds = Bounds {
    min: 1,
    max: u32::MAX,
    why: None,
};
/// Racks of a cluster.
pub const RACKS: Bounds = Bounds {
    min: 1,
    max: MAX_RACKS,
    why: Some(MAX_RACKS_WHY),
};
/// Parallel degrees and splits: tp, pp, ep, cp, virtual_stages.
pub const DEGREE: Bounds = Bounds {
    min: 1,
    max: MAX_DEGREE,
    why: Some(MAX_DEGREE_WHY),
};
/// A parallel degree where 0 means "the same as the layout's" (`prefill_tp`).
pub const DEGREE_OR_SAME: Bounds = Bounds {
    min: 0,
    max: MAX_DEGREE,
    why: Some(MAX_DEGREE_WHY),
};
/// Sequences of a batch or microbatch.
pub const BATCH: Bounds = Bounds {
    min: 1,
    max: MAX_BATCH,
    why: Some(MAX_BATCH_WHY),
};
/// GPUs of a cluster, or its data-parallel replicas.
pub const CLUSTER_GPUS: Bounds = Bounds {
    min: 1,
    max: MAX_CLUSTER_GPUS,
    why: Some(MAX_CLUSTER_GPUS_WHY),
};
/// Share of instances in the prefill pool; 0 = aggregated serving.
pub const PERCENT: Bounds = Bounds {
    min: 0,
    max: 99,
    why: None,
};
/// Draft tokens per step; 0 = no speculative decoding. Engines propose at most a handful
/// (DeepSeek-V3's MTP is used with 1-3; EAGLE-style drafts with up to ~8).
pub const DRAFT_TOKENS: Bounds = Bounds {
    min: 0,
    max: 16,
    why: None,
};
/// Oversubscription of the scale-out spine, `r` for `r:1`: GPU clusters are built 1:1 to 4:1;
/// at 16:1 traffic between racks gets a sixteenth of the NICs' bandwidth, no longer a fabric for
/// collectives.
pub const OVERSUBSCRIPTION: Bounds = Bounds {
    min: 1,
    max: 16,
    why: Some(
        "GPU clusters are built 1:1 to 4:1; at 16:1 traffic between racks gets a sixteenth of the NICs' bandwidth",
    ),
};
/// ZeRO stages 0 to 3.
pub const ZERO_STAGES: Bounds = Bounds {
    min: 0,
    max: 3,
    why: None,
};

/// Seconds in a year (365 days): the bound on every duration of a sweep (think time, session
/// length, a schedule phase, restart time, latency objectives).
pub const MAX_SECONDS: f64 = 365.0 * 86_400.0;

/// Bytes of a sweep file or a measurements file: a real one is a few kilobytes.
pub const MAX_INPUT_BYTES: u64 = 16 * 1024 * 1024;

/// Characters of a value quoted in an error message; longer values are cut with "…".
pub const MAX_QUOTED_CHARS: usize = 80;

// Every product the models form from bounded counts fits in u32.
const _: () = {
    let u32_max = u32::MAX as u64;
    // The GPUs of a cluster.
    assert!(MAX_RACKS as u64 * MAX_RACK_GPUS as u64 <= u32_max);
    // tp x pp x cp, and tp x cp x ep (training's largest scale-up group).
    assert!((MAX_DEGREE as u64).pow(3) <= u32_max);
    // pp x virtual_stages, max(tp, ep) x pp.
    assert!((MAX_DEGREE as u64).pow(2) <= u32_max);
};

/// `value` for an error message: cut at [`MAX_QUOTED_CHARS`] characters with "…".
pub fn quoted(value: &str) -> String {
    match value.char_indices().nth(MAX_QUOTED_CHARS) {
        None => value.to_string(),
        Some((at, _)) => format!("{}…", &value[..at]),
    }
}

/// A number for an error message: as written when it is ordinary, in scientific notation when
/// it is huge or tiny (`1.797e308`, not 309 digits).
pub fn number(x: f64) -> String {
    let a = x.abs();
    if a != 0.0 && a.is_finite() && !(1e-6..1e16).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// `message` with every double-quoted value in it cut as [`quoted`] cuts it (for messages of
/// other crates, such as the TOML parser's, that quote what they read).
pub fn cut_quotes(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4 * MAX_QUOTED_CHARS));
    for (i, part) in message.split('"').enumerate() {
        if i > 0 {
            out.push('"');
        }
        // Odd parts lie between quotes.
        if i % 2 == 1 {
            out.push_str(&quoted(part));
        } else {
            out.push_str(part);
        }
    }
    out
}

/// Reads a whole input file (a sweep, measurements, and a run directory's own text files: its
/// sweep, records and manifest), refusing anything but a regular file of at most
/// [`MAX_INPUT_BYTES`]: a FIFO or a device (`/dev/zero`) would block or never end. The file
/// system's errors keep their kind (a missing file is `NotFound`).
pub fn read_input(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::{Error, Read as _};
    // Looked at before opening: opening a FIFO blocks until something writes to it.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(Error::other("not a regular file"));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(Error::other(format!(
            "{} bytes, more than the {} MiB an input file may have",
            meta.len(),
            MAX_INPUT_BYTES >> 20
        )));
    }
    // The file may grow under us: read one byte past the cap at most.
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(MAX_INPUT_BYTES + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > MAX_INPUT_BYTES {
        return Err(Error::other(format!(
            "more than the {} MiB an input file may have",
            MAX_INPUT_BYTES >> 20
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_bound_is_the_racks_of_the_largest_racks() {
        assert_eq!(MAX_CLUSTER_GPUS, 409_600_000);
        assert_eq!(MAX_SECONDS, 31_536_000.0);
    }

    #[test]
    fn long_values_are_cut_at_80_characters() {
        assert_eq!(quoted("tp"), "tp");
        let long = "x".repeat(200);
        let q = quoted(&long);
        assert_eq!(q.chars().count(), 81);
        assert!(q.ends_with("x…"));
        // Multi-byte characters are cut on a character boundary.
        let wide = "é".repeat(100);
        assert_eq!(quoted(&wide).chars().count(), 81);
        assert_eq!(quoted(&"y".repeat(80)), "y".repeat(80));
    }

    #[test]
    fn numbers_in_messages_read_well() {
        assert_eq!(number(1.797e308), "1.797e308");
        assert_eq!(number(5e-324), "5e-324");
        assert_eq!(number(1e-12), "1e-12");
        assert_eq!(number(2048.5), "2048.5");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(-1.0), "-1");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "inf");
    }

    #[test]
    fn quoted_values_in_other_messages_are_cut() {
        let message = format!(
            "invalid type: string \"{}\", expected a sequence",
            "z".repeat(500)
        );
        let cut = cut_quotes(&message);
        assert_eq!(
            cut,
            format!(
                "invalid type: string \"{}…\", expected a sequence",
                "z".repeat(80)
            )
        );
        assert_eq!(cut_quotes("unknown field `x`"), "unknown field `x`");
    }

    #[test]
    fn only_regular_files_under_the_cap_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("s.toml");
        std::fs::write(&ok, "a = 1\n").unwrap();
        assert_eq!(read_input(&ok).unwrap(), "a = 1\n");
        let why = |path: &std::path::Path| read_input(path).unwrap_err().to_string();
        assert_eq!(why(dir.path()), "not a regular file");
        #[cfg(unix)]
        assert_eq!(why(std::path::Path::new("/dev/zero")), "not a regular file");
        let missing = read_input(&dir.path().join("absent")).unwrap_err();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
        let big = dir.path().join("big.toml");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_INPUT_BYTES + 1).unwrap();
        assert_eq!(
            why(&big),
            "16777217 bytes, more than the 16 MiB an input file may have"
        );
    }
}
