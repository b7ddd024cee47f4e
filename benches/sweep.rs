//! Sweep at scale: 10 million result rows (20,000 cases × 100 arms × 5 repeats) through
//! `ablate sweep` with B = 1000, side by side with Polars scanning the same file and grouping by
//! (case_id, arm) in the same process. Run with `cargo bench --bench sweep`; the data is generated
//! once with `ablate simulate` into $ABLATE_BENCH_DIR (default: a folder in the temp dir).
//!
//! The pandas + numpy side of the comparison is `benches/pandas_sweep.py`. Results go in
//! benches/README.md.

use ablate::io::prelude::*;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ablate::analysis::{Config, sweep};
use ablate::io::Experiment;
use ablate::simulate::{SimConfig, run as simulate};
use polars::prelude::*;

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn time<T>(repeats: usize, mut f: impl FnMut() -> T) -> Duration {
    median(
        (0..repeats)
            .map(|_| {
                let start = Instant::now();
                std::hint::black_box(f());
                start.elapsed()
            })
            .collect(),
    )
}

fn main() {
    let dir = std::env::var_os("ABLATE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ablate-bench-10m"));
    if !dir.join("results.parquet").exists() {
        let cfg = SimConfig {
            cases: 20_000,
            stress_cases: Some(0),
            repeats: 5,
            arms: Some(100),
            shadow_requests: 10,
            context_requests: 5,
            ..SimConfig::default()
        };
        eprintln!("generating {} …", dir.display());
        simulate(&cfg, &dir).expect("simulate");
    }
    let results = dir.join("results.parquet").to_string_lossy().to_string();
    let repeats = 5;

    let polars = time(repeats, || {
        LazyFrame::scan_parquet(PlRefPath::new(results.clone()), ScanArgsParquet::default())
            .expect("scan")
            .group_by([col("case_id"), col("arm")])
            .agg([col("score").mean()])
            .collect()
            .expect("group by")
    });
    let load = time(repeats, || Experiment::load(&dir).expect("load"));
    let cfg = Config {
        bootstrap: 1000,
        ..Config::default()
    };
    let full = time(repeats, || {
        let exp = Experiment::load(&dir).expect("load");
        sweep::run(&exp, &cfg)
    });
    let exp = Experiment::load(&dir).expect("load");
    let bootstrap_only = time(repeats, || sweep::run(&exp, &cfg));

    println!(
        "10M rows, 20,000 cases × 100 arms × 5 repeats, B = 1000, {} threads",
        rayon::current_num_threads()
    );
    println!(
        "polars scan + group_by(case_id, arm).mean   {:>8.3} s",
        polars.as_secs_f64()
    );
    println!(
        "ablate load (validate + per-case matrix)    {:>8.3} s",
        load.as_secs_f64()
    );
    println!(
        "ablate sweep on the loaded matrix           {:>8.3} s",
        bootstrap_only.as_secs_f64()
    );
    println!(
        "ablate load + sweep                         {:>8.3} s",
        full.as_secs_f64()
    );
    println!(
        "ratio to polars                             {:>8.2}× (target ≤ 2×)",
        full.as_secs_f64() / polars.as_secs_f64()
    );
}
