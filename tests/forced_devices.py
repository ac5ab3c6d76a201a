"""Shared by the tests that compare 1 and 2 forced host devices: run a worker script in a
fresh process (``XLA_FLAGS`` must be set before jax is imported) and read back its arrays."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run_worker(code: str, job: dict, path: Path, devices: int, *, x64=False, timeout=1200):
    """Run ``python -c code JOB PATH`` on ``devices`` forced CPU devices (``JOB`` the
    json of ``job``); the worker writes its arrays to ``PATH`` (``np.savez``). Returns
    them as a dict; fails the test with the worker's stderr if it exits non-zero."""
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "JAX_ENABLE_X64": "1" if x64 else "0",
        "PYTHONPATH": str(ROOT),
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
    }
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(job), str(path)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(path) as data:
        return dict(data)
