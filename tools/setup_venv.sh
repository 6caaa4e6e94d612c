#!/usr/bin/env bash
# Creates ./.venv (git-ignored) with the exact MuJoCo the traces are recorded with.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet "mujoco==4.0.0" numpy
.venv/bin/python -c "import mujoco, numpy; print('mujoco', mujoco.__version__, 'numpy', numpy.__version__)"
