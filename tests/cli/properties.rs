//! Property tests: random valid experiments, then one mutation each (a column dropped, a type
//! changed, nulls, NaN, duplicates, a truncated file, a garbled manifest). Every outcome of loading
//! and analysing must be success or a bad-input error (exit code 2) with a message: never a panic,
//! never an internal error (exit code 1).

use crate::common;
use ablate::io::prelude::*;

use std::panic::{AssertUnwindSafe, catch_unwind};

use ablate::analysis::{self, Config};
use ablate::io::Experiment;
use common::Workdir;
use proptest::prelude::*;

/// A random valid experiment, described by its parameters.
#[derive(Debug, Clone)]
struct Spec {
    cases: usize,
    arms: usize,
    repeats: u32,
    scores: Vec<u8>,
    clustered: bool,
    stress: bool,
    mix: bool,
    units_table: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        2usize..10,
        1usize..4,
        1u32..4,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(
            |(cases, arms, repeats, clustered, stress, mix, units_table)| {
                let n = cases * (arms + 1) * repeats as usize;
                proptest::collection::vec(0u8..=4, n).prop_map(move |scores| Spec {
                    cases,
                    arms,
                    repeats,
                    scores,
                    clustered,
                    stress,
                    mix,
                    units_table,
                })
            },
        )
}

/// What to break.
#[derive(Debug, Clone)]
enum Mutation {
    None,
    DropColumn(usize, usize),
    TextInNumber(usize),
    NullCell(usize, usize, usize),
    NanScore(usize),
    DuplicateRow(usize, usize),
    Truncate(usize, usize),
    Empty(usize),
    Manifest(usize),
    Parquet,
    ParquetTruncated(usize),
    ControlInId(usize, usize),
    HugeScore(usize),
    ScoreScale,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        Just(Mutation::None),
        (0usize..5, 0usize..6).prop_map(|(t, c)| Mutation::DropColumn(t, c)),
        (0usize..3).prop_map(Mutation::TextInNumber),
        (0usize..5, 0usize..6, 0usize..50).prop_map(|(t, c, r)| Mutation::NullCell(t, c, r)),
        (0usize..50).prop_map(Mutation::NanScore),
        (0usize..5, 0usize..50).prop_map(|(t, r)| Mutation::DuplicateRow(t, r)),
        (0usize..5, 0usize..400).prop_map(|(t, n)| Mutation::Truncate(t, n)),
        (0usize..5).prop_map(Mutation::Empty),
        (0usize..8).prop_map(Mutation::Manifest),
        Just(Mutation::Parquet),
        (8usize..400).prop_map(Mutation::ParquetTruncated),
        (0usize..4, 0usize..50).prop_map(|(t, r)| Mutation::ControlInId(t, r)),
        (0usize..50).prop_map(Mutation::HugeScore),
        Just(Mutation::ScoreScale),
    ]
}

const TABLES: [&str; 5] = [
    "results.csv",
    "cases.csv",
    "arms.csv",
    "units.csv",
    "mix.csv",
];

fn write(spec: &Spec) -> Workdir {
    let w = Workdir::empty();
    let mut toml = String::from("set = \"p\"\nthreshold_drop = 0.05\n");
    if spec.mix {
        toml.push_str("strata = [\"turns\"]\n");
    }
    if spec.units_table {
        toml.push_str("[[blocks]]\nname = \"few_shot\"\nneed = \"needed_units\"\n");
    }
    w.write("experiment.toml", &toml);
    let mut cases = String::from("case_id,turns,slice,stress,cluster\n");
    for c in 0..spec.cases {
        let stress = spec.stress && c == spec.cases - 1 && spec.cases > 2;
        cases.push_str(&format!(
            "c{c},{},s{},{stress},{}\n",
            if c % 2 == 0 { "single" } else { "multi" },
            c % 3,
            if spec.clustered {
                format!("k{}", c / 2)
            } else {
                format!("k{c}")
            }
        ));
    }
    w.write("cases.csv", &cases);
    let arm = |a: usize| {
        if a == 0 {
            "baseline".to_string()
        } else {
            format!("without-u{a}")
        }
    };
    let mut arms = String::from("arm,removed\n");
    let mut units = String::from("unit,block,tokens\n");
    for a in 0..=spec.arms {
        arms.push_str(&format!(
            "{},{}\n",
            arm(a),
            if a == 0 {
                String::new()
            } else {
                format!("u{a}")
            }
        ));
        if a > 0 {
            units.push_str(&format!("u{a},few_shot,{}\n", 100 * a));
        }
    }
    w.write("arms.csv", &arms);
    if spec.units_table {
        w.write("units.csv", &units);
    }
    let mut results = String::from("case_id,arm,repeat,score\n");
    let mut k = 0;
    for c in 0..spec.cases {
        for a in 0..=spec.arms {
            for r in 0..spec.repeats {
                results.push_str(&format!(
                    "c{c},{},{r},{}\n",
                    arm(a),
                    f64::from(spec.scores[k]) / 4.0
                ));
                k += 1;
            }
        }
    }
    w.write("results.csv", &results);
    if spec.mix {
        w.write("mix.csv", "turns,share\nsingle,0.7\nmulti,0.3\n");
    }
    w
}

