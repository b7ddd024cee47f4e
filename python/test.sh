#!/usr/bin/env bash
# The Python module's tests (pytest), in their own virtual environment under target/.
#
#   bash python/test.sh           against the debug binary (cargo build), the module from python/
#                                 (CI runs this after cargo test)
#   bash python/test.sh --wheel   builds the wheel (maturin, release), installs it in a fresh
#                                 environment and tests the installed `ablate` command and module
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

venv() {
  local dir=$1
  if ! python3 -m venv "$dir" 2>/dev/null; then
    # Debian splits venv out of python3.
    if command -v apt-get >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ]; then sudo=""; else sudo="sudo -n"; fi
      $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
    fi
    python3 -m venv "$dir"
  fi
  "$dir/bin/pip" install -q --upgrade pip >/dev/null
  "$dir/bin/pip" install -q -r python/requirements-test.txt
}

if [ "${1:-}" = "--wheel" ]; then
  env=target/pyenv-wheel
  rm -rf "$env"
  venv "$env"
  "$env/bin/pip" install -q 'maturin>=1.5,<2'
  rm -rf target/wheels
  start=$(date +%s)
  "$env/bin/maturin" build --release --out target/wheels
  echo "== wheel built in $(( $(date +%s) - start ))s: $(ls -l target/wheels/*.whl | awk '{print $5, $9}')"
  "$env/bin/pip" install -q target/wheels/ablate-*.whl
  # The installed command, with nothing else on PATH.
  (cd /tmp && PATH=/usr/bin:/bin "$root/$env/bin/ablate" check "$root/notebooks-data/support-eval-v3" >/dev/null)
  unset ABLATE_BIN
  cd /tmp && ABLATE_WHEEL=1 "$root/$env/bin/python" -m pytest -q "$root/python/tests"
else
  env=target/pyenv
  [ -x "$env/bin/pytest" ] || venv "$env"
  # The binary the Rust tests run: `cargo test --no-run` builds it with the test build's features
  # (a plain `cargo build` resolves dependency features without the dev-dependencies and would
  # compile Polars a second time).
  cargo test --no-run --quiet
  ABLATE_BIN="${CARGO_TARGET_DIR:-$root/target}/debug/ablate" PYTHONPATH="$root/python" "$env/bin/python" -m pytest -q python/tests
fi
