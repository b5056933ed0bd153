//! Sweep files generated from a grammar of valid and invalid keys and values (huge, tiny,
//! negative, non-finite and subnormal numbers, integers past u32 and i64, empty lists, long
//! strings, inline presets with such numbers), run through the sweep parser and, where they
//! parse, through the models on a bounded sample of their grid:
//!
//! - nothing panics;
//! - a rejected file is a user error that names the file and cuts long values;
//! - every metric written is finite or null, and never negative but where the column can be
//!   (`headroom`);
//! - a configuration that runs has its throughput and latencies (training: its step time).
//!
//! TTFT percentiles are not asserted ordered here: the fuzz search found two corners where the
//! serving model orders them wrongly, kept as `ttft_percentiles_are_ordered` (ignored until the
//! model is fixed).
//!
//! Half the files are tame (every value from the key's own list of ordinary and extreme-but-
//! valid values, so most parse and reach the models), half wild (any value may be anything).
//! 1,024 cases (`CASES`; `FUZZ_CASES` sets another count), at most `POINTS` grid points each:
//! a few seconds in release.

use std::path::Path;

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

use racksweep::catalog::Catalog;
use racksweep::columns::{COLUMNS, Kind, Record, Row, TRAINING_COLUMNS, TrainRow};
use racksweep::engine::Space;
use racksweep::space::{Inference, Training};
use racksweep::spec::{self, Sweep};

/// Generated sweeps per run; `FUZZ_CASES` raises it for a longer search.
const CASES: u32 = 1024;
/// Grid points evaluated per generated sweep, spread evenly over its grid.
const POINTS: u64 = 64;
/// Grids larger than this are rejected by the parser (as `--max-configs` does).
const MAX_CONFIGS: u64 = 200_000;
/// A value longer than an error message may quote.
const LONG: usize = 300;

fn long_string() -> String {
    "x".repeat(LONG)
}

/// Whether a file's values may be anything (else each comes from its key's list).
#[derive(Debug, Clone, Copy)]
struct Wild(bool);