fn edit_lines(w: &Workdir, file: &str, f: impl FnOnce(&mut Vec<Vec<String>>)) {
    let Ok(text) = std::fs::read_to_string(w.path(file)) else {
        return;
    };
    let mut rows: Vec<Vec<String>> = text
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    f(&mut rows);
    let out: String = rows.iter().map(|r| format!("{}\n", r.join(","))).collect();
    w.write(file, &out);
}

fn to_parquet(w: &Workdir, file: &str) {
    use polars::prelude::*;
    let csv = w.path(file);
    let mut df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(csv.clone()))
        .unwrap()
        .finish()
        .unwrap();
    let pq = csv.with_extension("parquet");
    ParquetWriter::new(std::fs::File::create(&pq).unwrap())
        .finish(&mut df)
        .unwrap();
    std::fs::remove_file(csv).unwrap();
}

fn mutate(w: &Workdir, m: &Mutation) {
    match m.clone() {
        Mutation::None => {}
        Mutation::DropColumn(t, c) => edit_lines(w, TABLES[t], |rows| {
            for r in rows.iter_mut() {
                if c < r.len() {
                    r.remove(c);
                }
            }
        }),
        Mutation::TextInNumber(t) => {
            edit_lines(w, ["results.csv", "units.csv", "mix.csv"][t], |rows| {
                if let Some(r) = rows.get_mut(1) {
                    let last = r.len() - 1;
                    r[last] = "abc".into();
                }
            })
        }
        Mutation::NullCell(t, c, r) => edit_lines(w, TABLES[t], |rows| {
            if rows.len() > 1 {
                let r = 1 + r % (rows.len() - 1);
                if c < rows[r].len() {
                    rows[r][c] = String::new();
                }
            }
        }),
        Mutation::NanScore(r) => edit_lines(w, "results.csv", |rows| {
            let r = 1 + r % (rows.len() - 1);
            rows[r][3] = "NaN".into();
        }),
        Mutation::DuplicateRow(t, r) => edit_lines(w, TABLES[t], |rows| {
            if rows.len() > 1 {
                let r = 1 + r % (rows.len() - 1);
                let row = rows[r].clone();
                rows.push(row);
            }
        }),
        Mutation::Truncate(t, n) => {
            if let Ok(bytes) = std::fs::read(w.path(TABLES[t])) {
                let n = n.min(bytes.len());
                std::fs::write(w.path(TABLES[t]), &bytes[..n]).unwrap();
            }
        }
        Mutation::Empty(t) => {
            if w.path(TABLES[t]).exists() {
                w.write(TABLES[t], "");
            }
        }
        Mutation::Manifest(k) => {
            let bad = [
                "",
                "set = ",
                "set = \"p\"\nthreshold_drop = \"high\"\n",
                "set = \"p\"\nthreshold_drop = -1\n",
                "set = \"p\"\nthreshold_drop = 0.05\npass_mark = nan\n",
                "set = \"p\"\nthreshold_drop = 0.05\nstrata = [\"nope\"]\n",
                "set = \"p\"\nthreshold_drop = 0.05\nbaseline_arm = \"ghost\"\n",
                "\u{feff}set = \"p\"\nthreshold_drop = 1e400\n",
            ];
            w.write("experiment.toml", bad[k]);
        }
        Mutation::ControlInId(t, r) => edit_lines(w, TABLES[t], |rows| {
            if rows.len() > 1 {
                let r = 1 + r % (rows.len() - 1);
                rows[r][0] = format!("\"{}\u{1b}\t\"", rows[r][0]);
            }
        }),
        Mutation::HugeScore(r) => edit_lines(w, "results.csv", |rows| {
            let r = 1 + r % (rows.len() - 1);
            rows[r][3] = "1e308".into();
        }),
        Mutation::ScoreScale => edit_lines(w, "results.csv", |rows| {
            for row in rows.iter_mut().skip(1) {
                let x: f64 = row[3].parse().unwrap_or(0.0);
                row[3] = format!("{}", 100.0 * x);
            }
        }),
        Mutation::Parquet => {
            for t in TABLES {
                if w.path(t).exists() {
                    to_parquet(w, t);
                }
            }
        }
        Mutation::ParquetTruncated(n) => {
            to_parquet(w, "results.csv");
            let p = w.path("results.parquet");
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..n.min(bytes.len())]).unwrap();
        }
    }
}

/// Loads and analyses; returns the error's exit code (0 on success).
fn outcome(w: &Workdir) -> i32 {
    let cfg = Config {
        bootstrap: 20,
        progress: false,
        ..Config::default()
    };
    match Experiment::load(&w.dir) {
        Err(e) => {
            assert!(!e.to_string().is_empty());
            e.exit_code()
        }
        Ok(exp) => match analysis::all::run(&exp, &cfg, None, &Default::default(), |_| {}) {
            Ok(_) => 0,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                e.exit_code()
            }
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_a_panic_never_an_internal_error(spec in spec(), m in mutation()) {
        let w = write(&spec);
        mutate(&w, &m);
        let code = catch_unwind(AssertUnwindSafe(|| outcome(&w)));
        prop_assert!(code.is_ok(), "panic on {m:?} of {spec:?}");
        let code = code.unwrap();
        prop_assert!(code == 0 || code == 2, "exit {code} on {m:?} of {spec:?}");
        if matches!(m, Mutation::None | Mutation::Parquet | Mutation::ScoreScale) {
            prop_assert_eq!(code, 0, "a valid experiment failed: {:?}", spec);
        }
    }
}
