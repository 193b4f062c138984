"""A calibration file uploaded to the app (``trainplan calibrate``'s TOML), merged over the catalog
with the code ``--calibration`` uses (``planner.catalog.calibration.apply_file``).

The bytes are parsed as sent (``parse_calibration``; messages name the upload), under the size
cap of an uploaded config.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from planner.catalog.calibration import (
    MACHINE_FIELDS,
    AppliedCalibration,
    CalibrationFile,
    apply_file,
    calibration_record,
    parse_calibration,
)
from planner.catalog.hardware import Catalog
from planner.catalog.models import MAX_CONFIG_BYTES
from ui.app_core import UploadTooLarge


@dataclass(frozen=True)
class CalibrationUpload:
    """An uploaded calibration file as sent (the cache key of the catalog it makes)."""

    name: str
    data: bytes

    @property
    def shown(self) -> str:
        """The name its messages give (no folders)."""
        return Path(self.name).name or "calibration.toml"


@dataclass(frozen=True)
class Calibrated:
    """The catalog with the file's rates and the record its plans keep (``applied``), and where
    they were measured (the plan card's line)."""

    applied: AppliedCalibration
    name: str
    machine: dict[str, str]  # planner.catalog.calibration.MACHINE_FIELDS
    gpus: tuple[str, ...]  # catalog ids the file measured

    @property
    def catalog(self) -> Catalog:
        return self.applied.catalog


def calibrated_from_upload(upload: CalibrationUpload, catalog: Catalog) -> Calibrated:
    """``catalog`` with the upload's measured rates; UploadTooLarge, or CatalogError (one line
    naming the upload), when the file is unusable."""
    shown = upload.shown
    if len(upload.data) > MAX_CONFIG_BYTES:
        raise UploadTooLarge(shown, len(upload.data), "a calibration file")
    read = parse_calibration(upload.data, shown)
    merged = apply_file(catalog, read, Path(shown))
    applied = AppliedCalibration(merged, calibration_record(catalog, read, upload.data, upload.name))
    gpus = tuple(g.gpu for g in applied.record.gpus)
    return Calibrated(applied, shown, read.machine or _job_machine(read), gpus)


def _job_machine(read: CalibrationFile) -> dict[str, str]:
    """What the card names for a file of measured jobs only (``calibrate --calibrate-from``)."""
    job = next(iter(read.jobs.values()))
    return dict.fromkeys(MACHINE_FIELDS, "-") | dict(host=f"job {job.name}", date=job.date)