/// One of `values`, as TOML text.
fn pick(values: &[&'static str]) -> BoxedStrategy<String> {
    proptest::sample::select(values.to_vec())
        .prop_map(String::from)
        .boxed()
}

/// `typical` when tame; when wild, often something else entirely.
fn or_wild(
    w: Wild,
    typical: BoxedStrategy<String>,
    wild: BoxedStrategy<String>,
) -> BoxedStrategy<String> {
    if w.0 {
        prop_oneof![6 => typical, 1 => wild].boxed()
    } else {
        typical
    }
}

/// A number as TOML text.
fn number(w: Wild, typical: &[&'static str]) -> BoxedStrategy<String> {
    let wild = prop_oneof![
        6 => pick(&[
            "0", "-1", "-1e9", "1e-12", "0.5", "1e-300", "5e-324", "1e-310", "1e15", "1e308",
            "1.797e308", "nan", "inf", "-inf", "4294967295", "4294967296",
            "9223372036854775807", "-9223372036854775808",
        ]),
        1 => any::<f64>().prop_map(|x| {
            if x.is_nan() {
                "nan".to_string()
            } else if x.is_infinite() {
                if x > 0.0 { "inf" } else { "-inf" }.to_string()
            } else {
                format!("{x:?}")
            }
        }),
        1 => any::<i64>().prop_map(|x| x.to_string()),
        1 => Just(format!("\"{}\"", long_string())),
    ];
    or_wild(w, pick(typical), wild.boxed())
}

/// An integer as TOML text.
fn integer(w: Wild, typical: &[&'static str]) -> BoxedStrategy<String> {
    let wild = prop_oneof![
        6 => pick(&[
            "0", "-1", "1024", "1025", "65536", "100000", "100001", "1048576", "1048577",
            "409600000", "4294967295", "4294967296", "9223372036854775807",
        ]),
        1 => any::<i64>().prop_map(|x| x.to_string()),
        1 => pick(&["1.5", "1e3", "\"8\""]),
    ];
    or_wild(w, pick(typical), wild.boxed())
}

/// An integer axis: a list or a range of its key's values (distinct, in order); when wild,
/// also lists of any integers, empty lists, words and long strings.
fn axis(w: Wild, typical: &[&'static str]) -> BoxedStrategy<String> {
    let mut sorted: Vec<&'static str> = typical.to_vec();
    sorted.sort_by_key(|v| v.parse::<u64>().unwrap_or(u64::MAX));
    let list = proptest::sample::subsequence(sorted.clone(), 1..=sorted.len().min(3))
        .prop_map(|v| format!("[{}]", v.join(", ")))
        .boxed();
    let tame = if sorted.len() < 2 {
        list
    } else {
        let range = (
            proptest::sample::subsequence(sorted, 2),
            prop_oneof![
                pick(&["1", "2", "3"]).prop_map(|s| format!("step = {s}")),
                pick(&["2", "4"]).prop_map(|f| format!("factor = {f}")),
            ],
        )
            .prop_map(|(ends, by)| format!("{{ from = {}, to = {}, {by} }}", ends[0], ends[1]));
        prop_oneof![6 => list, 1 => range].boxed()
    };
    let i = integer(w, typical);
    let wild = prop_oneof![
        4 => proptest::collection::vec(i.clone(), 1..4).prop_map(|v| format!("[{}]", v.join(", "))),
        2 => (i.clone(), i.clone(), i, any::<bool>()).prop_map(|(f, t, s, factor)| {
            let k = if factor { "factor" } else { "step" };
            format!("{{ from = {f}, to = {t}, {k} = {s} }}")
        }),
        1 => Just("[]".to_string()),
        1 => pick(&["\"auto\"", "\"many\""]),
        1 => Just(format!("\"{}\"", long_string())),
    ];
    or_wild(w, tame, wild.boxed())
}

/// A list of known ids; when wild, also unknown, long, empty or repeated ones.
fn ids(w: Wild, known: &[&'static str]) -> BoxedStrategy<String> {
    let list = |ids: Vec<String>| {
        let quoted: Vec<String> = ids.iter().map(|s| format!("\"{s}\"")).collect();
        format!("[{}]", quoted.join(", "))
    };
    let tame = proptest::sample::subsequence(known.to_vec(), 1..=known.len().min(3))
        .prop_map(move |v| list(v.into_iter().map(String::from).collect()));
    let wild = prop_oneof![
        proptest::collection::vec(pick(known), 2..4).prop_map(list),
        Just("[]".to_string()),
        Just(list(vec!["nope".into()])),
        Just(list(vec![long_string()])),
    ];
    or_wild(w, tame.boxed(), wild.boxed())
}

/// `key = value` on its own line with probability `p`, else nothing.
fn line(key: &'static str, p: f64, value: BoxedStrategy<String>) -> BoxedStrategy<String> {
    if p >= 1.0 {
        return value.prop_map(move |v| format!("{key} = {v}\n")).boxed();
    }
    if p <= 0.0 {
        return Just(String::new()).boxed();
    }
    proptest::option::weighted(p, value)
        .prop_map(move |v| v.map_or(String::new(), |v| format!("{key} = {v}\n")))
        .boxed()
}

/// A table: its header, then each line the strategies give.
fn table(header: &'static str, lines: Vec<BoxedStrategy<String>>) -> BoxedStrategy<String> {
    lines
        .prop_map(move |lines| format!("{header}\n{}", lines.concat()))
        .boxed()
}

/// A table present with probability `p`.
fn maybe(p: f64, table: BoxedStrategy<String>) -> BoxedStrategy<String> {
    proptest::option::weighted(p, table)
        .prop_map(Option::unwrap_or_default)
        .boxed()
}

fn objectives(w: Wild, columns: &[&'static str], wrong: &[&'static str]) -> BoxedStrategy<String> {
    let column = or_wild(w, pick(columns), pick(wrong));
    let direction = or_wild(w, pick(&["max", "min"]), pick(&["maximize", "best"]));
    let objective = (direction, column).prop_map(|(d, c)| format!("\"{d} {c}\""));
    let tame =
        proptest::collection::vec(objective, 1..3).prop_map(|v| format!("[{}]", v.join(", ")));
    let wild = prop_oneof![
        Just("[]".to_string()),
        Just(format!("[\"max {}\"]", long_string())),
    ];
    or_wild(w, tame.boxed(), wild.boxed())
}

fn sweep_table(w: Wild, training: bool) -> BoxedStrategy<String> {
    let (columns, wrong): (&[&'static str], &[&'static str]) = if training {
        (
            &[
                "step_time_s",
                "mfu_pct",
                "usd_per_run",
                "effective_time_to_train_days",
                "gpus",
            ],
            &["config_id", "ttft_ms", "nope"],
        )
    } else {
        (
            &[
                "tokens_per_s_per_gpu",
                "ttft_ms",
                "usd_per_mtok",
                "tokens_per_s_per_user",
                "ttft_p99_ms",
            ],
            &["config_id", "step_time_s", "nope"],
        )
    };
    let mode = match (training, w.0) {
        (true, _) => Just("mode = \"training\"\n".to_string()).boxed(),
        (false, false) => pick(&["", "mode = \"inference\"\n"]),
        (false, true) => prop_oneof![
            6 => pick(&["", "mode = \"inference\"\n"]),
            1 => Just("mode = \"train\"\n".to_string()),
        ]
        .boxed(),
    };
    let constraint = (
        pick(columns),
        pick(&["<=", ">", "=="]),
        number(w, &["1000", "20"]),
    )
        .prop_map(|(c, op, v)| format!("\"{c} {op} {v}\""));
    let name = or_wild(
        w,
        Just("\"fuzz\"".to_string()).boxed(),
        prop_oneof![
            Just("\".hidden\"".to_string()),
            Just(format!("\"{}\"", long_string())),
        ]
        .boxed(),
    );
    // Serving SLOs: in a training sweep only when wild (they are an error there).
    let slo = if training && !w.0 { 0.0 } else { 0.15 };
    (
        mode,
        table(
            "",
            vec![
                line("name", 1.0, name),
                line("objectives", 0.4, objectives(w, columns, wrong)),
                line(
                    "constraints",
                    0.3,
                    proptest::collection::vec(constraint, 0..3)
                        .prop_map(|v| format!("[{}]", v.join(", ")))
                        .boxed(),
                ),
                line(
                    "ttft_p99_ms",
                    slo,
                    number(w, &["2000", "500", "31536000000"]),
                ),
                line("tpot_p99_ms", slo, number(w, &["50", "1e-3"])),
                line("tokens_per_s_per_user", slo, number(w, &["20", "1e6"])),
            ],
        ),
    )
        .prop_map(|(mode, body)| format!("[sweep]\n{mode}{}", body.trim_start()))
        .boxed()
}

/// A built-in id, for the strategies (which take `'static` text).
fn id(id: &str) -> &'static str {
    id.to_string().leak()
}

/// Every built-in model with a vocabulary, and the inline one; when wild, also every built-in
/// model without one (which a sweep may not name) and an unknown id.
fn model(w: Wild) -> BoxedStrategy<String> {
    let catalog = Catalog::builtin().unwrap();
    let (with_vocab, without): (Vec<_>, Vec<_>) =
        catalog.models.iter().partition(|m| m.vocab.is_some());
    let mut known: Vec<&'static str> = with_vocab.iter().map(|m| id(&m.id)).collect();
    known.push("fz-model");
    let mut wild: Vec<&'static str> = without.iter().map(|m| id(&m.id)).collect();
    wild.push("nope");
    or_wild(w, pick(&known), pick(&wild))
        .prop_map(|m| format!("\"{m}\""))
        .boxed()
}

/// Every built-in GPU, and the inline one.
fn gpus() -> Vec<&'static str> {
    let catalog = Catalog::builtin().unwrap();
    let mut ids: Vec<&'static str> = catalog.gpus.iter().map(|g| id(&g.id)).collect();
    ids.push("fz-gpu");
    ids
}

/// Every built-in number format.
fn dtypes() -> Vec<&'static str> {
    let catalog = Catalog::builtin().unwrap();
    catalog.dtypes.iter().map(|d| id(&d.id)).collect()
}

fn inference_workload(w: Wild) -> BoxedStrategy<String> {
    table(
        "[workload]",
        vec![
            line("model", 1.0, model(w)),
            line(
                "input_tokens",
                1.0,
                number(w, &["1024", "128", "4096", "1.5", "1", "100000"]),
            ),
            line(
                "output_tokens",
                1.0,
                number(w, &["256", "1", "1024", "30000"]),
            ),
            line("spec_acceptance", 0.1, number(w, &["0.85", "0.99", "0"])),
            line("spec_draft_layers", 0.1, number(w, &["1", "0", "100"])),
            line("think_s", 0.3, number(w, &["0", "30", "5", "31536000"])),
            line("input_tokens_cv", 0.1, number(w, &["1", "0", "2", "100"])),
            line("output_tokens_cv", 0.1, number(w, &["1", "0.8"])),
            line(
                "kv_admission",
                0.1,
                or_wild(
                    w,
                    pick(&["\"on-demand\"", "\"whole-request\""]),
                    pick(&["\"lazy\""]),
                ),
            ),
            line(
                "eplb",
                0.1,
                or_wild(w, pick(&["true", "false"]), pick(&["1", "\"yes\""])),
            ),
            line(
                "two_batch_overlap",
                0.1,
                or_wild(w, pick(&["true", "false"]), pick(&["0", "\"on\""])),
            ),
        ],
    )
}

fn demand(w: Wild) -> BoxedStrategy<String> {
    let sessions = (
        number(w, &["2", "1e6"]),
        number(w, &["20", "525600", "0.01"]),
    )
        .prop_map(|(rate, minutes)| {
            format!("arrival_rate_per_s = {rate}\nsession_minutes = {minutes}\n")
        });
    maybe(
        0.4,
        (
            table(
                "[workload.demand]",
                vec![
                    line(
                        "concurrent_users",
                        0.6,
                        number(w, &["1000", "50000", "1", "1e12", "0.001"]),
                    ),
                    line(
                        "requests_per_s",
                        0.2,
                        number(w, &["10", "0.5", "1e9", "1e-9"]),
                    ),
                    line(
                        "target_utilization",
                        0.1,
                        number(w, &["0.75", "1", "0.001"]),
                    ),
                ],
            ),
            maybe(0.2, sessions.boxed()),
            maybe(
                0.2,
                (
                    number(w, &["2e9", "1e12", "1"]),
                    pick(&[
                        "",
                        "traffic = \"bursty\"\n",
                        "traffic = { active_ratio = 0.5, burst_factor = 2.0 }\n",
                        "traffic = { active_ratio = 1e-300, burst_factor = 1e300 }\n",
                    ]),
                )
                    .prop_map(|(t, traffic)| format!("tokens_per_day = {t}\n{traffic}"))
                    .boxed(),
            ),
        )
            .prop_map(|(t, s, d)| {
                // A demand of none of the modes is an error; give users then.
                let users = if t.lines().count() == 1 && s.is_empty() && d.is_empty() {
                    "concurrent_users = 100\n"
                } else {
                    ""
                };
                format!("{t}{users}{s}{d}")
            })
            .boxed(),
    )
}

fn phases(w: Wild) -> BoxedStrategy<String> {
    let phase = move |name: &'static str, hours: bool| {
        let share = if hours {
            line("duration_h", 1.0, number(w, &["16", "8", "8760", "0.001"]))
        } else {
            line(
                "weight",
                1.0,
                number(w, &["1", "0.3", "2", "1e300", "1e-300"]),
            )
        };
        table(
            "",
            vec![
                share,
                line("load_scale", 0.3, number(w, &["0.3", "2", "1e6", "1e-6"])),
                line("input_tokens", 0.2, number(w, &["512", "1"])),
                line("output_tokens", 0.2, number(w, &["128", "1"])),
            ],
        )
        .prop_map(move |body| format!("[[workload.phase]]\nname = \"{name}\"{body}"))
    };
    (0..3usize, any::<bool>())
        .prop_flat_map(move |(n, hours)| {
            let names = ["day", "night", "weekend"];
            let v: Vec<_> = names[..n].iter().map(|&name| phase(name, hours)).collect();
            v.prop_map(|v| v.concat())
        })
        .boxed()
}

fn inference_grid(w: Wild) -> BoxedStrategy<String> {
    table(
        "[grid]",
        vec![
            line("hardware", 1.0, ids(w, &gpus())),
            line(
                "racks",
                0.4,
                or_wild(w, axis(w, &["1", "2", "4", "100000"]), pick(&["\"auto\""])),
            ),
            line("tp", 0.6, axis(w, &["1", "2", "4", "8", "1024"])),
            line("pp", 0.3, axis(w, &["1", "2", "4", "1024"])),
            line("ep", 0.3, axis(w, &["1", "8", "32", "256"])),
            line("disagg_prefill_pct", 0.15, axis(w, &["0", "25", "99"])),
            line("spec_tokens", 0.15, axis(w, &["0", "1", "16"])),
            line("batch", 0.6, axis(w, &["1", "16", "64", "256", "1048576"])),
            line("weight_dtype", 0.3, ids(w, &dtypes())),
            line("kv_dtype", 0.2, ids(w, &dtypes())),
            line("ownership", 0.3, ids(w, &["cloud", "owned"])),
            line("prefill_tp", 0.15, axis(w, &["0", "1", "4", "1024"])),
        ],
    )
}

fn training_workload(w: Wild) -> BoxedStrategy<String> {
    let batch = prop_oneof![
        integer(w, &["96", "512", "2048", "1", "4294967295"])
            .prop_map(|b| format!("global_batch_seqs = {b}\n")),
        number(w, &["4194304", "8192"]).prop_map(|b| format!("global_batch_tokens = {b}\n")),
    ];
    (
        table(
            "[workload]",
            vec![
                line("model", 1.0, model(w)),
                line("seq_len", 1.0, integer(w, &["4096", "8192", "2048", "1"])),
                line(
                    "train_tokens",
                    1.0,
                    number(w, &["1e12", "15e12", "1", "1e18"]),
                ),
                line("restart_minutes", 0.2, number(w, &["10", "0", "525600"])),
                line(
                    "failures_per_gpu_hour",
                    0.2,
                    number(w, &["3e-5", "1", "1e-12"]),
                ),
            ],
        ),
        batch,
    )
        .prop_map(|(t, b)| format!("{t}{b}"))
        .boxed()
}

fn training_grid(w: Wild) -> BoxedStrategy<String> {
    // One of racks, gpus or dp (or none: one rack); two only when wild.
    let scale = prop_oneof![
        line("racks", 1.0, axis(w, &["1", "2", "4", "100000"])),
        line("gpus", 1.0, axis(w, &["64", "256", "1024", "409600000"])),
        line("dp", 1.0, axis(w, &["1", "4", "16", "100000"])),
        Just(String::new()),
    ];
    (
        scale,
        table(
            "",
            vec![
                line("tp", 0.6, axis(w, &["1", "2", "4", "8", "1024"])),
                line("pp", 0.5, axis(w, &["1", "2", "4", "8", "1024"])),
                line("cp", 0.3, axis(w, &["1", "2", "1024"])),
                line("ep", 0.3, axis(w, &["1", "8", "1024"])),
                line("microbatch", 0.3, axis(w, &["1", "2", "1048576"])),
                line("virtual_stages", 0.2, axis(w, &["1", "2", "1024"])),
                line("zero_stage", 0.3, axis(w, &["0", "1", "3"])),
                line("recompute", 0.2, ids(w, &["none", "selective", "full"])),
                line("precision", 0.2, ids(w, &["bf16", "fp8"])),
                line("ownership", 0.2, ids(w, &["cloud", "owned"])),
                line("gpus", if w.0 { 0.05 } else { 0.0 }, axis(w, &["64"])),
            ],
        ),
        ids(w, &gpus()),
    )
        .prop_map(|(scale, rest, hardware)| {
            format!(
                "[grid]\nhardware = {hardware}\n{scale}{}",
                rest.trim_start()
            )
        })
        .boxed()
}

fn cost(w: Wild) -> BoxedStrategy<String> {
    maybe(
        0.3,
        table(
            "[cost]",
            vec![
                line("pue", 0.3, number(w, &["1.3", "1", "10"])),
                line("usd_per_kwh", 0.3, number(w, &["0.08", "0", "1e6"])),
                line("years", 0.3, number(w, &["5", "1", "1e-3"])),
                line("facility_years", 0.1, number(w, &["20"])),
                line(
                    "usd_per_gpu_hour",
                    0.3,
                    (
                        or_wild(w, pick(&["h100-sxm", "b200"]), pick(&["h100"])),
                        number(w, &["2.5", "1e-9", "1e9"]),
                    )
                        .prop_map(|(g, v)| format!("{{ {g} = {v} }}"))
                        .boxed(),
                ),
            ],
        ),
    )
}

/// An inline GPU in its rack, and a dense or MoE model, their numbers drawn like any other.
fn presets(w: Wild) -> BoxedStrategy<String> {
    let gpu = table(
        "[[gpu]]\nid = \"fz-gpu\"\nname = \"Fuzz\"\nsource = \"fuzz\"\nnative_dtypes = [\"bf16\", \"fp8\"]\nkv_dtypes = [\"bf16\", \"fp8\"]\ndefault_rack = \"fz-rack\"",
        vec![
            line(
                "bf16_tflops",
                1.0,
                number(w, &["1000", "989", "1e-3", "1e9"]),
            ),
            line("fp8_tflops", 1.0, number(w, &["2000", "1e-3", "1e9"])),
            line("hbm_gb", 1.0, number(w, &["80", "192", "1e-3", "1e9"])),
            line("hbm_tbps", 1.0, number(w, &["3.35", "8", "1e-3", "1e6"])),
            line("tdp_w", 0.8, number(w, &["700", "1e6"])),
            line("idle_w", 0.8, number(w, &["100"])),
            line("usd_per_gpu_hour", 0.5, number(w, &["3", "1e-6"])),
            line("capex_usd_per_gpu", 0.5, number(w, &["30000"])),
            line(
                "efficiency",
                1.0,
                (
                    number(w, &["0.7", "1e-6"]),
                    number(w, &["0.8", "1", "1e-6"]),
                )
                    .prop_map(|(g, h)| {
                        format!("{{ gemm_bf16 = {g}, gemm_fp8 = 0.7, hbm = {h}, link = 0.8 }}")
                    })
                    .boxed(),
            ),
        ],
    );
    let rack = table(
        "[[rack]]\nid = \"fz-rack\"\ngpu = \"fz-gpu\"\ndescription = \"fuzz\"\nsource = \"fuzz\"",
        vec![
            line("gpus_per_server", 1.0, integer(w, &["8"])),
            line("servers_per_rack", 1.0, integer(w, &["1", "2", "512"])),
            line("scaleup_domain_gpus", 1.0, integer(w, &["8", "4"])),
            line("scaleup_gbps_per_gpu", 1.0, number(w, &["450", "1e-6"])),
            line("scaleup_latency_us", 1.0, number(w, &["0.6", "0", "1e6"])),
            line("collective_launch_us", 1.0, number(w, &["6"])),
            line("scaleout_gbps_per_gpu", 1.0, number(w, &["50", "1e-6"])),
            line("scaleout_latency_us", 1.0, number(w, &["2.7"])),
            line("server_power_kw", 1.0, number(w, &["10", "1e6"])),
            line(
                "rack_power_budget_kw",
                1.0,
                number(w, &["40", "130", "1e9"]),
            ),
            line("host_memory_gb_per_gpu", 1.0, number(w, &["256", "0"])),
            line("host_link_gbps_per_gpu", 1.0, number(w, &["64"])),
            line("storage_gbps_per_gpu", 1.0, number(w, &["12.5", "1e-6"])),
            line("switch_power_kw", 1.0, number(w, &["1.2"])),
        ],
    );
    let moe = (
        integer(w, &["128", "8"]),
        integer(w, &["8", "2"]),
        integer(w, &["768", "1"]),
    )
        .prop_map(|(e, k, f)| {
            format!("experts = {e}\nexperts_per_token = {k}\nmoe_ffn_hidden = {f}\n")
        });
    let ffn = integer(w, &["14336", "1"]).prop_map(|f| format!("ffn_hidden = {f}\n"));
    let mlp = prop_oneof![ffn, moe];
    let model = (
        table(
            "[[model]]\nid = \"fz-model\"\nsource = \"fuzz\"\nmlp = \"gated\"\ntied_embeddings = false\nattention = \"gqa\"",
            vec![
                line("layers", 1.0, integer(w, &["32", "48", "1"])),
                line("hidden", 1.0, integer(w, &["4096", "2048", "1"])),
                line("heads", 1.0, integer(w, &["32"])),
                line("kv_heads", 1.0, integer(w, &["8", "4"])),
                line("head_dim", 1.0, integer(w, &["128", "1"])),
                line("vocab", 1.0, integer(w, &["128256", "151936", "1"])),
                line("max_context", 1.0, integer(w, &["131072", "32768", "4294967295"])),
                line("published_total_params_b", 0.2, number(w, &["8", "0"])),
            ],
        ),
        mlp,
    )
        .prop_map(|(m, mlp)| format!("{m}{mlp}"));
    // Tame files may name the inline GPU and model, so they always define them.
    let p = if w.0 { 0.5 } else { 0.999 };
    (
        proptest::option::weighted(p, (gpu, rack)),
        proptest::option::weighted(p, model),
    )
        .prop_map(|(g, m)| {
            let g = g.map_or(String::new(), |(g, r)| format!("{g}{r}"));
            format!("{g}{}", m.unwrap_or_default())
        })
        .boxed()
}

fn sweep_text() -> BoxedStrategy<String> {
    (any::<bool>(), 0..5u8)
        .prop_flat_map(|(wild, mode)| {
            let w = Wild(wild);
            if mode < 3 {
                (
                    sweep_table(w, false),
                    inference_workload(w),
                    demand(w),
                    phases(w),
                    inference_grid(w),
                    cost(w),
                    presets(w),
                )
                    .prop_map(|(s, wl, d, ph, g, c, p)| format!("{s}{wl}{d}{ph}{g}{c}{p}"))
                    .boxed()
            } else {
                (
                    sweep_table(w, true),
                    training_workload(w),
                    training_grid(w),
                    cost(w),
                    presets(w),
                )
                    .prop_map(|(s, wl, g, c, p)| format!("{s}{wl}{g}{c}{p}"))
                    .boxed()
            }
        })
        .boxed()
}

/// Every metric of `row` finite or null, never negative where the column cannot be.
fn metrics_are_sane<R: Record + std::fmt::Debug>(
    row: &R,
    text: &str,
) -> Vec<(&'static str, Option<f64>)> {
    let mut values = Vec::new();
    for c in R::columns() {
        if let Kind::Metric(f) = c.kind {
            let v = f(row);
            if let Some(x) = v {
                assert!(x.is_finite(), "{} = {x}\n{text}", c.name);
                // 1 - utilization: negative when the demand exceeds the capacity.
                if c.name != "headroom" {
                    assert!(x >= 0.0, "{} = {x}\n{row:?}\n{text}", c.name);
                }
            }
            values.push((c.name, v));
        }
    }
    values
}

fn value(values: &[(&'static str, Option<f64>)], name: &str) -> Option<f64> {
    values
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .1
}

/// Grid indices to evaluate: all of a small grid, `POINTS` spread over a larger one.
fn sample(len: u64) -> impl Iterator<Item = u64> {
    let n = len.min(POINTS);
    (0..n).map(move |i| i * len / n)
}

fn check(text: &str) {
    let path = Path::new("f.toml");
    let sweep = match spec::parse(path, text, MAX_CONFIGS) {
        Err(e) => {
            // A user error (exit 1) that says where.
            assert!(e.message.starts_with("f.toml"), "{}\n{text}", e.message);
            assert!(!e.message.contains("internal"), "{}\n{text}", e.message);
            let shown = format!("{}\n{}", e.message, e.hint.unwrap_or_default());
            assert!(
                !shown.contains(&"x".repeat(81)),
                "a long value is quoted whole: {shown}"
            );
            return;
        }
        Ok(s) => s,
    };
    match sweep {
        Sweep::Inference(spec) => {
            let contexts = spec.contexts();
            let space = Inference::new(&contexts, &spec.grid);
            for i in sample(space.len()) {
                let row: Row = space.evaluate(i);
                let v = metrics_are_sane(&row, text);
                // A configuration that runs has its capacity and its idle latencies. (Its
                // latencies at the load are null where the load is more than it serves: an
                // unstable queue, or a full batch of short answers that prefill cannot feed.)
                if row.feasible() {
                    for name in ["tokens_per_s_per_gpu", "tpot_ms", "ttft_idle_ms"] {
                        assert!(
                            value(&v, name).is_some(),
                            "a feasible row without {name}: {row:?}\n{text}"
                        );
                    }
                }
            }
            assert!(!COLUMNS.is_empty());
        }
        Sweep::Training(spec) => {
            let space = Training::new(&spec);
            for i in sample(space.len()) {
                let row: TrainRow = space.evaluate(i);
                let v = metrics_are_sane(&row, text);
                if row.feasible() {
                    for name in ["step_time_s", "mfu_pct", "training_tokens_per_s"] {
                        assert!(
                            value(&v, name).is_some(),
                            "a layout that trains without {name}: {row:?}\n{text}"
                        );
                    }
                }
            }
            assert!(!TRAINING_COLUMNS.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("FUZZ_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CASES),
        ..ProptestConfig::default()
    })]

    #[test]
    fn generated_sweeps_parse_or_fail_cleanly_and_evaluate_sanely(text in sweep_text()) {
        check(&text);
    }
}

/// The sweeps of the issue, by hand: each is rejected with the key it breaks.
#[test]
fn the_issues_sweeps_are_rejected_by_key() {
    let training = |grid: &str| {
        format!(
            "[sweep]\nname = \"t\"\nmode = \"training\"\n[workload]\nmodel = \"llama-3.1-70b\"\nseq_len = 4096\nglobal_batch_seqs = 96\ntrain_tokens = 1e12\n[grid]\nhardware = [\"h100-sxm\"]\n{grid}\n"
        )
    };
    let inference = |workload: &str, grid: &str| {
        format!(
            "[sweep]\nname = \"i\"\n[workload]\nmodel = \"llama-3.1-8b\"\ninput_tokens = 1024\noutput_tokens = 256\n{workload}\n[grid]\nhardware = [\"h100-sxm\"]\n{grid}\n"
        )
    };
    let error = |text: &str| {
        let e = spec::parse(Path::new("f.toml"), text, MAX_CONFIGS).unwrap_err();
        format!("{}\nhint: {}", e.message, e.hint.unwrap_or_default())
    };
    assert_eq!(
        error(&training("gpus = [64]\ntp = [65536]\npp = [65536]")),
        "f.toml:12:7: grid.tp[0]: 65536 is larger than 1024\nhint: no model has more than 1,024 heads, experts or layers to split"
    );
    assert_eq!(
        error(&inference("", "racks = [4294967295]")),
        "f.toml:10:10: grid.racks[0]: 4294967295 is larger than 100000\nhint: 100,000 racks of 72 GPUs is 7.2 million GPUs, more than any single deployment plans"
    );
    assert_eq!(
        error(&inference("", "batch = 4294967295")).lines().next(),
        Some(
            "f.toml:10:9: invalid type: integer `4294967295`, expected a list of integers or a range { from, to, step } / { from, to, factor }"
        )
    );
    assert_eq!(
        error(&inference("", "batch = [4294967295]")),
        "f.toml:10:10: grid.batch[0]: 4294967295 is larger than 1048576\nhint: serving engines hold at most thousands of sequences at once, training microbatches a few"
    );
    assert_eq!(
        error(&inference("think_s = 1.797e308", "")),
        "f.toml:7:11: workload.think_s: 1.797e308 must be between 0 and a year (31536000 s)\nhint: "
    );
}

/// p50 <= p95 <= p99 of the first-token latency, on the two sweeps the fuzz search found where
/// the serving model breaks the order (ignored until it is fixed):
/// - a model whose layers are next to nothing (head_dim 1, ffn_hidden 1) with 1.5-token
///   prompts: a longer prompt prefills faster, because the LM head's one row is timed at the
///   GEMM efficiency of all the step's rows (`perf::latency::stage_time`); p50 129,779 ms,
///   p95 118,102, p99 112,058 at tp 1, batch 1;
/// - deepseek-v3 on 4 pipeline stages at ep 32 with one-token answers:
///   `perf::serving::prefill_under_load_s` gives a prompt less time with 2 running sequences
///   than with 1 (0.212 s against 0.235 s for a 3,041-token prompt at tp 4), so the higher
///   occupancy percentile can get the shorter TTFT; p95 461.1 ms, p99 452.7 (cause not yet
///   found).
#[test]
#[ignore = "serving-model finding, see the doc comment"]
fn ttft_percentiles_are_ordered() {
    let tiny = "[sweep]\nname = \"f\"\n[workload]\nmodel = \"fz-model\"\ninput_tokens = 1.5\noutput_tokens = 256\n[grid]\nhardware = [\"fz-gpu\"]\ntp = [1]\nbatch = [1]\n[[gpu]]\nid = \"fz-gpu\"\nname = \"Fuzz\"\nsource = \"fuzz\"\nnative_dtypes = [\"bf16\", \"fp8\"]\nkv_dtypes = [\"bf16\", \"fp8\"]\ndefault_rack = \"fz-rack\"\nbf16_tflops = 1000\nfp8_tflops = 2000\nhbm_gb = 80\nhbm_tbps = 1e6\nefficiency = { gemm_bf16 = 1e-6, gemm_fp8 = 0.7, hbm = 0.8, link = 0.8 }\n[[rack]]\nid = \"fz-rack\"\ngpu = \"fz-gpu\"\ndescription = \"fuzz\"\nsource = \"fuzz\"\ngpus_per_server = 8\nservers_per_rack = 1\nscaleup_domain_gpus = 8\nscaleup_gbps_per_gpu = 450\nscaleup_latency_us = 0.6\ncollective_launch_us = 6\nscaleout_gbps_per_gpu = 50\nscaleout_latency_us = 2.7\nserver_power_kw = 10\nrack_power_budget_kw = 40\nhost_memory_gb_per_gpu = 256\nhost_link_gbps_per_gpu = 64\nstorage_gbps_per_gpu = 12.5\nswitch_power_kw = 1.2\n[[model]]\nid = \"fz-model\"\nsource = \"fuzz\"\nmlp = \"gated\"\ntied_embeddings = false\nattention = \"gqa\"\nlayers = 32\nhidden = 4096\nheads = 32\nkv_heads = 8\nhead_dim = 1\nvocab = 128256\nmax_context = 131072\nffn_hidden = 1\n";
    let pipeline = "[sweep]\nname = \"f\"\n[workload]\nmodel = \"deepseek-v3\"\ninput_tokens = 1024\noutput_tokens = 256\nthink_s = 31536000\n[workload.demand]\narrival_rate_per_s = 2\nsession_minutes = 525600\n[[workload.phase]]\nname = \"day\"\nweight = 1\noutput_tokens = 1\n[grid]\nhardware = [\"h100-sxm\"]\nracks = [4]\npp = [4]\nep = [32]\n";
    let mut broken = Vec::new();
    for text in [tiny, pipeline] {
        let spec = spec::parse(Path::new("f.toml"), text, MAX_CONFIGS)
            .unwrap()
            .into_inference()
            .unwrap();
        let contexts = spec.contexts();
        let space = Inference::new(&contexts, &spec.grid);
        for i in 0..space.len() {
            let e = space.evaluate(i).estimate;
            let (p50, p95, p99) = (e.ttft_p50_ms, e.ttft_p95_ms, e.ttft_p99_ms);
            if p50.is_finite() && !(p50 <= p95 && p95 <= p99) {
                broken.push(format!("config {i}: p50 {p50} p95 {p95} p99 {p99}"));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
}
