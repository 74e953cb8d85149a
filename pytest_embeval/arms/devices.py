"""Where an in-process model runs: the device a spec or ``--embeval-device`` asks for (``auto``, ``cpu``,
``cuda``, ``cuda:N``, ``mps``), checked against what torch sees, the batch size that suits it, the dtype it
computes in, and what the report records of it.

torch is imported only when the answer needs it: ``cpu`` never does, and ``auto`` does not on a machine with
no NVIDIA driver that is not an Apple-silicon Mac (it is the CPU there), so a cached run on a CPU machine
still never imports torch.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import os
import platform
import re
import sys
from typing import Any

__all__ = [
    "DEFAULT_DEVICE",
    "DEVICE_CHOICES",
    "DTYPES",
    "DeviceError",
    "DeviceRecord",
    "Placement",
    "default_batch_size",
    "device_record",
    "parse_device",
    "parse_dtype",
    "placement",
    "resolve_device",
]

DEFAULT_DEVICE = "auto"
DEVICE_CHOICES = "auto, cpu, cuda, cuda:N or mps"
_DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")
#: Half precisions a spec may ask for (``dtype=``); float32, the checkpoints' own, is the default.
DTYPES = ("float16", "bfloat16")
#: Texts per model call: today's CPU figure; a GPU is fed more at once (halved on out-of-memory).
_BATCH_SIZES = {"cpu": 64, "mps": 64, "cuda": 128}
#: Where the NVIDIA kernel driver says it is loaded: without it torch sees no CUDA device.
_NVIDIA_DRIVER = "/proc/driver/nvidia/version"


class DeviceError(ValueError):
    """A device that is not written as one, or that this machine does not have. One line."""


@dataclasses.dataclass(frozen=True, slots=True)
class DeviceRecord:
    """What the report says an arm ran on: the device, its name (a GPU's model), torch's and CUDA's
    versions (None: not installed, not used) and the dtype the model computes in."""

    device: str
    name: str | None
    torch: str | None
    cuda: str | None
    dtype: str

    def as_dict(self) -> dict[str, str | None]:
        return dataclasses.asdict(self)

    def header(self) -> str:
        """``cuda:0 (NVIDIA A100, float16)``, ``cpu``: the device as the header line shows it."""
        details = [part for part in (self.name, None if self.dtype == "float32" else self.dtype) if part]
        return f"{self.device} ({', '.join(details)})" if details else self.device


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    """How an in-process model runs: on ``device`` (resolved: ``cpu``, ``cuda:N``, ``mps``), in ``dtype``,
    ``batch_size`` texts a call (None: `default_batch_size` of the device)."""

    device: str = "cpu"
    dtype: str = "float32"
    batch_size: int | None = None

    @property
    def batch(self) -> int:
        return self.batch_size or default_batch_size(self.device)

    def record(self) -> DeviceRecord:
        return device_record(self.device, self.dtype)


def placement(
    device: str = DEFAULT_DEVICE, dtype: str | None = None, batch_size: int | None = None
) -> Placement:
    """The `Placement` a spec asks for, its device resolved (`resolve_device`; `DeviceError` if it does
    not exist)."""
    return Placement(device=resolve_device(device), dtype=dtype or "float32", batch_size=batch_size)


def parse_device(text: str, what: str = "device") -> str:
    """The device ``text`` names, lower-cased; `DeviceError` unless it is one of `DEVICE_CHOICES`."""
    device = text.strip().lower()
    if not _DEVICE.fullmatch(device):
        raise DeviceError(f"{what} must be {DEVICE_CHOICES}, got {text!r}")
    return device


def parse_dtype(text: str) -> str:
    if text not in DTYPES:
        raise DeviceError(f"dtype must be {' or '.join(DTYPES)}, got {text!r}")
    return text


def resolve_device(requested: str) -> str:
    """The device to load a model on: ``auto`` is CUDA if torch sees one, else MPS, else the CPU; an explicit
    device must exist (else `DeviceError`, saying what torch sees)."""
    device = parse_device(requested)
    if device == "cpu" or (device == "auto" and not _accelerator_possible()):
        return "cpu"
    torch = _torch()
    if device == "auto":
        if torch is not None and torch.cuda.is_available():
            return "cuda:0"
        if torch is not None and _mps_available(torch):
            return "mps"
        return "cpu"
    if torch is None:
        raise DeviceError(f"device {device!r} needs torch, which cannot be imported")
    if device == "mps":
        if not _mps_available(torch):
            raise DeviceError("device 'mps' does not exist: torch sees no Apple-silicon GPU (MPS)")
        return device
    if not torch.cuda.is_available():
        built = "torch sees no CUDA device" if torch.version.cuda else "this torch is built without CUDA"
        raise DeviceError(f"device {device!r} does not exist: {built} (torch {torch.__version__})")
    count = torch.cuda.device_count()
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        seen = ", ".join(f"cuda:{i}" for i in range(count))
        raise DeviceError(f"device {device!r} does not exist: torch sees {count} CUDA device(s) ({seen})")
    return f"cuda:{index}"


def default_batch_size(device: str) -> int:
    """Texts per model call on ``device`` (a resolved one) when the spec does not say."""
    return _BATCH_SIZES.get(device.partition(":")[0], _BATCH_SIZES["cpu"])


def device_record(device: str, dtype: str) -> DeviceRecord:
    """The report's record of a model on ``device`` (resolved) in ``dtype``; torch is not imported for it
    unless the device is a GPU (which imported it already)."""
    name: str | None = None
    cuda: str | None = None
    if device.startswith("cuda"):
        torch = _torch()
        if torch is not None:
            name = str(torch.cuda.get_device_name(device))
            cuda = torch.version.cuda
    return DeviceRecord(device=device, name=name, torch=_torch_version(), cuda=cuda, dtype=dtype)


# ------------------------------------------------------------------------------------------------ internals


def _accelerator_possible() -> bool:
    """Whether this machine could have a GPU torch can use: an NVIDIA driver, or an Apple-silicon Mac. When
    neither, ``auto`` is the CPU without importing torch (about a second)."""
    if "torch" in sys.modules:
        return True  # already paid for: ask it
    apple = sys.platform == "darwin" and platform.machine() == "arm64"
    return apple or os.path.exists(_NVIDIA_DRIVER)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _mps_available(torch: Any) -> bool:
    backend = getattr(getattr(torch, "backends", None), "mps", None)
    return bool(backend is not None and backend.is_available())


def _torch_version() -> str | None:
    torch = sys.modules.get("torch")
    if torch is not None:
        return str(torch.__version__)
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None
