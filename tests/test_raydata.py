"""`embeval embed --ray`: a golden set's blocks embedded by Ray Data actors into the cache, as a local run.

The Ray cluster is a local one of two CPUs on 127.0.0.1, started by the test's own process (`ray.init`) and
shut down by it; that process runs under a time limit and in a session of its own, so a hung cluster is
killed with it. Its workers resolve the model spec themselves (`fake_models` reaches them by PYTHONPATH).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from suite_helpers import golden_files
from test_sharding import MODELS, packs, subprocess_env

from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.cache.ray_data import RayError, fill_with_ray
from pytest_embeval.cli import embeval as cli

#: Seconds the process with the Ray cluster may take, start to shutdown.
RAY_TIMEOUT = 300
DRIVER = """\
import sys
import ray
from pytest_embeval.cli.embeval import main

ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
try:
    status = main(sys.argv[1:])
finally:
    ray.shutdown()
sys.exit(status)
"""


def test_ray_workers_fill_the_cache_with_the_packs_of_a_local_run(tmp_path: Path) -> None:
    pytest.importorskip("ray.data", reason="the [ray] extra")
    path = golden_files(tmp_path)
    on_ray, local = tmp_path / "on-ray", tmp_path / "local"
    models = [item for spec in MODELS for item in ("--model", spec)]
    command = [sys.executable, "-c", DRIVER, "embed", str(path), *models, "--block-rows=16", "--ray"]
    driver = subprocess.Popen(
        [*command, f"--cache-dir={on_ray}"],
        env={**subprocess_env(), "RAY_ADDRESS": "", "RAY_USAGE_STATS_ENABLED": "0"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = driver.communicate(timeout=RAY_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and the cluster it started
        driver.communicate()
        raise
    assert driver.returncode == 0, err[-3000:]
    lines = out.splitlines()
    assert "block 1/7 (#0, 16 document texts): 16 embedded, 0 read, " in "\n".join(lines)
    assert lines[-1].startswith(f"{MODELS[1]}: 108 texts embedded, 0 read, 0 of 7 blocks already cached")
    status = cli.main(["embed", str(path), *models, "--block-rows=16", f"--cache-dir={local}"])
    assert status == 0
    assert packs(on_ray) == packs(local)
    assert len([name for name in packs(local) if name.endswith(".pack")]) == 2 * 7


def test_without_ray_installed_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray: ImportError
    with pytest.raises(
        RayError, match=r"^embedding on Ray needs Ray Data: pip install 'pytest-embeval\[ray\]'$"
    ):
        fill_with_ray(MODELS[0], resolve_model(MODELS[0]), [], tmp_path)
    path = golden_files(tmp_path)
    status = cli.main(["embed", str(path), "--model", MODELS[0], "--ray", f"--cache-dir={tmp_path}"])
    assert status == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "embeval embed: error: embedding on Ray needs Ray Data: pip install 'pytest-embeval[ray]'"
    )
