//! `ablate import inspect` at scale: an Inspect log of 10,000 samples × 5 epochs (50,000 sample
//! summaries, zstd entries as Inspect writes them since 0.3.206), read and written as an
//! experiment folder. Run with `cargo bench --bench import`; the log is generated once into
//! $ABLATE_BENCH_DIR (default: a folder in the temp dir). Results go in benches/README.md.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ablate::import::{self, ImportOptions};

/// Writes an Inspect `.eval` archive with `samples` × `epochs` summaries, shaped as Inspect
/// 0.3.285 writes them (ids, epoch, scores, model_usage, metadata and timing fields).
fn write_log(path: &Path, variant: &str, samples: usize, epochs: usize) {
    let file = std::fs::File::create(path).expect("create");
    let mut zip = zip::ZipWriter::new(file);
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Zstd);
    let header = serde_json::json!({
        "version": 2, "status": "success",
        "eval": {"task": "bench", "task_args": {"variant": variant}, "model": "mockllm/model",
                 "created": "2026-11-30T03:06:04+00:00", "tags": [],
                 "packages": {"inspect_ai": "0.3.285"}},
    });
    zip.start_file("header.json", opts).expect("header");
    zip.write_all(header.to_string().as_bytes()).expect("write");
    zip.start_file("summaries.json", opts).expect("summaries");
    zip.write_all(b"[").expect("write");
    for i in 0..samples * epochs {
        let (id, epoch) = (i % samples, i / samples + 1);
        let value = if (id * 7 + epoch * 3 + variant.len()) % 10 < 7 {
            "C"
        } else {
            "I"
        };
        let topic = ["addition", "doubling", "carry"][id % 3];
        let s = serde_json::json!({
            "id": id, "epoch": epoch,
            "input": format!("What is {id} + {epoch}? Answer with a number only, please."),
            "target": (id + epoch).to_string(),
            "metadata": {"topic": topic, "difficulty": id % 5},
            "scores": {"match": {"value": value, "answer": "42", "explanation": "The answer is 42."}},
            "model_usage": {"mockllm/model": {"input_tokens": 900 + id % 200, "output_tokens": 12,
                                               "total_tokens": 912 + id % 200}},
            "total_time": 1.25, "working_time": 1.1, "uuid": format!("{i:032x}"),
            "retries": 0, "completed": true, "message_count": 3,
        });
        if i > 0 {
            zip.write_all(b",").expect("write");
        }
        zip.write_all(s.to_string().as_bytes()).expect("write");
    }
    zip.write_all(b"]").expect("write");
    zip.finish().expect("finish");
}

fn main() {
    let dir = std::env::var_os("ABLATE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("ablate-bench-import"));
    std::fs::create_dir_all(&dir).expect("dir");
    let logs: Vec<PathBuf> = ["full", "no_examples"]
        .iter()
        .map(|v| dir.join(format!("{v}.eval")))
        .collect();
    for (path, variant) in logs.iter().zip(["full", "no_examples"]) {
        if !path.exists() {
            eprintln!("generating {} …", path.display());
            write_log(path, variant, 10_000, 5);
        }
    }
    let size: u64 = logs
        .iter()
        .map(|p| p.metadata().map(|m| m.len()).unwrap_or(0))
        .sum();
    let opts = ImportOptions {
        threshold: Some(0.02),
        ..ImportOptions::default()
    };
    let mut runs = Vec::new();
    for _ in 0..3 {
        let out = dir.join("out");
        let start = Instant::now();
        let imported = import::inspect::read(&logs, &opts).expect("read");
        let read = start.elapsed();
        let summary = import::write("inspect", imported, &opts, &out).expect("write");
        runs.push((read, start.elapsed(), summary.rows));
    }
    runs.sort_by_key(|r| r.1);
    let (read, total, rows) = runs[1];
    println!(
        "import inspect: 2 logs × 10,000 samples × 5 epochs ({rows} result rows, {:.1} MB of .eval): read {:.2} s, read + write {:.2} s (median of 3)",
        size as f64 / 1e6,
        read.as_secs_f64(),
        total.as_secs_f64()
    );
}
