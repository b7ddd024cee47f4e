//! Shared by the fuzz targets: a small valid experiment in a temporary folder, one of whose files
//! the fuzzer then replaces. Loading must return Ok or a bad-input error (exit code 2); a panic or
//! an internal error (exit code 1) is a finding.

use std::path::Path;

pub const TOML: &str = "set = \"fuzz\"\nthreshold_drop = 0.05\nstrata = [\"turns\"]\n[[blocks]]\nname = \"few_shot\"\nneed = \"needed_units\"\n";
pub const CASES: &str = "case_id,turns,gold_rank,stress,cluster\nc1,single,1,false,k1\nc2,multi,2,false,k1\nc3,single,,false,k2\ns1,multi,1,true,k3\n";
pub const UNITS: &str = "unit,block,tokens\nsys,system,900\nfew_shot/01,few_shot,200\nfew_shot/02,few_shot,210\n";
pub const ARMS: &str = "arm,removed\nbaseline,\nwithout-ex1,few_shot/01\nwithout-examples,few_shot/01;few_shot/02\n";
pub const MIX: &str = "turns,share\nsingle,0.77\nmulti,0.23\n";

pub fn results() -> String {
    let mut s = String::from("case_id,arm,repeat,score\n");
    for case in ["c1", "c2", "c3", "s1"] {
        for (arm, v) in [("baseline", 1.0), ("without-ex1", 0.5), ("without-examples", 0.0)] {
            for r in 0..2 {
                s.push_str(&format!("{case},{arm},{r},{v}\n"));
            }
        }
    }
    s
}

/// Writes the valid experiment into `dir`.
pub fn experiment(dir: &Path) {
    for (name, text) in [
        ("experiment.toml", TOML.to_string()),
        ("cases.csv", CASES.to_string()),
        ("units.csv", UNITS.to_string()),
        ("arms.csv", ARMS.to_string()),
        ("mix.csv", MIX.to_string()),
        ("results.csv", results()),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
}

/// Loads and analyses the folder; panics (a finding) on an internal error.
pub fn load_and_analyse(dir: &Path) {
    let cfg = ablate::analysis::Config {
        bootstrap: 10,
        progress: false,
        ..ablate::analysis::Config::default()
    };
    match ablate::io::Experiment::load(dir) {
        Err(e) => assert_eq!(e.exit_code(), 2, "internal error on input: {e}"),
        Ok(exp) => {
            if let Err(e) = ablate::analysis::all::run(&exp, &cfg, |_| {}) {
                assert_eq!(e.exit_code(), 2, "internal error in analysis: {e}");
            }
        }
    }
}
